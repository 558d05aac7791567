"""`runtime history`, `runtime tree` and the guarded `runtime sync`, against the docs' examples."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_SERVICES
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


def test_tree_lists_the_services_that_name_a_cluster_runtime() -> None:
    users = [{"metadata": {"namespace": "team-a", "name": "llama-chat"}, "spec": {"runtime": {"name": "vllm-llama"}}},
             {"metadata": {"namespace": "team-b", "name": "llama-batch"}, "spec": {"runtime": {"name": "vllm-llama"}}},
             {"metadata": {"namespace": "team-b", "name": "llama-auto"}, "spec": {}}]
    lines = cmd_runtime.tree_lines("ClusterServingRuntime", "vllm-llama", "team-a", users, [], 4, "AllNamespaces")
    assert lines[:7] == [
        "RUNTIME TREE", "Target: ClusterServingRuntime/vllm-llama", "Context: Cluster (resolution: Complete)",
        "Head: ClusterServingRuntime/vllm-llama", "ClusterServingRuntime/vllm-llama [selected]",
        "|-- InferenceService/team-a/llama-chat", "`-- InferenceService/team-b/llama-batch"]
    assert lines[-1] == "Collection: InferenceService scope=AllNamespaces status=Complete pages=1 items=3"


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
