"""ServingRuntime and ClusterServingRuntime: how to serve a family of models."""

from __future__ import annotations

from ome.api.v1beta1.autoscaler import ScalingPolicy
from ome.api.v1beta1.base import (
    AGE,
    AffinityDict,
    ContainerDict,
    CRDInfo,
    Int32,
    Int64,
    KubeObject,
    LocalObjectReferenceDict,
    OMEModel,
    PrinterColumn,
    StrMap,
    TolerationDict,
    VolumeDict,
    f,
)
from ome.api.v1beta1.base_model import DiffusionPipelineSpec, ModelFormat, ModelFrameworkSpec
from ome.api.v1beta1.common import Condition
from ome.api.v1beta1.component import DecoderSpec, EngineSpec, RouterSpec


class TensorParallelismConfig(OMEModel):
    tensor_parallel_size: Int64 | None = f("tensorParallelSize", minimum=0)
    pipeline_parallel_size: Int64 | None = f("pipelineParallelSize", minimum=0)
    data_parallel_size: Int64 | None = f("dataParallelSize", minimum=0)


class AcceleratorModelConfig(OMEModel):
    min_memory_per_billion_params: Int64 | None = f("minMemoryPerBillionParams", minimum=0)
    tensor_parallelism_override: TensorParallelismConfig | None = f("tensorParallelismOverride")
    runtime_args_override: list[str] | None = f("runtimeArgsOverride", list_type="atomic")
    environment_override: StrMap | None = f("environmentOverride")


class SupportedModelFormat(OMEModel):
    name: str | None = f("name")
    model_format: ModelFormat = f("modelFormat", required=True)
    model_type: str | None = f("modelType")
    version: str | None = f("version")
    model_framework: ModelFrameworkSpec = f("modelFramework", required=True)
    model_architecture: str | None = f("modelArchitecture")
    quantization: str | None = f("quantization")
    diffusion_pipeline: DiffusionPipelineSpec | None = f("diffusionPipeline")
    model_cache_providers: list[str] | None = f("modelCacheProviders", list_type="atomic")
    auto_select: bool | None = f("autoSelect")
    priority: Int32 | None = f("priority", minimum=1)
    accelerator_config: dict[str, AcceleratorModelConfig] | None = f("acceleratorConfig")


class ModelSizeRangeSpec(OMEModel):
    min: str | None = f("min")
    max: str | None = f("max")


class AcceleratorRequirements(OMEModel):
    accelerator_classes: list[str] | None = f("acceleratorClasses", list_type="atomic")
    min_memory: Int64 | None = f("minMemory", minimum=0)
    min_compute_performance_tflops: Int64 | None = f("minComputePerformanceTFLOPS", minimum=0)
    min_architecture_version: str | None = f("minArchitectureVersion")
    required_features: list[str] | None = f("requiredFeatures", list_type="atomic")
    preferred_precisions: list[str] | None = f("preferredPrecisions", list_type="atomic")


class ServingRuntimePodSpec(OMEModel):
    """The runtime's legacy pod fields (inlined in the spec)."""

    containers: list[ContainerDict] | None = f("containers", list_type="map", list_map_keys=("name",))
    volumes: list[VolumeDict] | None = f("volumes", list_type="map", list_map_keys=("name",))
    node_selector: StrMap | None = f("nodeSelector")
    affinity: AffinityDict | None = f("affinity")
    tolerations: list[TolerationDict] | None = f("tolerations", list_type="atomic")
    labels: StrMap | None = f("labels")
    annotations: StrMap | None = f("annotations")
    image_pull_secrets: list[LocalObjectReferenceDict] | None = f(
        "imagePullSecrets", list_type="map", list_map_keys=("name",)
    )
    scheduler_name: str | None = f("schedulerName")
    host_ipc: bool | None = f("hostIPC")
    dns_policy: str | None = f("dnsPolicy")
    host_network: bool | None = f("hostNetwork")


class ServingRuntimeSpec(ServingRuntimePodSpec):
    supported_model_formats: list[SupportedModelFormat] | None = f(
        "supportedModelFormats", list_type="atomic"
    )
    model_size_range: ModelSizeRangeSpec | None = f("modelSizeRange")
    disabled: bool | None = f("disabled")
    router_config: RouterSpec | None = f("routerConfig")
    engine_config: EngineSpec | None = f("engineConfig")
    decoder_config: DecoderSpec | None = f("decoderConfig")
    protocol_versions: list[str] | None = f("protocolVersions", list_type="atomic")
    scaling_policy: ScalingPolicy | None = f("scalingPolicy")
    accelerator_requirements: AcceleratorRequirements | None = f("acceleratorRequirements")

    def is_disabled(self) -> bool:
        return bool(self.disabled)


class ServingRuntimeStatus(OMEModel):
    inheritance_chain: list[str] | None = f("inheritanceChain", list_type="atomic")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))


_RUNTIME_COLUMNS = (
    PrinterColumn("Disabled", "boolean", ".spec.disabled"),
    PrinterColumn("ModelFormat", "string", ".spec.supportedModelFormats[*].modelFormat.name"),
    PrinterColumn("ModelFramework", "string", ".spec.supportedModelFormats[*].modelFramework.name"),
    PrinterColumn("ModelFrameworkVersion", "string", ".spec.supportedModelFormats[*].modelFramework.version"),
    PrinterColumn("ModelArchitecture", "string", ".spec.supportedModelFormats[*].modelArchitecture"),
    PrinterColumn("ModelSizeMin", "string", ".spec.modelSizeRange.min"),
    PrinterColumn("ModelSizeMax", "string", ".spec.modelSizeRange.max"),
    PrinterColumn("Images", "string", ".spec.containers[*].image"),
    AGE,
)


class ServingRuntime(KubeObject):
    crd = CRDInfo(
        kind="ServingRuntime",
        plural="servingruntimes",
        singular="servingruntime",
        printer_columns=_RUNTIME_COLUMNS,
    )

    spec: ServingRuntimeSpec | None = f("spec")
    status: ServingRuntimeStatus | None = f("status")


class ClusterServingRuntime(KubeObject):
    crd = CRDInfo(
        kind="ClusterServingRuntime",
        plural="clusterservingruntimes",
        singular="clusterservingruntime",
        scope="Cluster",
        printer_columns=_RUNTIME_COLUMNS,
    )

    spec: ServingRuntimeSpec | None = f("spec")
    status: ServingRuntimeStatus | None = f("status")
