"""`traffic status|explain` and the guarded `traffic drain|undrain`, against the docs' examples."""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import INFERENCE_SERVICES
from ome.kubectl_ome import cmd_traffic
from ome.kubectl_ome.failures import CliError, Conflict
from tests.unit.kubectl_ome.fakes import FakeClient, TtyInput, make_ctx

GOLDEN = Path(__file__).parent / "golden"
NOW = datetime(2026, 9, 14, 17, tzinfo=UTC)
Obj = dict[str, Any]
UID = "2f6c1d9e-4b7a-4c1e-9f3d-8a5b6c7d0e12"


def condition(status: str, reason: str) -> Obj:
    return {"type": "BackendPolicyReady", "status": status, "reason": reason, "observedGeneration": 7,
            "lastTransitionTime": "2026-09-14T16:59:00Z", "message": "secret=hidden"}


POLICY = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "BackendTrafficPolicy", "name": "chat"}


def chat(canary: bool = True) -> Obj:
    spec: Obj = {"traffic": {"algorithm": "RoundRobin"}, "engine": {}}
    status: Obj = {"traffic": {"algorithm": "RoundRobin", "backendPolicyResource": POLICY,
                               "targetedHTTPRoutes": ["chat-engine", "chat"],
                               "conditions": [condition("Unknown", "Pending")]},
                   "addresses": [{"url": "https://chat.prod.example/"},
                                 {"url": "http://chat-engine.prod.svc.cluster.local"}],
                   "components": {"engine": {}}}
    if canary:
        spec["rollout"] = {"groups": [{"components": ["engine"],
                                       "canary": {"steps": [{"traffic": 20}, {"traffic": 100}]}}]}
        status["components"]["engine"] = {
            "canary": {"currentStep": 0, "observedTrafficWeight": 20, "stableRevisionHash": "a1b2c3d4",
                       "canaryRevisionHash": "e5f6a7b8"},
            "traffic": [{"revisionName": "chat-engine-rev-e5f6a7b8", "percent": 20},
                        {"revisionName": "chat-engine-rev-a1b2c3d4", "percent": 80}]}
    return {"metadata": {"name": "chat", "namespace": "prod", "generation": 7, "uid": UID},
            "spec": spec, "status": status}


def accepted() -> Obj:
    obj = chat(canary=False)
    obj["status"]["traffic"]["conditions"] = [condition("True", "AcceptedByGateway")]
    obj["status"]["traffic"]["targetedHTTPRoutes"] = ["chat"]
    del obj["status"]["addresses"]
    return obj


def run(handler: Any, obj: Obj, **kwargs: Any) -> str:
    client = FakeClient()
    client.put(INFERENCE_SERVICES, obj)
    ctx, _, _ = make_ctx(client)
    ctx.terminal.clock = lambda: NOW
    return str(asyncio.run(handler(ctx, argparse.Namespace(**kwargs))))


def test_status_matches_the_docs_examples() -> None:
    assert run(cmd_traffic.traffic_status, chat(), names=["chat"], output="table") == (
        GOLDEN / "traffic_status.txt").read_text()
    assert run(cmd_traffic.traffic_status, chat(), names=["chat"], output="wide") == (
        GOLDEN / "traffic_status_wide.txt").read_text()
    doc = json.loads(run(cmd_traffic.traffic_status, chat(), names=["chat"], output="json"))
    assert (doc["kind"], doc["warnings"]) == ("TrafficStatusReport", [])
    assert doc["sources"][0]["uid"] == UID
    assert "secret=hidden" not in json.dumps(doc)


def test_status_without_traffic_is_unavailable_and_invalid_weights_are_invalid() -> None:
    obj = chat()
    del obj["status"]["traffic"]
    out = run(cmd_traffic.traffic_status, obj, names=["chat"], output="table")
    assert "STATE          -        Unavailable" in out and "ISSUE          -        TrafficStatusMissing" in out
    assert "CANARY         engine   1/2 @ 20%" in out  # the rest of the status still shows
    obj = chat()
    obj["status"]["components"]["engine"]["traffic"][0]["percent"] = 30
    doc = json.loads(run(cmd_traffic.traffic_status, obj, names=["chat"], output="json"))
    assert doc["content"]["state"]["value"] == "Invalid"
    assert {"component": "engine", "code": "AllocationInvalid", "invalid": True} in doc["content"]["issues"]
    assert "PartialData" in doc["warnings"]
    stale = chat()
    stale["metadata"]["generation"] = 8
    doc = json.loads(run(cmd_traffic.traffic_status, stale, names=["chat"], output="json"))
    assert (doc["content"]["state"]["value"], doc["warnings"]) == ("Partial", ["PartialData", "StaleEvidence"])


