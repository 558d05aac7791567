"""InferenceService components: engine, decoder and router, and their leader/worker pods.

Each component inlines a pod spec and the component extension (replicas, labels, PDB,
lifecycle, autoscaler); the runner is an inlined container. The same types are the
engineConfig, decoderConfig and routerConfig of a serving runtime.
"""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.autoscaler import AutoscalerPolicyRef, ComponentAutoscaler
from ome.api.v1beta1.base import DeploymentStrategyDict, Int64, IntOrString, OMEModel, StrMap, f
from ome.api.v1beta1.common import AcceleratorSelector
from ome.api.v1beta1.lifecycle import LifecycleSpec
from ome.api.v1beta1.podspec import PodSpecFields, RunnerSpec

TopologySpreadPolicy = Literal["Preferred", "Required"]


class ComponentExtensionSpec(OMEModel):
    """Deployment settings shared by every component."""

    min_replicas: int | None = f("minReplicas")
    max_replicas: int | None = f("maxReplicas")
    timeout_seconds: Int64 | None = f("timeoutSeconds")
    labels: StrMap | None = f("labels")
    annotations: StrMap | None = f("annotations")
    service_port_app_protocols: StrMap | None = f("servicePortAppProtocols")
    min_available: IntOrString | None = f("minAvailable")
    max_unavailable: IntOrString | None = f("maxUnavailable")
    deployment_strategy: DeploymentStrategyDict | None = f("deploymentStrategy")
    lifecycle: LifecycleSpec | None = f("lifecycle")
    autoscaler: ComponentAutoscaler | None = f("autoscaler")
    autoscaler_policy_ref: AutoscalerPolicyRef | None = f("autoscalerPolicyRef")

    def annotation(self, key: str) -> str | None:
        return (self.annotations or {}).get(key)


class LeaderSpec(PodSpecFields):
    """The leader pod of a multi-pod Instance."""

    runner: RunnerSpec | None = f("runner")


class WorkerSpec(PodSpecFields):
    """The worker pods of a multi-pod Instance; ``size`` pods per Instance."""

    size: int | None = f("size")
    runner: RunnerSpec | None = f("runner")


class _TopologyFields(OMEModel):
    topology_key: str | None = f("topologyKey")
    topology_spread: TopologySpreadPolicy | None = f("topologySpread")
    topology_spread_key: str | None = f("topologySpreadKey")
    accelerator_override: AcceleratorSelector | None = f("acceleratorOverride")


class EngineSpec(PodSpecFields, ComponentExtensionSpec, _TopologyFields):
    """The engine: runs the model, or the prefill side of a prefill-decode pair."""

    runner: RunnerSpec | None = f("runner")
    leader: LeaderSpec | None = f("leader")
    worker: WorkerSpec | None = f("worker")


class DecoderSpec(PodSpecFields, ComponentExtensionSpec, _TopologyFields):
    """The decoder: the decode side of a prefill-decode disaggregated service."""

    runner: RunnerSpec | None = f("runner")
    leader: LeaderSpec | None = f("leader")
    worker: WorkerSpec | None = f("worker")


class RouterSpec(PodSpecFields, ComponentExtensionSpec):
    """The router in front of the engine and decoder. It has no leader or worker."""

    runner: RunnerSpec | None = f("runner")
    config: StrMap | None = f("config")


AnyComponentSpec = EngineSpec | DecoderSpec | RouterSpec
