"""BaseModel and ClusterBaseModel: a model's weights, where they live, and what the model is."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    AGE,
    CRDInfo,
    Int32,
    Int64,
    KubeObject,
    NodeAffinityDict,
    OMEModel,
    PrinterColumn,
    RawExtension,
    StrMap,
    Time,
    f,
)
from ome.api.v1beta1.common import Condition

DownloadPolicy = Literal["AlwaysDownload", "ReuseIfExists"]
Distribution = Literal["PerNode", "Sharded"]
LifeCycleState = Literal["Creating", "Importing", "In_Transit", "In_Training", "Ready", "Failed"]


class ModelFormat(OMEModel):
    name: str = f("name", required=True)
    version: str | None = f("version")
    operator: str | None = f("operator", crd_default="Equal")
    weight: Int64 | None = f("weight", crd_default=1)


class ModelFrameworkSpec(OMEModel):
    name: str = f("name", required=True)
    version: str | None = f("version")
    operator: str | None = f("operator", crd_default="Equal")
    weight: Int64 | None = f("weight", crd_default=1)


class DiffusionComponentSpec(OMEModel):
    library: str | None = f("library")
    type: str | None = f("type")


class DiffusionPipelineSpec(OMEModel):
    class_name: str | None = f("className")
    scheduler: DiffusionComponentSpec | None = f("scheduler")
    text_encoder: DiffusionComponentSpec | None = f("textEncoder")
    tokenizer: DiffusionComponentSpec | None = f("tokenizer")
    transformer: DiffusionComponentSpec | None = f("transformer")
    vae: DiffusionComponentSpec | None = f("vae")
    additional_components: dict[str, DiffusionComponentSpec] | None = f(
        "additionalComponents", map_type="atomic"
    )


class StorageSpec(OMEModel):
    """Where weights (or a benchmark's dataset and results) live: hf://, oci://, pvc://, local://..."""

    path: str | None = f("path")
    schema_path: str | None = f("schemaPath")
    parameters: StrMap | None = f("parameters")
    key: str | None = f("key")
    storage_uri: str = f("storageUri", required=True)
    node_selector: StrMap | None = f("nodeSelector", map_type="atomic")
    node_affinity: NodeAffinityDict | None = f("nodeAffinity")
    download_policy: DownloadPolicy | None = f("downloadPolicy")


class ModelExtensionSpec(OMEModel):
    """Fields a BaseModel and a FineTunedWeight share (inlined in Go)."""

    display_name: str | None = f("displayName")
    version: str | None = f("version")
    disabled: bool | None = f("disabled")
    vendor: str | None = f("vendor")
    compartment_id: str | None = f("compartmentID")


class BaseModelSpec(ModelExtensionSpec):
    model_format: ModelFormat | None = f("modelFormat")
    model_type: str | None = f("modelType")
    model_framework: ModelFrameworkSpec | None = f("modelFramework")
    model_architecture: str | None = f("modelArchitecture")
    quantization: str | None = f("quantization")
    model_parameter_size: str | None = f("modelParameterSize")
    model_capabilities: list[str] | None = f("modelCapabilities", list_type="atomic")
    api_capabilities: list[str] | None = f("apiCapabilities", list_type="atomic")
    model_configuration: RawExtension | None = f("modelConfiguration")
    storage: StorageSpec = f("storage", required=True)
    distribution: Distribution | None = f("distribution")
    serving_mode: list[str] | None = f("servingMode", list_type="atomic")
    max_tokens: Int32 | None = f("maxTokens")
    diffusion_pipeline: DiffusionPipelineSpec | None = f("diffusionPipeline")
    additional_metadata: StrMap | None = f("additionalMetadata")


class ModelCacheStatus(OMEModel):
    backend: str | None = f("backend")
    source_uri: str | None = f("sourceUri")


class ModelStatusSpec(OMEModel):
    """Status of a BaseModel, ClusterBaseModel or FineTunedWeight."""

    lifecycle: str | None = f("lifecycle")
    state: LifeCycleState = f("state", required=True)
    observed_generation: Int64 | None = f("observedGeneration")
    last_reconcile_time: Time | None = f("lastReconcileTime")
    nodes_ready: list[str] | None = f("nodesReady", list_type="atomic")
    nodes_failed: list[str] | None = f("nodesFailed", list_type="atomic")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))
    cache: ModelCacheStatus | None = f("cache")


_MODEL_COLUMNS = (
    PrinterColumn("Disabled", "boolean", ".spec.disabled"),
    PrinterColumn("Version", "string", ".spec.version"),
    PrinterColumn("Vendor", "string", ".spec.vendor"),
    PrinterColumn("Framework", "string", ".spec.modelFramework.name"),
    PrinterColumn("FrameworkVersion", "string", ".spec.modelFramework.version"),
    PrinterColumn("ModelFormat", "string", ".spec.modelFormat.name"),
    PrinterColumn("Architecture", "string", ".spec.modelArchitecture"),
    PrinterColumn("Capabilities", "string", ".spec.modelCapabilities[*]"),
    PrinterColumn("Size", "string", ".spec.modelParameterSize"),
    PrinterColumn("CompartmentID", "string", ".spec.compartmentID"),
    PrinterColumn("Ready", "string", ".status.state"),
    AGE,
)


class BaseModel(KubeObject):
    """A model in one namespace."""

    crd = CRDInfo(kind="BaseModel", plural="basemodels", singular="basemodel", printer_columns=_MODEL_COLUMNS)

    spec: BaseModelSpec | None = f("spec")
    status: ModelStatusSpec | None = f("status")


class ClusterBaseModel(KubeObject):
    """A model for the whole cluster: a BaseModel's spec, cluster-scoped."""

    crd = CRDInfo(
        kind="ClusterBaseModel",
        plural="clusterbasemodels",
        singular="clusterbasemodel",
        scope="Cluster",
        printer_columns=_MODEL_COLUMNS,
    )

    spec: BaseModelSpec | None = f("spec")
    status: ModelStatusSpec | None = f("status")