def test_status_usage_errors() -> None:
    with pytest.raises(CliError, match=r'^unsupported output format "xml" \(supported: table, wide, json, yaml\)$'):
        run(cmd_traffic.traffic_status, chat(), names=["chat"], output="xml")
    with pytest.raises(CliError, match='^invalid InferenceService name "Chat": '):
        run(cmd_traffic.traffic_status, chat(), names=["Chat"], output="table")
    with pytest.raises(CliError, match='^get InferenceService "prod/other": '):
        run(cmd_traffic.traffic_status, chat(), names=["other"], output="table")
    with pytest.raises(CliError, match='^get InferenceService "prod/other": not found$'):
        run(cmd_traffic.traffic_explain_cmd, chat(), names=["other"], output="table")


def test_explain_matches_the_docs_examples() -> None:
    assert run(cmd_traffic.traffic_explain_cmd, accepted(), names=["chat"], output="table") == (
        GOLDEN / "traffic_explain.txt").read_text()
    assert run(cmd_traffic.traffic_explain_cmd, accepted(), names=["chat"], output="wide") == (
        GOLDEN / "traffic_explain_wide.txt").read_text()
    noop = accepted()
    noop["status"]["traffic"] = {"algorithm": "RoundRobin",
                                 "conditions": [condition("False", "NoTranslatorAvailable")]}
    assert run(cmd_traffic.traffic_explain_cmd, noop, names=["chat"], output="table") == (
        GOLDEN / "traffic_explain_no_translator.txt").read_text()


def test_explain_mismatch_and_canary_weight() -> None:
    obj = accepted()
    obj["status"]["traffic"]["algorithm"] = "Random"
    out = run(cmd_traffic.traffic_explain_cmd, obj, names=["chat"], output="table")
    assert "SUMMARY     Mismatch" in out and "AlgorithmMismatch" in out
    doc = json.loads(run(cmd_traffic.traffic_explain_cmd, chat(), names=["chat"], output="json"))
    assert {"check": "canary-weight", "result": "Match"} in doc["content"]["comparisons"]
    assert doc["content"]["summary"]["state"] == "Pending"


# --- drain / undrain --------------------------------------------------------------------------------


def placed(drains: Obj | None = None) -> Obj:
    obj = chat(canary=False)
    obj["spec"]["placement"] = {"mode": "All", "clusterSelector": {"matchLabels": {"pool": "gpu"}}}
    if drains is not None:
        obj["metadata"]["annotations"] = {cmd_traffic.DRAIN: json.dumps(drains, separators=(",", ":"))}
    return obj


def drain_args(**over: Any) -> argparse.Namespace:
    base = dict(names=["chat"], override_id="maintenance-a", workload_cluster="worker-a",
                reason="planned maintenance", dry_run="none", yes=True, output="table", drain=True)
    base.update(over)
    return argparse.Namespace(**base)


def act(obj: Obj, args: argparse.Namespace, stdin: Any = None) -> tuple[str, str, FakeClient]:
    client = FakeClient()
    client.version = 1284710
    client.put(INFERENCE_SERVICES, obj)
    ctx, err, _ = make_ctx(client, stdin=stdin, context="hub")
    out = asyncio.run(cmd_traffic.traffic_drain(ctx, args))
    return out, err.getvalue(), client


def stored(client: FakeClient) -> Any:
    return client.objects[("inferenceservices", "prod", "chat")]["metadata"].get("annotations")


def test_drain_server_dry_run_leaves_the_object_unchanged() -> None:
    out, _, client = act(placed(), drain_args(dry_run="server"))
    assert out == (GOLDEN / "traffic_drain_server.txt").read_text()
    assert client.patches and ("dryRun", "All") in client.patches[0][2]
    assert stored(client) is None


