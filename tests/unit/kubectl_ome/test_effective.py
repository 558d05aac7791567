"""runtime effective: each component's mode and the rule that set it."""

from __future__ import annotations

from typing import Any

from ome.kubectl_ome.effective import (
    RuntimeRead,
    component_modes,
    effective_document,
    effective_rows,
    format_effective,
    pin_mode,
    status_freshness,
)

Obj = dict[str, Any]


def isvc(
    spec: Obj, annotations: dict[str, str] | None = None, generation: int = 1, observed: int | None = 1
) -> Obj:
    status = {"observedGeneration": observed} if observed is not None else {}
    meta: Obj = {"name": "chat", "namespace": "prod", "generation": generation}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec, "status": status}


RUNTIME: Obj = {"metadata": {"name": "vllm"}, "spec": {"engineConfig": {}}}


def modes_of(obj: Obj, runtime: Obj | None = None) -> list[str]:
    return [f"{m.component}={m}" for m in component_modes(obj, runtime)]


def test_default_spec_annotation_and_leader_worker_rules() -> None:
    assert modes_of(isvc({"engine": {}})) == ["engine=RawDeployment (Default)"]
    assert modes_of(isvc({"engine": {}, "deploymentMode": "OMENative"})) == ["engine=OMENative (ServiceSpec)"]
    assert modes_of(isvc({"engine": {"worker": {"size": 1}}, "router": {"worker": {}}})) == [
        "engine=OMENative (LeaderWorkerShape)",
        "router=RawDeployment (Default)",
    ]
    annotated = {"spec": {"decoderConfig": {"annotations": {"ome.io/deploymentMode": "MultiNode"}}}}
    assert modes_of(isvc({"engine": {}, "decoder": {}}), annotated) == [
        "engine=RawDeployment (Default)",
        "decoder=MultiNode (ComponentAnnotation)",
    ]


def test_virtual_deployment_applies_to_every_component() -> None:
    obj = isvc({"engine": {}}, annotations={"ome.io/deploymentMode": "VirtualDeployment"})
    assert modes_of(obj) == ["engine=VirtualDeployment (ServiceAnnotation)"]


def test_freshness_and_pin() -> None:
    assert status_freshness(isvc({}, observed=None)) == "Unobserved"
    assert status_freshness(isvc({}, generation=2, observed=1)) == "Stale"
    assert status_freshness(isvc({}, generation=1, observed=2)) == "Invalid"
    assert pin_mode(isvc({"runtime": {"name": "x"}})) == "AutoSync"
    assert pin_mode(isvc({"runtime": {"name": "x", "autoSync": False}})) == "ManagedPin"
    assert pin_mode(isvc({"runtime": {"name": "x", "autoSync": False, "revision": "r"}})) == "ExplicitPin"


def test_effective_table() -> None:
    runtime = RuntimeRead("CSR/vllm", RUNTIME)
    out = format_effective(effective_rows(isvc({"engine": {}, "runtime": {"name": "vllm"}}), runtime))
    assert out == (
        "SCOPE     FIELD       VALUE\n"
        "Live      STATE       Available\n"
        "Live      RUNTIME     CSR/vllm\n"
        "Live      ENGINE      RawDeployment (Default)\n"
        "Service   SELECTION   Explicit\n"
        "Service   PIN         AutoSync\n"
        "Service   STATUS      Current\n"
    )


def test_unavailable_runtime_still_shows_modes_and_an_issue() -> None:
    rows = effective_rows(isvc({"engine": {}}, observed=None), RuntimeRead("CSR/gone", None, "NotFound"))
    assert ("Live", "REASON", "NotFound") in rows
    assert ("Live", "ENGINE", "RawDeployment (Default)") in rows
    assert ("Service", "ISSUE", "LiveRuntimeUnavailable") in rows
    assert ("Service", "ISSUE", "StatusUnobserved") in rows
    doc = effective_document(isvc({"engine": {}}), RuntimeRead(None, None, "NotConfigured"))
    assert doc["content"]["live"]["components"] == [
        {"component": "engine", "mode": "RawDeployment", "source": "Default"}
    ]
