"""The two OMENative reconcilers write one replica status: under its lock (framework/written.py) the
rollout plans and writes without losing a race to the InferenceReplica reconciler's write, and it plans
from that write's answer rather than waiting for the watch event. A SurgeThenDrain drain closes the old
pod's gate and deletes the pod in the same pass, the delete after the close."""

from __future__ import annotations

import asyncio
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.framework import errors
from ome.framework.written import WrittenVersions
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.controllers.instancerollout.test_reconciler import REQ, change_image, rollout, rows, start

Obj = dict[str, Any]


def _obj(version: int) -> Obj:
    return {"metadata": {"uid": "u1", "resourceVersion": str(version)}, "status": {"v": version}}


async def test_newest_is_a_write_made_under_the_lock_until_the_cache_shows_it() -> None:
    written = WrittenVersions()
    written.track(INFERENCE_REPLICAS)
    cached = _obj(5)
    written.record(INFERENCE_REPLICAS, _obj(6))  # no one holds the lock: only the version is kept
    assert written.newest(cached) is None and written.behind(cached)
    async with written.lock("u1"):
        written.record(INFERENCE_REPLICAS, _obj(7))
    assert written.newest(cached) == _obj(7)
    assert written.newest(_obj(7)) is None, "the cache caught up"
    # a later write of ours that was not kept: wait for its event instead
    written.record(INFERENCE_REPLICAS, _obj(9))
    assert written.newest(cached) is None and written.behind(cached)
    assert not written.behind(_obj(9))
    async with written.lock("u1"):
        written.record(INFERENCE_REPLICAS, _obj(10))
    assert written.newest(_obj(9)) == _obj(10)
    assert not written.behind(_obj(10)) and written.newest(_obj(9)) is None, "forgotten with the version"


def _slow_status_writes(world: World, timeline: list[str]) -> asyncio.Event:
    """Gives the replica controller counts to write, keeps each replica status write in flight for five
    turns of the loop and logs its start and end in `timeline`; the event is set when one starts."""
    for cond in world.pods()["chat-engine-2-default-0"]["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["status"] = "False"
    world.api.yields["chat-engine"] = 5
    real = world.client.update_status
    started = asyncio.Event()

    async def logged(res: Any, obj: Obj) -> Obj:
        timeline.append("status start")
        started.set()
        try:
            return await real(res, obj)
        finally:
            timeline.append("status end")

    world.client.update_status = logged  # type: ignore[method-assign]
    return started


async def test_the_two_reconcilers_never_have_status_writes_in_flight_at_once() -> None:
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    change_image(world, "img:2")
    await world.reconcile()  # the update revision
    timeline: list[str] = []
    started = _slow_status_writes(world, timeline)
    rollout_pass = asyncio.create_task(mover.reconcile(REQ))
    await started.wait()
    await world.reconcile()  # its status write comes while the rollout's is in flight
    await rollout_pass
    assert timeline == ["status start", "status end"] * 2, "one status write at a time"
    assert "chat-engine-0-default-1" in world.pods(), "the surge started"


async def _surge_serving(world: World) -> Any:
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    change_image(world, "img:2")
    await world.reconcile()
    await mover.reconcile(REQ)  # the surge pod is made
    world.kubelet()
    await mover.reconcile(REQ)  # its gate opens
    world.kubelet()  # it serves
    return mover


async def test_the_drain_closes_the_old_gate_then_deletes_the_pod_in_one_pass() -> None:
    world = World()
    mover = await _surge_serving(world)
    world.api.writes.clear()
    await mover.reconcile(REQ)
    writes = [(verb, name) for verb, _, name in world.api.writes]
    old = "chat-engine-0-default-0"
    assert writes.index(("patch/status", old)) < writes.index(("delete", old)), writes
    [row] = [r for r in rows(world) if r["index"] == 0]
    assert row["operation"]["step"] == "SurgeDrain"
    await mover.reconcile(REQ)  # the cache shows the close and the deletion: the update finishes
    [row] = [r for r in rows(world) if r["index"] == 0]
    assert row["phase"] == "Ready" and row["activeOrdinal"] == 1


async def test_no_delete_when_the_gate_did_not_close() -> None:
    world = World()
    mover = await _surge_serving(world)
    old = "chat-engine-0-default-0"
    real_patch = world.client.patch

    async def refuse_close(res: Any, name: str, patch: Obj, *args: Any, **kwargs: Any) -> Obj:
        if res is PODS and name == old:
            raise errors.ApiError(500, "InternalError", "etcd timeout")
        return await real_patch(res, name, patch, *args, **kwargs)

    world.client.patch = refuse_close  # type: ignore[method-assign]
    world.api.writes.clear()
    try:
        await mover.reconcile(REQ)
    except errors.ApiError:
        pass
    assert ("delete", "Pod", old) not in world.api.writes and old in world.pods()
    world.client.patch = real_patch  # type: ignore[method-assign]
    world.api.writes.clear()
    await mover.reconcile(REQ)  # the retry closes the gate (not skipped as made) and drains it
    writes = [(verb, name) for verb, _, name in world.api.writes]
    assert writes.index(("patch/status", old)) < writes.index(("delete", old)), writes


async def test_a_recorded_steps_pod_write_does_not_wait_for_the_other_status_write() -> None:
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    change_image(world, "img:2")
    await world.reconcile()
    await mover.reconcile(REQ)  # the surge pod is made; its containers get ready
    world.kubelet()
    timeline: list[str] = []
    started = _slow_status_writes(world, timeline)
    real_patch = world.client.patch

    async def patch(res: Any, name: str, body: Obj, *args: Any, **kwargs: Any) -> Obj:
        timeline.append(f"patch {name}")
        return await real_patch(res, name, body, *args, **kwargs)

    world.client.patch = patch  # type: ignore[method-assign]
    replica_pass = asyncio.create_task(world.reconcile())
    await started.wait()
    await mover.reconcile(REQ)
    await replica_pass
    gate = timeline.index("patch chat-engine-0-default-1")
    assert gate < timeline.index("status end"), timeline  # the gate opened while the write was in flight
    assert timeline.count("patch chat-engine-0-default-1") == 1, "made once, not again under the lock"
