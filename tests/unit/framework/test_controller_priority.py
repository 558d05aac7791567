"""A primary object whose spec generation its status has not observed is reconciled before child events."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from ome.framework.controller import Controller, unobserved
from ome.framework.handlers import EventType, Obj
from ome.framework.reconcile import Request, Result


class FakeInformer:
    def __init__(self) -> None:
        self.handlers: list[Callable[[EventType, Obj, Obj | None], None]] = []
        self.has_synced = True

    def add_handler(self, fn: Callable[[EventType, Obj, Obj | None], None]) -> None:
        self.handlers.append(fn)

    def list(self) -> list[Obj]:
        return []

    def emit(self, event_type: EventType, obj: Obj, old: Obj | None = None) -> None:
        for fn in self.handlers:
            fn(event_type, obj, old)


def isvc(name: str, generation: int, observed: int | None) -> Obj:
    status = {} if observed is None else {"observedGeneration": observed}
    return {"metadata": {"name": name, "namespace": "ns", "generation": generation}, "status": status}


def pod(owner: str) -> Obj:
    return {"metadata": {"name": f"{owner}-pod", "namespace": "ns", "labels": {"owner": owner}}}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def reconcile(self, req: Request) -> Result:
        self.calls.append(req.name)
        return Result()


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., Controller]]:
    made: list[Controller] = []

    def factory(reconciler: Any) -> Controller:
        ctrl = Controller(f"test-{uuid.uuid4().hex[:8]}", reconciler)
        made.append(ctrl)
        return ctrl

    yield factory
    for ctrl in made:
        await ctrl.stop(grace_period=1)


def test_unobserved_compares_generation_with_status() -> None:
    assert unobserved(isvc("a", 2, 1))
    assert unobserved(isvc("a", 1, None)), "a new object has observed nothing"
    assert not unobserved(isvc("a", 2, 2))
    assert not unobserved({"metadata": {"name": "a"}}), "no generation: nothing to observe"
    assert not unobserved({"metadata": {"generation": "x"}, "status": {"observedGeneration": 1}})


async def test_a_spec_change_is_reconciled_before_a_backlog_of_child_events(
    make: Callable[..., Controller],
) -> None:
    rec = Recorder()
    primaries, pods = FakeInformer(), FakeInformer()
    ctrl = make(rec).for_(primaries).watches(
        pods, lambda p: [Request("ns", p["metadata"]["labels"]["owner"])]
    )
    for name in ("a", "b", "c"):  # pods of converged services moved first: a backlog of child events
        pods.emit("MODIFIED", pod(name), pod(name))
    primaries.emit("MODIFIED", isvc("relabelled", 3, 3), isvc("relabelled", 3, 3))  # observed: no hurry
    primaries.emit("MODIFIED", isvc("changed", 4, 3), isvc("changed", 3, 3))
    primaries.emit("ADDED", isvc("new", 1, None))
    primaries.emit("MODIFIED", isvc("b", 2, 1), isvc("b", 1, 1))  # raised out of the backlog
    await ctrl.start()
    for _ in range(100):
        if len(rec.calls) == 6:
            break
        await _tick()
    assert rec.calls == ["changed", "new", "b", "a", "c", "relabelled"]


async def test_a_deleted_primary_is_not_urgent(make: Callable[..., Controller]) -> None:
    rec = Recorder()
    primaries, pods = FakeInformer(), FakeInformer()
    ctrl = make(rec).for_(primaries).watches(pods, lambda p: [Request("ns", p["metadata"]["labels"]["owner"])])
    pods.emit("ADDED", pod("a"))
    primaries.emit("DELETED", isvc("gone", 2, 1))
    await ctrl.start()
    for _ in range(100):
        if len(rec.calls) == 2:
            break
        await _tick()
    assert rec.calls == ["a", "gone"]


async def _tick() -> None:
    await asyncio.sleep(0)
