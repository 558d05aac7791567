"""runtime effective: the Live and Active views, the pin, sync, drift and live relation (docs' example)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

from ome.api.resources import CLUSTER_SERVING_RUNTIMES, CONTROLLER_REVISIONS, INFERENCE_SERVICES
from ome.kubectl_ome import cmd_runtime
from ome.kubectl_ome.effective import (
    RuntimeRead,
    build,
    component_modes,
    effective_rows,
    identity_cell,
    issue_cell,
    pin_mode,
    runtime_cell,
    status_freshness,
)
from ome.resolution import runtime_revisions as rr
from ome.resolution.runtime_inheritance import merged_spec
from tests.unit.kubectl_ome.fakes import FakeClient, make_ctx

GOLDEN = Path(__file__).parent / "golden"
Obj = dict[str, Any]


def isvc(
    spec: Obj, annotations: dict[str, str] | None = None, generation: int = 1, observed: int | None = 1
) -> Obj:
    status = {"observedGeneration": observed} if observed is not None else {}
    meta: Obj = {"name": "chat", "namespace": "prod", "generation": generation}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec, "status": status}


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
    virtual = isvc({"engine": {}}, annotations={"ome.io/deploymentMode": "VirtualDeployment"})
    assert modes_of(virtual) == ["engine=VirtualDeployment (ServiceAnnotation)"]


def test_freshness_and_pin() -> None:
    assert status_freshness(isvc({}, observed=None)) == "Unobserved"
    assert status_freshness(isvc({}, generation=2, observed=1)) == "Stale"
    assert status_freshness(isvc({}, generation=1, observed=2)) == "Invalid"
    assert pin_mode(isvc({"runtime": {"name": "x"}})) == "AutoSync"
    assert pin_mode(isvc({"runtime": {"name": "x", "autoSync": False}})) == "ManagedPin"
    assert pin_mode(isvc({"runtime": {"name": "x", "autoSync": False, "revision": "r"}})) == "ExplicitPin"
    assert pin_mode(isvc({"runtime": {"name": "x", "autoSync": False, "kind": "Other"}})) == "InvalidPin"


BASE_SPEC: Obj = {"containers": [{"name": "ome-container", "image": "vllm:0.9"}], "engineConfig": {}}
LLAMA_SPEC: Obj = {"containers": [{"name": "ome-container", "image": "vllm:0.10"}]}


def llama_chat(**status: Any) -> Obj:
    return {"metadata": {"name": "llama-chat", "namespace": "team-a", "generation": 3},
            "spec": {"runtime": {"name": "vllm-llama", "autoSync": False}, "engine": {}},
            "status": {"observedGeneration": 3, **status}}


def docs_cluster(pinned_spec: Obj) -> tuple[FakeClient, str]:
    client = FakeClient()
    client.put(CLUSTER_SERVING_RUNTIMES, {"metadata": {"name": "vllm-base"}, "spec": BASE_SPEC})
    client.put(CLUSTER_SERVING_RUNTIMES, {"metadata": {"name": "vllm-llama",
                                                       "annotations": {"ome.io/inherit-from": "vllm-base"}},
                                          "spec": LLAMA_SPEC})
    short = rr.spec_hash(pinned_spec)
    client.put(CONTROLLER_REVISIONS, {"metadata": {"name": f"cr-vllm-llama-{short}", "namespace": "ome",
                                                   "labels": {rr.REVISION_HASH_LABEL: short}},
                                      "data": pinned_spec})
    drifted = [{"type": "RuntimeDrifted", "status": "True", "reason": "RevisionMismatch"}]
    client.put(INFERENCE_SERVICES, llama_chat(pinnedRevisionName=f"cr-vllm-llama-{short}", conditions=drifted))
    return client, short


def effective(client: FakeClient, output: str = "table") -> str:
    ctx, _, _ = make_ctx(client, namespace="team-a")
    args = argparse.Namespace(name="llama-chat", output=output, ome_namespace="ome")
    return str(asyncio.run(cmd_runtime.runtime_effective(ctx, args)))


def test_the_docs_example() -> None:
    old = {"containers": [{"name": "ome-container", "image": "vllm:0.9"}], "engineConfig": {}}
    client, active = docs_cluster(old)
    live = rr.spec_hash(merged_spec([BASE_SPEC, LLAMA_SPEC]))
    assert live != active
    assert effective(client) == (GOLDEN / "runtime_effective.txt").read_text().format(live=live, active=active)
    assert effective(client, "wide") == (GOLDEN / "runtime_effective_wide.txt").read_text().format(
        live=live, active=active)
    doc = json.loads(effective(client, "json"))
    assert doc["content"]["inheritanceChain"] == ["CSR/vllm-base", "CSR/vllm-llama"]
    assert doc["content"]["service"]["liveRelation"] == "Different"


def test_pinned_to_the_live_spec_is_equal() -> None:
    client, _ = docs_cluster(merged_spec([BASE_SPEC, LLAMA_SPEC]))
    assert "Service   LIVE-RELATION   Equal\n" in effective(client)


def test_missing_revision_awaiting_pin_and_sync_states() -> None:
    client, short = docs_cluster(BASE_SPEC)
    del client.objects[("controllerrevisions", "ome", f"cr-vllm-llama-{short}")]
    out = effective(client)
    assert "Active    STATE           Unavailable\nActive    REASON          NotFound\n" in out
    assert "Service   PIN             ManagedPin/RevisionMissing\n" in out
    assert f"Service   ISSUE           RevisionNotFound(cr-vllm-llama-{short})\n" in out
    assert "Service   ISSUE           ActiveRevisionUnavailable\n" in out
    waiting = isvc({"runtime": {"name": "vllm", "autoSync": False}, "engine": {}},
                   annotations={"ome.io/runtime-sync": "t1"})
    report = build(waiting, RuntimeRead("CSR/vllm", {"spec": {}}), {})
    rows = effective_rows(report)
    assert ("Service", "PIN", "ManagedPin/AwaitingPin") in rows
    assert ("Service", "SYNC", "Pending") in rows
    assert ("Service", "ISSUE", "ActiveRevisionUnreported") in rows
    assert ("Service", "LIVE-RELATION", "Equal") in rows


def test_broken_inheritance_makes_the_live_view_unavailable() -> None:
    client, _ = docs_cluster(BASE_SPEC)
    del client.objects[("clusterservingruntimes", None, "vllm-base")]
    out = effective(client)
    assert "Live      STATE           Unavailable\n" in out
    assert "Service   ISSUE           InheritanceUnavailable\n" in out
    assert "Service   ISSUE           LiveRuntimeUnavailable\n" in out


def test_unconfigured_service() -> None:
    rows = effective_rows(build(isvc({"engine": {}}, observed=None), RuntimeRead(None, None, "NotConfigured"), {}))
    assert ("Live", "REASON", "NotConfigured") in rows
    assert ("Service", "PIN", "AutoSync/Unavailable") in rows
    assert ("Service", "ISSUE", "StatusUnobserved") in rows


def test_long_identities_keep_both_ends_and_a_hash_within_54_characters() -> None:
    """runtime.md, effective output fields: "A long runtime name or namespace, revision name or issue keeps its
    start and end with `...` between them, followed by `#` and eight hex digits ... Other long values keep
    their first 51 characters and end in `...`."""
    def tag(value: str) -> str:
        return "#" + hashlib.sha256(value.encode()).hexdigest()[:8]

    assert runtime_cell("CSR/vllm-llama") == "CSR/vllm-llama"
    namespace, name = "team-" + "a" * 30, "vllm-" + "b" * 50
    cell = runtime_cell(f"SR/{namespace}/{name}")
    ns_part, name_part = cell.removeprefix("SR/").split("/")
    assert ns_part == namespace[:4] + "..." + namespace[-4:] + tag(namespace) and len(ns_part) == 20
    assert name_part.endswith(tag(name)) and name_part.startswith("vllm-") and len(cell) == 54
    other = runtime_cell(f"SR/{namespace}/{name[:-1]}x")
    assert other != cell and len(other) == 54  # alike once cut, told apart by the hash
    revision = "cr-" + "c" * 60 + "-1baf272d"
    assert identity_cell(revision) == revision[:21] + "..." + revision[-21:] + tag(revision)
    issue = issue_cell(f"RevisionNotFound({revision})")
    assert issue == f"RevisionNotFound({identity_cell(revision, 24)})" and len(issue) <= 54
    assert issue_cell("RevisionNotFound(cr-vllm-llama-1baf272d)") == "RevisionNotFound(cr-vllm-llama-1baf272d)"
    rows = effective_rows(build(isvc({"runtime": {"name": name}, "engine": {}}),
                                RuntimeRead(f"CSR/{name}", None, "NotFound"), {}))
    assert ("Live", "RUNTIME", runtime_cell(f"CSR/{name}")) in rows
