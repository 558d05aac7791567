"""`kubectl ome get` columns per resource (pure). Each kind has its default columns and the Wide ones
`-o wide` appends after AGE; a text cell is `-` when its field is unset. The RolloutPolicy,
AutoscalerPolicy and TrafficMap tables hide stale values: a condition from an older generation shows as
`Unknown` and its reason as `-`, and the policies' digest and counts as `-` until the status is current.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.kubectl_ome.output import dash

Obj = dict[str, Any]
Cols = list[tuple[str, str]]

UNKNOWN: Final = "Unknown"


def _cond(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == type_:
            return c
    return None


def _generation(obj: Mapping[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("generation") or 0)


def freshness(observed: object, generation: int) -> str:
    if not isinstance(observed, int) or observed <= 0:
        return "Unobserved"
    return "Current" if observed >= generation else "Stale"


def status_of(obj: Mapping[str, Any], type_: str) -> str:
    c = _cond(obj, type_)
    return str(c.get("status")) if c else UNKNOWN


def _current_cond(obj: Mapping[str, Any], type_: str) -> tuple[str, str]:
    """(status, reason) of a condition written for the current generation, else (Unknown, -)."""
    c = _cond(obj, type_)
    if c is None or (
        isinstance(c.get("observedGeneration"), int) and c["observedGeneration"] < _generation(obj)
    ):
        return UNKNOWN, "-"
    return str(c.get("status")), dash(c.get("reason"))


def inferenceservice(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        ("MODEL", dash((spec.get("model") or {}).get("name"))),
        ("RUNTIME", dash((spec.get("runtime") or {}).get("name"))),
        ("READY", status_of(obj, "Ready")),
        ("URL", dash(status.get("url"))),
    ], []


def _lifecycle(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    stalled, ready = _cond(obj, "RolloutStalled"), _cond(obj, "Ready")
    if stalled is not None and stalled.get("status") == "True":
        return stalled
    return ready or stalled


def inferencereplica(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    lifecycle = _lifecycle(obj)
    shown = f"{lifecycle.get('type')}={lifecycle.get('status')}" if lifecycle else "Unavailable"
    return [
        ("COMPONENT", dash(spec.get("component"))),
        ("PARENT", dash((spec.get("parentRef") or {}).get("name"))),
        ("DESIRED", dash(spec.get("replicas"))),
        ("CURRENT", str(status.get("replicas", 0))),
        ("READY", str(status.get("readyReplicas", 0))),
        ("LIFECYCLE", shown),
    ], [
        ("AVAILABLE", str(status.get("availableReplicas", 0))),
        ("REASON", dash((lifecycle or {}).get("reason"))),
        ("SERVING", str(status.get("servingReplicas", 0))),
        ("UPDATED", str(status.get("updatedReplicas", 0))),
        ("ENCODING", str(status.get("instanceStatusEncoding") or "DenseV1")),
        ("CURRENT-REVISION", dash(status.get("currentRevision"))),
        ("UPDATE-REVISION", dash(status.get("updateRevision"))),
        ("MIGRATIONS", str(len(status.get("migrations") or []))),
        ("PAUSED", str(bool(spec.get("paused"))).lower()),
        ("COORDINATION", dash(status.get("coordinationGroupRef"))),
        (
            "LIFECYCLE-FRESHNESS",
            freshness(lifecycle.get("observedGeneration"), _generation(obj)) if lifecycle else "Unavailable",
        ),
    ]


def model(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        ("ARCH", dash(spec.get("modelArchitecture"))),
        ("PARAMS", dash(spec.get("modelParameterSize"))),
        ("FORMAT", dash((spec.get("modelFormat") or {}).get("name"))),
        ("STATE", dash(status.get("state"))),
    ], []


def runtime(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec = obj.get("spec") or {}
    formats = [
        str((f.get("modelFormat") or {}).get("name") or f.get("name"))
        for f in spec.get("supportedModelFormats") or []
        if isinstance(f, Mapping)
    ]
    shown = ",".join(formats[:3]) + (f",+{len(formats) - 3}" if len(formats) > 3 else "")
    return [("DISABLED", str(spec.get("disabled") is True).lower()), ("FORMATS", dash(shown))], []


def finetunedweight(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec = obj.get("spec") or {}
    return [
        ("TYPE", dash(spec.get("modelType"))),
        ("BASEMODEL", dash((spec.get("baseModelRef") or {}).get("name"))),
    ], []


def acceleratorclass(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec = obj.get("spec") or {}
    return [("VENDOR", dash(spec.get("vendor"))), ("FAMILY", dash(spec.get("family")))], []


def benchmarkjob(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    return [("STATE", dash((obj.get("status") or {}).get("state")))], []


def _policy_current(obj: Mapping[str, Any]) -> bool:
    return freshness((obj.get("status") or {}).get("observedGeneration"), _generation(obj)) == "Current"


def rolloutpolicy(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    progression = next((k for k in ("canary", "blueGreen", "rollingUpdate") if spec.get(k) is not None), None)
    current = _policy_current(obj)
    ready, reason = _current_cond(obj, "Ready")
    in_use, _ = _current_cond(obj, "InUse")
    return [
        ("PROGRESSION", dash(progression)),
        ("READY", ready),
        ("DIGEST", dash(status.get("portableDigest")) if current else "-"),
        ("REFS", dash(status.get("attachedGroups")) if current else "-"),
    ], [
        ("REASON", reason),
        ("IN-USE", in_use),
        ("STATUS-FRESHNESS", freshness(status.get("observedGeneration"), _generation(obj))),
    ]


def autoscalerpolicy(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    current = _policy_current(obj)
    ready, reason = _current_cond(obj, "Ready")
    in_use, _ = _current_cond(obj, "InUse")
    return [
        ("CLASS", dash(spec.get("class"))),
        ("READY", ready),
        ("ATTACHED", dash(status.get("attachedComponents")) if current else "-"),
    ], [
        ("DIGEST", dash(status.get("portableDigest")) if current else "-"),
        ("REASON", reason),
        ("IN-USE", in_use),
        ("STATUS-FRESHNESS", freshness(status.get("observedGeneration"), _generation(obj))),
    ]


def workloadcluster(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    source = ((obj.get("spec") or {}).get("clusterSource")) or {}
    kube, profile = source.get("kubeConfig"), source.get("clusterProfileRef")
    if kube:
        ref = kube.get("secretRef") or {}
        reference = f"{ref['namespace']}/{ref.get('name')}" if ref.get("namespace") else dash(ref.get("name"))
        connection, key = "KubeConfig", str(kube.get("key") or "kubeconfig")
    elif profile:
        connection, reference, key = "ClusterProfile", dash(profile.get("name")), "-"
    else:
        connection, reference, key = "-", "-", "-"
    ready = _cond(obj, "Ready")
    return [
        ("CONNECTION", connection),
        ("REFERENCE", reference),
        ("KEY", key),
        ("READY", str(ready.get("status")) if ready else UNKNOWN),
        ("GENERATION", str(_generation(obj))),
        ("OBSERVED-GENERATION", dash((ready or {}).get("observedGeneration"))),
    ], [("REASON", dash((ready or {}).get("reason")))]


def trafficmap(obj: Mapping[str, Any]) -> tuple[Cols, Cols]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    entries = [e for e in spec.get("entries") or [] if isinstance(e, Mapping)]
    routable, reason = _current_cond(obj, "Routable")
    published, _ = _current_cond(obj, "Published")
    override, override_reason = _current_cond(obj, "OverrideActive")
    gateway = status.get("gatewayRef") or {}
    group, ns = gateway.get("group") or "", gateway.get("namespace") or ""
    gateway_text = f"{group}/{gateway.get('kind')}:{ns}/{gateway.get('name')}" if gateway else "-"
    return [
        ("MODE", dash(spec.get("mode"))),
        ("TARGETS", str(len(entries))),
        ("ROUTABLE", routable),
        ("PUBLISHED", published),
    ], [
        ("SERVICE", dash(spec.get("service"))),
        ("ACTIVE", str(sum(1 for e in entries if (e.get("weight") or 0) > 0))),
        ("HEALTHY", str(sum(1 for e in entries if e.get("healthy") is True))),
        ("OVERRIDE", override),
        ("OVERRIDE-REASON", override_reason),
        ("REASON", reason),
        ("GATEWAY", gateway_text),
        ("PUBLISHER-FRESHNESS", freshness(status.get("observedTrafficMapGeneration"), _generation(obj))),
    ]


def acceleratorquota_rows(obj: Mapping[str, Any]) -> list[tuple[Cols, Cols]]:
    """One row per budget: the reported ones, plus the declared ones when the status is not current or
    reports no budgets; one Unavailable row when the quota has neither."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    fresh = freshness(status.get("observedGeneration"), _generation(obj))
    common = [
        ("ROLE", dash(spec.get("role"))),
        ("PARENT", dash((spec.get("parentRef") or {}).get("name"))),
    ]
    tail = [
        ("STATUS-FRESHNESS", fresh),
        ("READY", status_of(obj, "Ready")),
        ("DEGRADED", status_of(obj, "Degraded")),
    ]
    rows: list[tuple[Cols, Cols]] = []
    def budget(b: Mapping[str, Any]) -> Cols:
        return [("RESOURCE", dash(b.get("resourceName"))), ("FLAVOR", dash(b.get("resourceFlavor"))),
                ("NOMINAL", dash(b.get("nominal")))]  # fmt: skip

    reported = [b for b in status.get("budgets") or [] if isinstance(b, Mapping)]
    for b in reported:
        rows.append((
            [*common, *budget(b), ("ADMITTED", dash(b.get("admitted"))), ("SOURCE", "Reported"), *tail],
            [("BORROWED", dash(b.get("borrowed"))), ("RESERVED", dash(b.get("reserved")))],
        ))  # fmt: skip
    if fresh != "Current" or not reported:
        for b in spec.get("budgets") or []:
            rows.append((
                [*common, *budget(b), ("ADMITTED", "-"), ("SOURCE", "Declared"), *tail],
                [("BORROWED", "-"), ("RESERVED", "-")],
            ))  # fmt: skip
    if not rows:
        rows.append((
            [*common, ("RESOURCE", "-"), ("FLAVOR", "-"), ("NOMINAL", "-"), ("ADMITTED", "-"),
             ("SOURCE", "Unavailable"), *tail],
            [("BORROWED", "-"), ("RESERVED", "-")],
        ))  # fmt: skip
    return rows


COLUMNS: Final = {
    "inferenceservices": inferenceservice,
    "inferencereplicas": inferencereplica,
    "models": model,
    "basemodels": model,
    "clusterbasemodels": model,
    "runtimes": runtime,
    "servingruntimes": runtime,
    "clusterservingruntimes": runtime,
    "finetunedweights": finetunedweight,
    "acceleratorclasses": acceleratorclass,
    "benchmarkjobs": benchmarkjob,
    "rolloutpolicies": rolloutpolicy,
    "autoscalerpolicies": autoscalerpolicy,
    "workloadclusters": workloadcluster,
    "trafficmaps": trafficmap,
}


def rows_of(kind: str, obj: Mapping[str, Any]) -> list[tuple[Cols, Cols]]:
    if kind == "acceleratorquotas":
        return acceleratorquota_rows(obj)
    return [COLUMNS[kind](obj)]
