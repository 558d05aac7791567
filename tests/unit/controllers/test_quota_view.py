"""The ResourceQuota watch of the OMENative controllers: a quota change in a namespace reconciles the
InferenceReplicas there whose Instances wait on `QuotaExceeded`, and only those."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ome.api.resources import INFERENCE_REPLICAS
from ome.controllers import quota_view
from ome.framework import errors
from ome.framework.reconcile import Request
from ome.omenative import columnar as col
from tests.unit.controllers.inferencereplica.fakes import FakeApi

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]


def quota(ns: str = "ns", hard: str = "3", used: str = "3") -> Obj:
    return {
        "metadata": {"name": "q", "namespace": ns, "resourceVersion": "7", "managedFields": [{}]},
        "spec": {"hard": {"pods": hard}, "scopes": ["NotTerminating"]},
        "status": {"hard": {"pods": hard}, "used": {"pods": used}},
    }


def replica(name: str, ns: str, waiting: str | None, columnar: bool = False) -> Obj:
    op: Obj = {"type": "Update", "step": "Surge"}
    if waiting:
        op["waiting"] = waiting
    rows = [{"index": 0, "phase": "Ready"}, {"index": 1, "phase": "Updating", "operation": op}]
    dense = [col.canonical_row(r) for r in rows]
    encoded: Obj = (
        {"instanceStatusEncoding": "ColumnarV2", "instanceStatusColumns": col.encode(dense)}
        if columnar else {"instanceStatuses": dense}
    )
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"component": "engine"}, "status": encoded}


def test_a_quota_change_reconciles_the_replicas_of_its_namespace_waiting_on_quota() -> None:
    api = FakeApi()
    api.put(INFERENCE_REPLICAS, replica("a-engine", "ns", "QuotaExceeded"))
    api.put(INFERENCE_REPLICAS, replica("b-engine", "ns", "QuotaExceeded", columnar=True))
    api.put(INFERENCE_REPLICAS, replica("c-engine", "ns", "Unschedulable"))
    api.put(INFERENCE_REPLICAS, replica("d-engine", "ns", None))
    api.put(INFERENCE_REPLICAS, replica("e-engine", "other", "QuotaExceeded"))
    got = quota_view.quota_waiters(api, quota())  # type: ignore[arg-type]
    assert got == [Request("ns", "a-engine"), Request("ns", "b-engine")]
    assert quota_view.quota_waiters(api, quota(ns="empty")) == []  # type: ignore[arg-type]


def test_only_a_change_of_limits_or_usage_passes_the_predicate() -> None:
    before = quota_view.slim_quota(quota())
    raised = quota_view.slim_quota(quota(hard="4"))
    freed = quota_view.slim_quota(quota(used="2"))
    relabelled = quota_view.slim_quota({**quota(), "metadata": {**quota()["metadata"], "resourceVersion": "8"}})
    assert quota_view.quota_changed("MODIFIED", raised, before)
    assert quota_view.quota_changed("MODIFIED", freed, before)
    assert not quota_view.quota_changed("MODIFIED", relabelled, before)
    assert quota_view.quota_changed("ADDED", before, None) and quota_view.quota_changed("DELETED", before, None)


def test_the_slim_quota_keeps_limits_and_usage_only() -> None:
    slim = quota_view.slim_quota(quota())
    assert slim == {
        "metadata": {"name": "q", "namespace": "ns", "resourceVersion": "7"},
        "spec": {"hard": {"pods": "3"}},
        "status": {"hard": {"pods": "3"}, "used": {"pods": "3"}},
    }


def test_a_quota_refusal_is_told_from_other_forbidden_answers() -> None:
    refused = errors.Forbidden(403, "Forbidden", 'pods "p" is forbidden: exceeded quota: q, requested: pods=1')
    other = errors.Forbidden(403, "Forbidden", 'pods "p" is forbidden: unable to create new content in namespace')
    assert quota_view.is_quota_refusal(refused)
    assert not quota_view.is_quota_refusal(other) and not quota_view.is_quota_refusal(None)


def test_the_manager_role_may_list_and_watch_resource_quotas() -> None:
    """RBAC is derived from the informers (ome.cmd.rbac): the quota watch is wired and shipped."""
    [role] = [d for d in yaml.safe_load_all((ROOT / "config" / "rbac" / "role.yaml").read_text())
              if d["metadata"]["name"] == "ome-manager-role"]
    rules = [r for r in role["rules"] if "resourcequotas" in r["resources"] and r["apiGroups"] == [""]]
    assert rules and {"list", "watch"} <= set(rules[0]["verbs"])
