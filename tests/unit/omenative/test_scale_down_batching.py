"""Scale-down waves against guides/operate-ome/configure-pod-batching.md (v1.3): `scaleDownPodBatchSize`
and `scaleDownRequeueInterval`, the pure selection and one planning pass."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg
from ome.omenative import instances
from ome.omenative.pods_view import PodView
from ome.omenative.scale_down_batching import select

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pod(index: int, ordinal: int = 0, *, terminating: bool = False) -> PodView:
    return PodView(name=f"chat-engine-{index}-leader-{ordinal}", index=index, runner="leader", incarnation=1,
                   revision_hash="h", phase="Running", terminating=terminating, containers_ready=True,
                   gate="True", ready=True, ready_since=None, has_ip=True, restarted_at=None)


def gang(index: int, size: int) -> list[PodView]:
    return [pod(index, n) for n in range(size)]


def ready(index: int) -> dict[str, Any]:
    return {"index": index, "incarnation": 1, "phase": "Ready", "runningRevision": "chat-engine-h"}


def deleting(index: int, started: str) -> dict[str, Any]:
    return {"index": index, "incarnation": 1, "phase": "Deleting", "runningRevision": "chat-engine-h",
            "operation": {"type": "Delete", "step": "Drain", "startedAt": started}}


def test_extras_are_admitted_by_whole_instances_within_the_pod_budget() -> None:
    """`scaleDownPodBatchSize`: "Pod-equivalent cost selected for draining, deletion and cleanup" ... "Once
    the next Instance doesn't fit in a batch, later ones wait too." Two-pod Instances, budget 5."""
    rows = {i: ready(i) for i in range(6)}
    wave = select(rows, [2, 3, 4, 5], {i: gang(i, 2) for i in range(6)}, 5)
    assert wave.active == wave.admitted == {5, 4}
    assert wave.deferred == {3, 2}
    assert (wave.cost, wave.oversized) == (4, False)


def test_an_instance_costs_its_live_and_terminating_pods_or_one_when_they_are_gone() -> None:
    """"An Instance costs its live and Terminating pods, or 1 when its pods are gone but cleanup remains." """
    pods = {3: [pod(3, 0), pod(3, 1, terminating=True)], 2: []}
    wave = select({2: ready(2), 3: ready(3)}, [2, 3], pods, 3)
    assert (wave.active, wave.cost) == ({3, 2}, 3)


def test_an_instance_larger_than_the_budget_proceeds_alone_and_is_oversized() -> None:
    """"If the first eligible Instance exceeds the entire budget, it proceeds alone. For example, a 16-pod
    Instance still progresses with a budget of 8; the budget doesn't split its gang." """
    wave = select({1: ready(1), 2: ready(2)}, [1, 2], {2: gang(2, 16), 1: gang(1, 1)}, 8)
    assert (wave.active, wave.deferred, wave.cost, wave.oversized) == ({2}, {1}, 16, True)


def test_deletion_under_way_is_resumed_before_another_batch_is_admitted() -> None:
    """"During scale-down, OME resumes existing deletion work before admitting another batch, including
    when you reduce the desired count again." The oldest deletion goes first; new extras wait."""
    rows = {0: ready(0), 1: ready(1), 4: deleting(4, "2026-01-01T00:00:05Z"),
            5: deleting(5, "2026-01-01T00:00:01Z")}
    wave = select(rows, [1], {i: gang(i, 2) for i in rows}, 2)
    assert wave.active == {5}  # started first; 4 does not fit behind it
    assert wave.admitted == frozenset()
    assert wave.deferred == {4, 1}


def test_without_a_budget_every_extra_starts_at_once() -> None:
    """"An omitted budget leaves that direction unbounded"."""
    wave = select({i: ready(i) for i in range(4)}, [1, 2, 3], {i: gang(i, 4) for i in range(4)}, None)
    assert (wave.admitted, wave.deferred, wave.summary()["podBudget"]) == ({1, 2, 3}, frozenset(), "unbounded")


