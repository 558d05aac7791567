"""Automatic relocation through the migration reconciler (ome.controllers.migration): a pod on a NotReady node
brings the pass back when the node crosses the threshold, and a node that is gone relocates the Instance
at once (its pod force-deleted, the record and the event written)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.controllers.migration.reconciler import MigrationReconciler, MigrationSettings
from ome.framework.reconcile import Request
from ome.framework.resources import NODES
from ome.omenative import status as replica_status
from ome.omenative.pods_view import format_time
from tests.unit.controllers.inferencereplica.fakes import FakeApi, FakeClient, FakeRecorder
from tests.unit.omenative.test_rollout_plan import ready_row

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
Obj = dict[str, Any]


def world(node: Obj | None) -> tuple[FakeApi, MigrationReconciler, FakeRecorder]:
    api = FakeApi()
    api.put(INFERENCE_SERVICES, {"metadata": {"name": "chat", "namespace": "ns"}, "spec": {"engine": {}}})
    replica = api.put(INFERENCE_REPLICAS, {
        "metadata": {"name": "chat-engine", "namespace": "ns", "generation": 1},
        "spec": {"component": "engine", "replicas": 1},
        "status": replica_status.instance_rows([ready_row(0)], False),
    })
    api.put(PODS, {
        "metadata": {"name": "chat-engine-0-default-0", "namespace": "ns",
                     "labels": {"ome.io/instance-index": "0"},
                     "ownerReferences": [{"kind": "InferenceReplica", "name": "chat-engine", "controller": True,
                                          "uid": replica["metadata"]["uid"]}]},
        "spec": {"nodeName": "gpu-node-1"}, "status": {"phase": "Running"},
    })
    if node is not None:
        api.put(NODES, node)
    recorder = FakeRecorder()
    settings = MigrationSettings(auto_migrate_attempts=3, force_delete=(30.0, 300.0))
    reconciler = MigrationReconciler(FakeClient(api), api, settings,  # type: ignore[arg-type]
                                     recorder=recorder, now=lambda: NOW)  # type: ignore[arg-type]
    return api, reconciler, recorder


def not_ready(seconds: float) -> Obj:
    since = format_time(NOW - timedelta(seconds=seconds))
    return {"metadata": {"name": "gpu-node-1"},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown", "lastTransitionTime": since}]}}


async def test_a_not_ready_node_brings_the_pass_back_at_the_threshold() -> None:
    api, reconciler, recorder = world(not_ready(120))
    result = await reconciler.reconcile(Request("ns", "chat"))
    assert result.requeue_after == 180.0
    assert not api.writes and not recorder.events


async def test_a_gone_node_relocates_the_instance_at_once() -> None:
    api, reconciler, recorder = world(None)
    result = await reconciler.reconcile(Request("ns", "chat"))
    assert result.requeue_after is None
    [rec] = (api.get(INFERENCE_REPLICAS, "chat-engine") or {})["status"]["migrations"]
    assert (rec["phase"], rec["trigger"], rec["fromNode"]) == ("Relocated", "Auto", "gpu-node-1")
    assert api.get(PODS, "chat-engine-0-default-0") is None
    assert api.graces == {"chat-engine-0-default-0": 0}  # its node is gone: nothing there to wait for
    assert [e[1] for e in recorder.events] == ["AutoMigrationTriggered"]