def test_drain_confirmed_at_the_prompt_matches_the_docs_preview() -> None:
    out, err, client = act(placed(), drain_args(yes=False), stdin=TtyInput("y\n"))
    assert err == (GOLDEN / "traffic_drain_preview.txt").read_text()
    assert out == (GOLDEN / "traffic_drain_applied.txt").read_text()
    assert stored(client) == {
        cmd_traffic.DRAIN: '{"maintenance-a":{"cluster":"worker-a","reason":"planned maintenance"}}'}


def test_undrain_keeps_other_drains_and_removes_the_last() -> None:
    two = {"a": {"cluster": "worker-b", "reason": "x"}, "maintenance-a": {"cluster": "worker-a", "reason": "y"}}
    out, _, client = act(placed(two), drain_args(drain=False, output="json"))
    doc = json.loads(out)
    assert doc["traffic"] == {"overrideID": "maintenance-a", "cluster": "worker-a", "overridesBefore": 2,
                              "overridesAfter": 1}
    assert json.loads(stored(client)[cmd_traffic.DRAIN]) == {"a": {"cluster": "worker-b", "reason": "x"}}
    _, _, client = act(placed({"maintenance-a": two["maintenance-a"]}), drain_args(drain=False))
    assert stored(client) == {}


@pytest.mark.parametrize(
    ("obj", "args", "message"),
    [
        (placed(), drain_args(names=[]), "exactly one inference service is required"),
        (placed(), drain_args(output="xml"), "output must be table, wide, json or yaml"),
        (placed(), drain_args(dry_run="maybe"), "dry-run must be none, client or server"),
        (placed(), drain_args(workload_cluster=None), "traffic drain requires --workload-cluster; "
         "--cluster selects the Kubernetes API cluster"),
        (placed(), drain_args(override_id="Bad_ID"), "traffic override ID must be a DNS-1123 label"),
        (placed(), drain_args(workload_cluster="Worker_A"), "traffic drain cluster must be a DNS-1123 subdomain"),
        (placed(), drain_args(reason=" padded"), "traffic drain reason must be bounded, trimmed, printable, "
         "and non-secret"),
        (placed(), drain_args(reason="token=abcdefghij"), "traffic drain reason must be bounded, trimmed, "
         "printable, and non-secret"),
        (chat(), drain_args(), "traffic action refused: target is not eligible for cross-cluster traffic routing"),
        (placed({"maintenance-a": {"cluster": "worker-a", "reason": "x"}}), drain_args(),
         "traffic drain refused: override ID already exists"),
        (placed(), drain_args(drain=False), "traffic undrain refused: override ID does not exist"),
    ],
)
def test_drain_refusals(obj: Obj, args: argparse.Namespace, message: str) -> None:
    with pytest.raises(CliError) as caught:
        act(obj, args)
    assert str(caught.value) == message


def test_drain_refuses_copies_and_malformed_annotations() -> None:
    copy_ = placed()
    copy_["metadata"]["labels"] = {"ome.io/placement-origin": "hub"}
    with pytest.raises(CliError, match="^action refused: placement sources and derived services cannot be mutated$"):
        act(copy_, drain_args())
    bad = placed()
    bad["metadata"]["annotations"] = {cmd_traffic.DRAIN: '{"a":{"cluster":"w","reason":"x","extra":1}}'}
    with pytest.raises(CliError, match="existing traffic-drain annotation is malformed or unsafe"):
        act(bad, drain_args())


def test_drain_conflict_exits_3() -> None:
    client = FakeClient()
    client.put(INFERENCE_SERVICES, placed())
    ctx, _, _ = make_ctx(client, context="hub")
    original = client.get

    async def stale_get(*a: Any, **k: Any) -> Obj:
        obj = await original(*a, **k)
        changed = copy.deepcopy(obj)
        changed["metadata"]["resourceVersion"] = "1"
        return changed

    client.get = stale_get  # type: ignore[method-assign]
    with pytest.raises(Conflict, match="guarded annotation patch rejected; refresh traffic status and retry"):
        asyncio.run(cmd_traffic.traffic_drain(ctx, drain_args()))