def test_a_wave_summary_has_the_documented_fields() -> None:
    """"Each matching line identifies the namespace, isvc and component, followed by podBudget,
    activePodCost, activeInstances, admittedInstances and deferredInstances." """
    wave = select({i: ready(i) for i in range(4)}, [1, 2, 3], {i: gang(i, 2) for i in range(4)}, 4)
    assert wave.summary() == {"podBudget": 4, "activePodCost": 4, "activeInstances": 2,
                              "admittedInstances": 2, "deferredInstances": 1}


def test_a_budget_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="scaleDownPodBatchSize"):
        select({}, [], {}, 0)


# -- one planning pass ------------------------------------------------------------------------------


def ctx(budget: int | None, requeue: float | None = None, desired: int = 1) -> instances.Context:
    return instances.Context(base="chat", component="engine", desired=desired, update_revision="chat-engine-h",
                             update_hash="h", revisions={}, now=NOW, ready_timeout=600.0, drain_timeout=600.0,
                             scale_down_budget=budget, scale_down_requeue=requeue)


def chat_ready(index: int) -> dict[str, Any]:
    return {"index": index, "incarnation": 1, "phase": "Ready", "runningRevision": "chat-engine-h"}


def test_a_plan_starts_deleting_only_the_wave_and_leaves_the_rest_serving() -> None:
    rows = [chat_ready(i) for i in range(4)]
    pods = [p for i in range(4) for p in gang(i, 2)]
    out = instances.plan(ctx(budget=2), rows, pods)
    phases = {r["index"]: r["phase"] for r in out.rows}
    assert phases == {0: "Ready", 1: "Ready", 2: "Ready", 3: "Deleting"}
    assert {n for n in out.close_gates} == {"chat-engine-3-leader-0", "chat-engine-3-leader-1"}
    assert out.scale_down is not None and out.scale_down.deferred == {2, 1}


def test_a_deleting_instance_outside_the_wave_is_not_drained() -> None:
    rows = [chat_ready(0), deleting(2, "2026-01-01T00:00:01Z") | {"runningRevision": "chat-engine-h"},
            deleting(3, "2026-01-01T00:00:00Z")]
    pods = [p for i in (0, 2, 3) for p in gang(i, 2)]
    out = instances.plan(ctx(budget=2), rows, pods)
    assert set(out.close_gates) == {"chat-engine-3-leader-0", "chat-engine-3-leader-1"}
    assert {r["index"]: r["phase"] for r in out.rows}[2] == "Deleting"


def test_the_requeue_interval_wakes_the_controller_while_scale_down_work_remains() -> None:
    """`scaleDownRequeueInterval`: "How often OME checks scale-down work while it is still in progress";
    "an omitted interval disables only periodic scale-down checks"."""
    rows = [chat_ready(i) for i in range(3)]
    pods = [p for i in range(3) for p in gang(i, 1)]
    with_interval = instances.plan(ctx(budget=1, requeue=5.0), rows, pods)
    assert with_interval.wake_after == 5.0
    assert instances.plan(ctx(budget=1), rows, pods).wake_after == 600.0  # only the drain deadline
    settled = instances.plan(ctx(budget=1, requeue=5.0, desired=3), rows, pods)
    assert settled.scale_down is None and settled.wake_after is None


def test_the_chart_keys_reach_the_controller_settings() -> None:
    """configure-pod-batching.md Step 2: `scaleDownPodBatchSize: 32`, `scaleDownRequeueInterval: 5s`."""
    config = cfg.parse({"lifecycle": '{"scaleDownPodBatchSize": 32, "scaleDownRequeueInterval": "5s"}'})
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome").replica_settings()
    assert (settings.scale_down_pod_batch_size, settings.scale_down_requeue_interval) == (32, 5.0)
    absent = wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome").replica_settings()
    assert (absent.scale_down_pod_batch_size, absent.scale_down_requeue_interval) == (None, None)
