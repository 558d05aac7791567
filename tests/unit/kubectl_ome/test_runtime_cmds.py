"""`runtime history`, `runtime tree` and the guarded `runtime sync`, against the docs' examples."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_SERVICES
from ome.framework import errors
from ome.kubectl_ome import cmd_runtime
from ome.kubectl_ome.failures import CliError
from ome.kubectl_ome.table import format_table
from ome.resolution import runtime_revisions as rr
from tests.unit.kubectl_ome.fakes import make_ctx
from tests.unit.kubectl_ome.fixtures import RUNTIME, cluster, isvc, parse

HISTORY = (
    "WINDOW    REVISION         CREATED           ROLES   CHECK   LIVE    ISSUES\n"
    "C/B/1/1   cr...#1c63d586   26-09-20T14:30Z   H       OK      MATCH   R0/G0\n"
    "C/B/1/1   cr...#fd54e47d   26-09-01T08:00Z   ARH     OK      DIFF    R0/G0\n"
)


def revision(short: str, created: str) -> dict[str, Any]:
    return {"metadata": {"name": f"cr-vllm-llama-{short}", "creationTimestamp": created,
                         "labels": {rr.REVISION_HASH_LABEL: short, rr.RUNTIME_OF_LABEL: "vllm-llama"}}}


def test_history_matches_the_docs_example() -> None:
    service = {"metadata": {"name": "llama-chat"}, "spec": {"runtime": {"name": "vllm-llama", "autoSync": False}},
               "status": {"pinnedRevisionName": "cr-vllm-llama-1baf272d"}}
    revisions = [revision("1baf272d", "2026-09-01T08:00:00Z"), revision("3c18f4a0", "2026-09-20T14:30:00Z")]
    rows = cmd_runtime.history_rows(service, revisions, "3c18f4a0", "C/B/1/1")
    assert format_table(cmd_runtime.HISTORY_HEADERS, rows) == HISTORY


def tree_cluster() -> Any:
    from tests.unit.kubectl_ome.fakes import FakeClient

    client = FakeClient()
    inherit = "ome.io/inherit-from"
    for name, parent in (("vllm-base", None), ("vllm-llama", "vllm-base"), ("srt-a", None), ("srt-b", None)):
        meta: dict[str, Any] = {"name": name}
        if parent:
            meta["annotations"] = {inherit: parent}
        client.put(resources.CLUSTER_SERVING_RUNTIMES, {"metadata": meta, "spec": {}})
    client.put(resources.SERVING_RUNTIMES, {"metadata": {"name": "team-llama", "namespace": "team-a",
                                                         "annotations": {inherit: "vllm-llama"}}, "spec": {}})
    for ns, name, runtime in (("team-a", "llama-chat", "vllm-llama"), ("team-a", "llama-dev", "team-llama"),
                              ("team-b", "llama-batch", "vllm-llama"), ("team-b", "llama-auto", None)):
        spec: dict[str, Any] = {"runtime": {"name": runtime}} if runtime else {}
        client.put(INFERENCE_SERVICES, {"metadata": {"name": name, "namespace": ns}, "spec": spec})
    return client


def run_tree(client: Any, name: str, **kwargs: Any) -> str:
    import argparse
    import asyncio

    ctx, _, _ = make_ctx(client, namespace="team-a")
    args = argparse.Namespace(name=name, kind=None, output="table", show_unattributed_users=False)
    for key, value in kwargs.items():
        setattr(args, key, value)
    return str(asyncio.run(cmd_runtime.runtime_tree_cmd(ctx, args)))


def test_tree_matches_the_docs_examples() -> None:
    golden = Path(__file__).parent / "golden"
    assert run_tree(tree_cluster(), "vllm-llama") == (golden / "runtime_tree_cluster.txt").read_text()
    assert run_tree(tree_cluster(), "team-llama") == (golden / "runtime_tree_namespaced.txt").read_text()
    shown = run_tree(tree_cluster(), "vllm-llama", show_unattributed_users=True)
    assert (
        "Unattributed users (not attributed to runtime tree):\n"
        "  [not attributed] InferenceService/team-b/llama-auto\n"
        "  state=Unresolved reason=AutomaticSelection\n"
        "Snapshot: Complete\n"
    ) in shown


def test_tree_reports_a_missing_parent_and_refuses_bad_targets() -> None:
    client = tree_cluster()
    client.put(resources.CLUSTER_SERVING_RUNTIMES, {"metadata": {"name": "orphan",
                                                                 "annotations": {"ome.io/inherit-from": "gone"}}})
    out = run_tree(client, "orphan")
    assert "Issue: ParentMissing subject=ClusterServingRuntime/orphan parent=gone\n" in out
    assert "Issue path: ClusterServingRuntime/orphan -> gone\n" in out
    with pytest.raises(CliError, match='runtime target was not found: "nope"'):
        run_tree(client, "nope")
    client.put(resources.SERVING_RUNTIMES, {"metadata": {"name": "vllm-llama", "namespace": "team-a"}})
    with pytest.raises(CliError, match="is ambiguous"):
        run_tree(client, "vllm-llama")
    client.fail_list[INFERENCE_SERVICES.plural] = errors.Forbidden(403, "Forbidden", "no")
    partial = run_tree(client, "vllm-llama", kind="ClusterServingRuntime")
    assert "Snapshot: Partial\n" in partial and "Warning: PartialData\n" in partial


def pinned_service(live_spec: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    service = isvc()
    service["spec"]["runtime"]["autoSync"] = False
    service["status"]["pinnedRevisionName"] = "r-prod-vllm-00000000"
    service["status"]["conditions"] = [{"type": "RuntimeDrifted", "status": "True", "reason": "RevisionMismatch"}]
    client = cluster(service)
    client.put(CONTROLLER_REVISIONS, {"metadata": {"name": "r-prod-vllm-00000000", "namespace": "ome",
                                                   "labels": {rr.REVISION_HASH_LABEL: "00000000"}}})
    return client, service


async def test_sync_sets_a_fresh_token_and_refuses_while_it_waits() -> None:
    client, _ = pinned_service(copy.deepcopy(RUNTIME["spec"]))
    ctx, err, _ = make_ctx(client)
    args = parse("runtime", "sync", "chat", "-n", "prod", "--yes", "-o", "json")
    result = json.loads(await args.handler(ctx, args))
    token = f"cli-runtime-sync-{result['requestID']}"
    assert result["revisionHash"] == rr.spec_hash(RUNTIME["spec"])
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    assert stored["metadata"]["annotations"]["ome.io/runtime-sync"] == token
    assert err.getvalue().startswith("ALPHA runtime sync preview (acceptance is not convergence)\n")
    with pytest.raises(CliError, match="a runtime sync request is already pending"):
        await args.handler(ctx, args)


async def test_sync_refuses_without_revision_mismatch_drift() -> None:
    client, service = pinned_service({})
    service["status"]["conditions"] = []
    client.put(INFERENCE_SERVICES, service)
    ctx, _, _ = make_ctx(client)
    args = parse("runtime", "sync", "chat", "-n", "prod", "--yes")
    with pytest.raises(CliError, match="action refused: runtime sync requires reported RevisionMismatch drift"):
        await args.handler(ctx, args)
