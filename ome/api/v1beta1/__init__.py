"""The ome.io/v1beta1 API as pydantic models.

``KINDS`` lists every top-level kind; :func:`parse_object` turns a manifest dict into the
matching model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ome.api.v1beta1.accelerator_class import AcceleratorClass, AcceleratorClassSpec, AcceleratorClassStatus
from ome.api.v1beta1.accelerator_quota import AcceleratorQuota, AcceleratorQuotaSpec, AcceleratorQuotaStatus
from ome.api.v1beta1.autoscaler import ComponentAutoscaler, ScalingPolicy
from ome.api.v1beta1.autoscaler_policy import AutoscalerPolicy, AutoscalerPolicySpec
from ome.api.v1beta1.base import API_VERSION, GROUP, VERSION, CRDInfo, KubeObject, OMEModel
from ome.api.v1beta1.base_model import (
    BaseModel,
    BaseModelSpec,
    ClusterBaseModel,
    ModelStatusSpec,
    StorageSpec,
)
from ome.api.v1beta1.benchmark_job import BenchmarkJob, BenchmarkJobSpec, BenchmarkJobStatus
from ome.api.v1beta1.common import Condition, KnativeCondition, ModelRef, ServingRuntimeRef
from ome.api.v1beta1.component import (
    ComponentExtensionSpec,
    DecoderSpec,
    EngineSpec,
    LeaderSpec,
    RouterSpec,
    WorkerSpec,
)
from ome.api.v1beta1.fine_tuned_weight import FineTunedWeight, FineTunedWeightSpec
from ome.api.v1beta1.inference_replica import (
    InferenceReplica,
    InferenceReplicaSpec,
    InferenceReplicaStatus,
    InstanceStatusColumns,
    Runner,
)
from ome.api.v1beta1.inference_service import (
    ComponentStatusSpec,
    InferenceService,
    InferenceServiceSpec,
    InferenceServiceStatus,
    ModelStatus,
    ReplicaRefs,
)
from ome.api.v1beta1.lifecycle import LifecycleSpec, LifecycleStatus, OMENativeInstanceStatus
from ome.api.v1beta1.podspec import PodSpecFields, RunnerSpec
from ome.api.v1beta1.rollout import RolloutGroup, RolloutSpec
from ome.api.v1beta1.rollout_policy import RolloutPolicy, RolloutPolicySpec
from ome.api.v1beta1.serving_runtime import (
    ClusterServingRuntime,
    ServingRuntime,
    ServingRuntimeSpec,
    SupportedModelFormat,
)
from ome.api.v1beta1.traffic_map import TrafficMap, TrafficMapSpec, TrafficMapStatus
from ome.api.v1beta1.workload_cluster import WorkloadCluster, WorkloadClusterSpec

KINDS: tuple[type[KubeObject], ...] = (
    InferenceService,
    InferenceReplica,
    ServingRuntime,
    ClusterServingRuntime,
    BaseModel,
    ClusterBaseModel,
    FineTunedWeight,
    AcceleratorClass,
    BenchmarkJob,
    AutoscalerPolicy,
    RolloutPolicy,
    AcceleratorQuota,
    WorkloadCluster,
    TrafficMap,
)

KIND_BY_NAME: dict[str, type[KubeObject]] = {cls.crd.kind: cls for cls in KINDS}


def parse_object(data: Mapping[str, Any]) -> KubeObject:
    """Validate a manifest (``apiVersion: ome.io/v1beta1``) into the model of its kind."""
    if data.get("apiVersion") != API_VERSION:
        raise ValueError(f"apiVersion {data.get('apiVersion')!r} is not {API_VERSION}")
    kind = data.get("kind")
    cls = KIND_BY_NAME.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown ome.io kind {kind!r}")
    return cls.model_validate(data)


__all__ = [
    "API_VERSION",
    "GROUP",
    "KINDS",
    "KIND_BY_NAME",
    "VERSION",
    "AcceleratorClass",
    "AcceleratorClassSpec",
    "AcceleratorClassStatus",
    "AcceleratorQuota",
    "AcceleratorQuotaSpec",
    "AcceleratorQuotaStatus",
    "AutoscalerPolicy",
    "AutoscalerPolicySpec",
    "BaseModel",
    "BaseModelSpec",
    "BenchmarkJob",
    "BenchmarkJobSpec",
    "BenchmarkJobStatus",
    "CRDInfo",
    "ClusterBaseModel",
    "ClusterServingRuntime",
    "ComponentAutoscaler",
    "ComponentExtensionSpec",
    "ComponentStatusSpec",
    "Condition",
    "DecoderSpec",
    "EngineSpec",
    "FineTunedWeight",
    "FineTunedWeightSpec",
    "InferenceReplica",
    "InferenceReplicaSpec",
    "InferenceReplicaStatus",
    "InferenceService",
    "InferenceServiceSpec",
    "InferenceServiceStatus",
    "InstanceStatusColumns",
    "KnativeCondition",
    "KubeObject",
    "LeaderSpec",
    "LifecycleSpec",
    "LifecycleStatus",
    "ModelRef",
    "ModelStatus",
    "ModelStatusSpec",
    "OMEModel",
    "OMENativeInstanceStatus",
    "PodSpecFields",
    "ReplicaRefs",
    "RolloutGroup",
    "RolloutPolicy",
    "RolloutPolicySpec",
    "RolloutSpec",
    "RouterSpec",
    "Runner",
    "RunnerSpec",
    "ScalingPolicy",
    "ServingRuntime",
    "ServingRuntimeRef",
    "ServingRuntimeSpec",
    "StorageSpec",
    "SupportedModelFormat",
    "TrafficMap",
    "TrafficMapSpec",
    "TrafficMapStatus",
    "WorkerSpec",
    "WorkloadCluster",
    "WorkloadClusterSpec",
    "parse_object",
]
