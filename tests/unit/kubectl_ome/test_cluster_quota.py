"""`cluster status` and `quota status|tree|validate` against the docs' examples (golden files)."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import ACCELERATOR_QUOTAS, WORKLOAD_CLUSTERS
from ome.framework import errors
from ome.kubectl_ome import cmd_cluster, cmd_quota, quota_tree
from ome.kubectl_ome.failures import CliError, Unmet
from tests.unit.kubectl_ome.fakes import FakeClient, make_ctx

GOLDEN = Path(__file__).parent / "golden"
Obj = dict[str, Any]


def run(handler: Any, client: FakeClient, now: datetime | None = None, **kwargs: Any) -> str:
    ctx, _, _ = make_ctx(client)
    if now is not None:
        ctx.terminal.clock = lambda: now
    return str(asyncio.run(handler(ctx, argparse.Namespace(**kwargs))))


def workload_cluster(name: str, generation: int, ready: str, observed: int) -> Obj:
    return {
        "metadata": {"name": name, "generation": generation},
        "spec": {"clusterSource": {"kubeConfig": {"secretRef": {"name": f"{name}-kc", "namespace": "ome"}}}},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "Reachable",
                                   "observedGeneration": observed,
                                   "lastTransitionTime": "2025-12-31T23:00:00Z"}]},
    }


def hub() -> FakeClient:
    client = FakeClient()
    client.put(WORKLOAD_CLUSTERS, workload_cluster("worker-a", 1, "True", 1))
    client.put(WORKLOAD_CLUSTERS, workload_cluster("worker-b", 3, "False", 2))
    return client


def test_cluster_status_lists_the_docs_example() -> None:
    out = run(cmd_cluster.cluster_status, hub(), name=None, output="table")
    assert out == (GOLDEN / "cluster_status_list.txt").read_text()


def test_cluster_status_named_json_is_the_docs_report() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    out = run(cmd_cluster.cluster_status, hub(), now, name="worker-a", output="json")
    assert json.loads(out) == json.loads((GOLDEN / "cluster_status_worker_a.json").read_text())


def test_cluster_status_missing_cluster_still_prints_the_report() -> None:
    out = run(cmd_cluster.cluster_status, hub(), name="worker-c", output="table")
    assert out == (GOLDEN / "cluster_status_notfound.txt").read_text()


def test_cluster_status_forbidden_list_is_unavailable_and_invalid_names_fail() -> None:
    client = hub()
    client.fail_list[WORKLOAD_CLUSTERS.plural] = errors.Forbidden(403, "Forbidden", "no")
    report = json.loads(run(cmd_cluster.cluster_status, client, name=None, output="json"))
    assert (report["observation"], report["unavailableReason"]) == ("Unavailable", "Forbidden")
    with pytest.raises(CliError, match="invalid WorkloadCluster name"):
        run(cmd_cluster.cluster_status, client, name="Bad_Name", output="table")


def test_cluster_status_pages_are_bounded() -> None:
    client = FakeClient()
    for i in range(70):
        client.put(WORKLOAD_CLUSTERS, workload_cluster(f"w-{i:02d}", 1, "True", 1))
    report = json.loads(run(cmd_cluster.cluster_status, client, name=None, output="json"))
    assert (report["observation"], report["admittedSources"], report["observedPages"]) == ("Partial", 64, 2)
    assert report["sourcesTruncated"] is True


def test_cluster_entry_declared_kinds_and_malformed_conditions() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    profile = {"metadata": {"name": "p", "generation": 1},
               "spec": {"clusterSource": {"clusterProfileRef": {"name": "prof"}}}}
    entry = cmd_cluster.cluster_entry(profile, now)
    assert (entry["declaredConnectionKind"], entry["declaredProfile"], entry["conditionState"]) == (
        "ClusterProfile", "prof", "Missing")
    bad = workload_cluster("x", 1, "True", 1)
    bad["spec"]["clusterSource"]["kubeConfig"]["secretRef"].pop("namespace")
    bad["status"]["conditions"].append(dict(bad["status"]["conditions"][0]))
    entry = cmd_cluster.cluster_entry(bad, now)
    assert (entry["declaredConnectionKind"], entry["sourceState"]) == ("Invalid", "Malformed")
    assert (entry["conditionState"], entry["reportedReady"], entry["freshness"]) == ("Malformed", "Unknown", "Invalid")


# --- quota ------------------------------------------------------------------------------------------


def aq(name: str, role: str, parent: str | None, nominal: str | None, generation: int = 1) -> Obj:
    spec: Obj = {"role": role}
    if parent:
        spec["parentRef"] = {"name": parent}
    if nominal:
        spec["budgets"] = [{"resourceName": "nvidia.com/gpu", "resourceFlavor": "a100", "nominal": nominal}]
    return {"metadata": {"name": name, "generation": generation}, "spec": spec}


def quota_cluster(alpha: str = "16") -> FakeClient:
    client = FakeClient()
    for obj in (aq("root", "Cohort", None, None), aq("ml-research", "Cohort", "root", "24"),
                aq("team-alpha", "ClusterQueue", "ml-research", alpha, 2),
                aq("team-beta", "ClusterQueue", "ml-research", "8")):
        client.put(ACCELERATOR_QUOTAS, obj)
    return client


def test_quota_tree_matches_the_docs_example() -> None:
    assert run(cmd_quota.quota_tree_cmd, quota_cluster(), names=[], output="table") == (
        GOLDEN / "quota_tree.txt").read_text()


def test_quota_tree_wide_for_one_node_matches_the_docs_example() -> None:
    now = datetime(2026, 9, 28, 12, tzinfo=UTC)
    out = run(cmd_quota.quota_tree_cmd, quota_cluster(), now, names=["team-alpha"], output="wide")
    assert out == (GOLDEN / "quota_tree_team_alpha_wide.txt").read_text()


def test_quota_validate_reports_containment_and_exits_2() -> None:
    assert run(cmd_quota.quota_validate, quota_cluster(), names=[], output="table").startswith(
        "QUOTA VALIDATION (advisory)\nResult: NoProblemsDetected; complete fetched snapshot only.\n")
    with pytest.raises(Unmet) as caught:
        run(cmd_quota.quota_validate, quota_cluster("20"), names=["team-beta"], output="table")
    assert caught.value.output == (GOLDEN / "quota_validate_team_beta.txt").read_text()
    assert caught.value.message == "advisory quota validation found violations in the complete snapshot"
    with pytest.raises(Unmet) as caught:
        run(cmd_quota.quota_validate, quota_cluster("20"), names=[], output="json")
    doc = json.loads(caught.value.output)
    assert doc["content"]["valid"] is False
    assert doc["content"]["topology"]["problems"][0]["reason"] == "ContainmentViolated"


def test_quota_tree_problems() -> None:
    objs = [aq("root", "ClusterQueue", "x", None), aq("a", "Cohort", "a", None), aq("b", "Cohort", "a", None),
            aq("c", "Cohort", "gone", None), aq("d", "Cohort", "root", "-1"), aq("e", "Cohort", "d", None)]
    tree = quota_tree.build(objs)
    assert set(tree.problems) == {
        ("root", "RootHasParent"), ("root", "RootRoleInvalid"), ("a", "ParentCycle"), ("b", "Unreachable"),
        ("c", "ParentMissing"), ("d", "NodeKindInvalid"), ("d", "BudgetInvalid")}
    assert quota_tree.build([aq("x", "Cohort", "root", None)]).problems[0] == ("root", "RootMissing")


def test_quota_tree_sibling_prefix_bug_is_kept() -> None:
    objs = [aq("root", "Cohort", None, None), aq("ml", "Cohort", "root", None),
            aq("ml-ops", "Cohort", "root", None), aq("kid", "ClusterQueue", "ml", "1")]
    lines = quota_tree.node_lines(quota_tree.build(objs), None)
    assert [line.strip().split(" ")[0] for line in lines if "[" in line] == ["root", "ml", "ml-ops", "kid"]


def test_quota_status_matches_the_docs_examples() -> None:
    client = FakeClient()
    alpha = aq("team-alpha", "ClusterQueue", "ml-research", "16", 2)
    conditions = [{"type": t, "status": s, "reason": "Admitted", "observedGeneration": 2}
                  for t, s in (("Ready", "True"), ("Degraded", "False"), ("Materialized", "True"))]
    alpha["status"] = {"observedGeneration": 2, "parent": "ml-research",
                       "budgets": [{"resourceName": "nvidia.com/gpu", "resourceFlavor": "a100", "nominal": "16",
                                    "admitted": "12", "reserved": "14"}],
                       "materialization": {"lastAppliedGeneration": 2}, "conditions": conditions}
    client.put(ACCELERATOR_QUOTAS, alpha)
    root = aq("root", "Cohort", None, None)
    sampled = "2026-09-28T11:59:00Z"
    root["status"] = {"observedGeneration": 1,
                      "capacity": [{"resourceName": "google.com/tpu", "resourceFlavor": "a100", "allocatable": "0",
                                    "highWaterMark": "0", "observedAt": sampled},
                                   {"resourceName": "nvidia.com/gpu", "resourceFlavor": "a100", "allocatable": "32",
                                    "highWaterMark": "32", "observedAt": sampled}],
                      "materialization": {"lastAppliedGeneration": 1},
                      "conditions": [dict(c, observedGeneration=1) for c in conditions]}
    client.put(ACCELERATOR_QUOTAS, root)
    assert run(cmd_quota.quota_status, client, names=["team-alpha"], output="table") == (
        GOLDEN / "quota_status_team_alpha.txt").read_text()
    assert run(cmd_quota.quota_status, client, names=["root"], output="table") == (
        GOLDEN / "quota_status_root.txt").read_text()
    doc = json.loads(run(cmd_quota.quota_status, client, names=[], output="json"))
    assert [o["name"] for o in doc["content"]["objects"]] == ["root", "team-alpha"]
    assert doc["content"]["objects"][1]["budgets"][0]["usage"]["admitted"] == "12"


def test_quota_errors() -> None:
    client = quota_cluster()
    with pytest.raises(CliError, match="^quota diagnostic accepts at most one AcceleratorQuota name$"):
        run(cmd_quota.quota_status, client, names=["a", "b"], output="table")
    with pytest.raises(CliError, match="^quota tree accepts at most one AcceleratorQuota name$"):
        run(cmd_quota.quota_tree_cmd, client, names=["a", "b"], output="table")
    with pytest.raises(CliError, match="^AcceleratorQuota name is invalid$"):
        run(cmd_quota.quota_tree_cmd, client, names=["A!"], output="table")
    with pytest.raises(CliError, match="^AcceleratorQuota target unavailable: NotFound$"):
        run(cmd_quota.quota_status, client, names=["nope"], output="table")
    with pytest.raises(CliError, match="^AcceleratorQuota target was not found in the complete snapshot$"):
        run(cmd_quota.quota_validate, client, names=["nope"], output="table")
    client.fail_list[ACCELERATOR_QUOTAS.plural] = errors.NotFound(404, "NotFound", "no")
    with pytest.raises(CliError, match="^AcceleratorQuota snapshot unavailable: UnsupportedAPI$"):
        run(cmd_quota.quota_tree_cmd, client, names=[], output="table")
    client.fail_list[ACCELERATOR_QUOTAS.plural] = errors.Forbidden(403, "Forbidden", "no")
    with pytest.raises(CliError, match="^AcceleratorQuota snapshot unavailable: Forbidden$"):
        run(cmd_quota.quota_tree_cmd, client, names=[], output="table")


def test_fit_cuts_with_a_hash() -> None:
    assert cmd_quota.fit("x" * 80) == "x" * 80
    cut = cmd_quota.fit("x" * 81)
    assert len(cut) == 80 and cut[71] == "#"
