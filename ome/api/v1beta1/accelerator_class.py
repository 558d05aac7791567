"""AcceleratorClass: a kind of GPU or other accelerator, and how to find the nodes that have it."""

from __future__ import annotations

from ome.api.v1beta1.base import (
    AffinityDict,
    CRDInfo,
    Int32,
    Int64,
    KubeObject,
    OMEModel,
    PrinterColumn,
    Quantity,
    StrMap,
    Time,
    f,
)
from ome.api.v1beta1.common import Condition


class AcceleratorDiscovery(OMEModel):
    node_selector: StrMap | None = f("nodeSelector")
    affinity: AffinityDict | None = f("affinity")
    pci_vendor_id: str | None = f("pciVendorID")
    device_ids: list[str] | None = f("deviceIDs", list_type="atomic")


class AcceleratorLatency(OMEModel):
    average_millis: Int64 | None = f("averageMillis")
    maximum_millis: Int64 | None = f("maximumMillis")


class AcceleratorPerformance(OMEModel):
    fp32_tflops: Int64 | None = f("fp32Tflops")
    fp16_tflops: Int64 | None = f("fp16Tflops")
    int8_tops: Int64 | None = f("int8Tops")
    int4_tops: Int64 | None = f("int4Tops")
    latency: AcceleratorLatency | None = f("latency")


class AcceleratorCapabilities(OMEModel):
    memory_gb: Quantity | None = f("memoryGB")
    compute_capability: str | None = f("computeCapability")
    level_zero_version: str | None = f("levelZeroVersion")
    clock_speed_mhz: Int32 | None = f("clockSpeedMHz")
    memory_bandwidth_gbps: Quantity | None = f("memoryBandwidthGBps")
    features: list[str] | None = f("features", list_type="atomic")
    performance: AcceleratorPerformance | None = f("performance")


class AcceleratorResource(OMEModel):
    name: str = f("name", required=True)
    quantity: Quantity | None = f("quantity", crd_default="1")
    divisible: bool | None = f("divisible")


class AcceleratorIntegration(OMEModel):
    kueue_resource_flavor: str | None = f("kueueResourceFlavor")
    volcano_gpu_type: str | None = f("volcanoGPUType")


class AcceleratorCost(OMEModel):
    per_hour: Quantity | None = f("perHour")
    per_million_tokens: Quantity | None = f("perMillionTokens")
    spot_per_hour: Quantity | None = f("spotPerHour")
    tier: str | None = f("tier")


class AcceleratorClassSpec(OMEModel):
    vendor: str | None = f("vendor")
    family: str | None = f("family")
    model: str | None = f("model")
    discovery: AcceleratorDiscovery = f("discovery", required=True)
    capabilities: AcceleratorCapabilities = f("capabilities", required=True)
    resources: list[AcceleratorResource] | None = f("resources", list_type="atomic")
    integration: AcceleratorIntegration | None = f("integration")
    cost: AcceleratorCost | None = f("cost")


class AcceleratorClassStatus(OMEModel):
    nodes: list[str] | None = f("nodes", list_type="atomic")
    total_accelerators: Int32 | None = f("totalAccelerators")
    available_accelerators: Int32 | None = f("availableAccelerators")
    last_updated: Time | None = f("lastUpdated", nullable=True)
    conditions: list[Condition] | None = f("conditions", list_type="atomic")
    available_nodes: Int32 | None = f("availableNodes")


class AcceleratorClass(KubeObject):
    crd = CRDInfo(
        kind="AcceleratorClass",
        plural="acceleratorclasses",
        singular="acceleratorclass",
        scope="Cluster",
        printer_columns=(
            PrinterColumn("Vendor", "string", ".spec.vendor"),
            PrinterColumn("Family", "string", ".spec.family"),
            PrinterColumn("Memory", "string", ".spec.capabilities.memoryGB"),
            PrinterColumn("Nodes", "integer", ".status.availableNodes"),
        ),
        required=("spec",),
    )

    spec: AcceleratorClassSpec | None = f("spec")
    status: AcceleratorClassStatus | None = f("status")
