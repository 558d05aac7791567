"""TrafficMap: how a multi-cluster InferenceService's traffic splits across clusters (alpha).

OME writes it; the routing controller owns spec, the publisher most of status.
"""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    AGE,
    UID,
    URL,
    CRDInfo,
    Int32,
    Int64,
    KubeObject,
    OMEModel,
    PrinterColumn,
    Quantity,
    Time,
    f,
)
from ome.api.v1beta1.common import Condition
from ome.api.v1beta1.placement import PlacementMode

CapacitySource = Literal["ControlPlane", "Endpoint"]
ProbeResult = Literal["Passing", "Failing", "Unknown"]
_SHA256 = r"^sha256:[0-9a-f]{64}$"


class TrafficMapProbe(OMEModel):
    policy_digest: str | None = f("policyDigest", pattern=_SHA256)
    result: ProbeResult | None = f("result")
    gated: bool | None = f("gated")
    last_probe_time: Time | None = f("lastProbeTime")
    consecutive_failures: Int32 | None = f("consecutiveFailures", minimum=0)
    message: str | None = f("message")


class TrafficMapCapacity(OMEModel):
    allocated: Int32 | None = f("allocated")
    ready: Int32 | None = f("ready")
    factor: Quantity | None = f("factor")
    source: CapacitySource | None = f("source", crd_default="ControlPlane")
    reported: Int32 | None = f("reported", minimum=0)
    fallback_reason: str | None = f("fallbackReason")


class TrafficMapEntry(OMEModel):
    cluster: str = f("cluster", required=True)
    endpoint: URL | None = f("endpoint")
    weight: Int32 | None = f("weight", minimum=0, maximum=1000000)
    healthy: bool | None = f("healthy")
    capacity: TrafficMapCapacity | None = f("capacity")
    probe: TrafficMapProbe | None = f("probe")
    drain_refs: list[str] | None = f("drainRefs", list_type="set")


class TrafficMapSpec(OMEModel):
    placement_plan_id: str | None = f("placementPlanID")
    service: str = f("service", required=True)
    mode: PlacementMode | None = f("mode")
    entries: list[TrafficMapEntry] | None = f("entries", list_type="map", list_map_keys=("cluster",))
    observed_isvc_generation: Int64 | None = f("observedISVCGeneration")


class TrafficMapGatewayRef(OMEModel):
    group: str | None = f("group")
    kind: str = f("kind", required=True)
    name: str = f("name", required=True)
    namespace: str | None = f("namespace")


class TrafficMapPublisherTarget(OMEModel):
    target: str = f("target", required=True, min_length=1, max_length=512)
    weight: Int64 = f("weight", required=True, minimum=0)


class TrafficMapPublisherLastPositive(OMEModel):
    traffic_map_generation: Int64 = f("trafficMapGeneration", required=True, minimum=1)
    observed_isvc_generation: Int64 = f("observedISVCGeneration", required=True, minimum=1)
    plan_compatibility_digest: str = f("planCompatibilityDigest", required=True, pattern=_SHA256)
    targets: list[TrafficMapPublisherTarget] = f(
        "targets", required=True, min_items=1, max_items=128, list_type="map", list_map_keys=("target",)
    )


class TrafficMapPublisherStatus(OMEModel):
    publisher_name: str = f("publisherName", required=True, min_length=1, max_length=128)
    claimed_targets: list[str] | None = f(
        "claimedTargets",
        list_type="set",
        min_items=1,
        max_items=128,
        items={"minLength": 1, "maxLength": 512},
    )
    observed_options_digest: str | None = f("observedOptionsDigest", pattern=_SHA256)
    last_positive: TrafficMapPublisherLastPositive | None = f("lastPositive")


class TrafficMapStatus(OMEModel):
    source_uid: UID | None = f("sourceUID")
    published: bool | None = f("published")
    gateway_ref: TrafficMapGatewayRef | None = f("gatewayRef")
    observed_traffic_map_generation: Int64 | None = f("observedTrafficMapGeneration")
    publisher: TrafficMapPublisherStatus | None = f("publisher")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))


class TrafficMap(KubeObject):
    crd = CRDInfo(
        kind="TrafficMap",
        plural="trafficmaps",
        singular="trafficmap",
        short_names=("tm", "tmap"),
        printer_columns=(
            PrinterColumn("Mode", "string", ".spec.mode"),
            PrinterColumn("Published", "string", '.status.conditions[?(@.type=="Published")].status'),
            PrinterColumn("Routable", "string", '.status.conditions[?(@.type=="Routable")].status'),
            PrinterColumn("Override", "string", '.status.conditions[?(@.type=="OverrideActive")].status'),
            PrinterColumn("Reason", "string", '.status.conditions[?(@.type=="Routable")].reason'),
            AGE,
        ),
    )

    spec: TrafficMapSpec | None = f("spec")
    status: TrafficMapStatus | None = f("status")
