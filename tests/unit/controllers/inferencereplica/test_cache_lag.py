"""A replica the cache shows older than this process's own last write of it is not planned from.

Found by the fault suite (bench/chaos.py, apiserver restart, 20 services): the rollout reconciler moved an
Instance to its surge pod (a replica status write) and drained the old pod; the pod watch brought the
deletion while the replica watch, re-established after the restart, still held the older status, so
the InferenceReplica reconciler recreated the drained pod and the stray pod stayed for good.
"""

from __future__ import annotations

from datetime import timedelta

from structlog.testing import capture_logs

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.framework.written import CACHE_LAG_REQUEUE
from tests.unit.controllers.inferencereplica.world import START, World


async def test_a_drained_pod_is_not_recreated_from_a_replica_older_than_our_last_write() -> None:
    world = World()
    await world.serving()
    [pod] = world.pods()
    replica = world.replica() or {}
    meta = replica["metadata"]
    # The rollout reconciler (same process, same client) wrote the replica's status; the watch has not
    # brought that write yet, but it has brought the drain's pod deletion.
    world.client.written.record(INFERENCE_REPLICAS, {"metadata": {"uid": meta["uid"],
                                              "resourceVersion": str(int(meta["resourceVersion"]) + 1)}})
    await world.api.delete(PODS, pod, "ns")
    world.api.writes.clear()

    result = await world.reconcile()
    assert world.api.writes == [] and world.pods() == {}
    assert result.requeue_after == CACHE_LAG_REQUEUE

    # The watch brings the write: the replica is planned again from what it now says.
    stored = world.api.objects[("inferencereplicas", "ns", "chat-engine")]
    stored["metadata"]["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
    await world.settle()
    assert list(world.pods()) == [pod]
    assert [r["phase"] for r in (world.replica() or {})["status"]["instanceStatuses"]] == ["Ready"]
    assert world.api.get(INFERENCE_REPLICAS, "chat-engine") is not None


async def test_a_cache_that_stays_behind_our_write_is_logged_once_the_wait_lasted() -> None:
    """Held back by the cache is silent while it is the usual moment; past the wait threshold it is
    said, as every other wait is, so a watch that never brings the write is visible in the log."""
    world = World()
    await world.serving()
    meta = (world.replica() or {})["metadata"]
    world.client.written.record(INFERENCE_REPLICAS, {"metadata": {"uid": meta["uid"],
                                              "resourceVersion": str(int(meta["resourceVersion"]) + 1)}})
    world.api.writes.clear()
    with capture_logs() as logs:
        await world.reconcile()
    assert not [e for e in logs if e["event"] == "InferenceReplica waiting"]
    world.now = START + timedelta(seconds=11)
    with capture_logs() as logs:
        result = await world.reconcile()
    [line] = [e for e in logs if e["event"] == "InferenceReplica waiting"]
    assert line["key"] == "ns/chat-engine" and line["instance"] == "cache"
    assert line["waiting_on"] == ("the cache to show this process's last write of the replica "
                                  f"(cached resourceVersion {meta['resourceVersion']})")
    assert result.requeue_after == CACHE_LAG_REQUEUE and world.api.writes == []
