"""The ome.io/v1beta1 resources, registered with the framework's registry (so `resource_for` knows them).

The framework declares the built-in kinds and knows nothing of OME's; this module adds OME's. It also
re-exports the built-in kinds and the registry, so code that names kinds of both reads them from here.
"""

from __future__ import annotations

from typing import Final

# The built-in kinds and the registry, re-exported.
from ome.framework.resources import *  # noqa: F403
from ome.framework.resources import Resource, register

OME_GROUP: Final = "ome.io"
_STATUS: Final = frozenset({"status"})
_STATUS_SCALE: Final = frozenset({"status", "scale"})


def _ome(kind: str, plural: str, namespaced: bool, sub: frozenset[str] = _STATUS) -> Resource:
    return register(Resource(OME_GROUP, "v1beta1", kind, plural, namespaced, sub))


INFERENCE_SERVICES: Final = _ome("InferenceService", "inferenceservices", True)
INFERENCE_REPLICAS: Final = _ome("InferenceReplica", "inferencereplicas", True, _STATUS_SCALE)
SERVING_RUNTIMES: Final = _ome("ServingRuntime", "servingruntimes", True)
CLUSTER_SERVING_RUNTIMES: Final = _ome("ClusterServingRuntime", "clusterservingruntimes", False)
BASE_MODELS: Final = _ome("BaseModel", "basemodels", True)
CLUSTER_BASE_MODELS: Final = _ome("ClusterBaseModel", "clusterbasemodels", False)
FINE_TUNED_WEIGHTS: Final = _ome("FineTunedWeight", "finetunedweights", False)
ACCELERATOR_CLASSES: Final = _ome("AcceleratorClass", "acceleratorclasses", False)
BENCHMARK_JOBS: Final = _ome("BenchmarkJob", "benchmarkjobs", True)
AUTOSCALER_POLICIES: Final = _ome("AutoscalerPolicy", "autoscalerpolicies", True)
ROLLOUT_POLICIES: Final = _ome("RolloutPolicy", "rolloutpolicies", True)
ACCELERATOR_QUOTAS: Final = _ome("AcceleratorQuota", "acceleratorquotas", False)
WORKLOAD_CLUSTERS: Final = _ome("WorkloadCluster", "workloadclusters", False)
TRAFFIC_MAPS: Final = _ome("TrafficMap", "trafficmaps", True)
