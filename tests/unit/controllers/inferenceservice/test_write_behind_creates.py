"""A first pass's creates run beside it (framework/write_behind.py): the pass returns before the slow
Service creates are answered, a pass meanwhile starts no second create of them, one with no room is made
inline, a create that failed is made inline by the next pass, whose error takes the controller's usual
path, and no Ready is written before the objects exist."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ome.api import resources as r
from ome.framework import errors
from ome.framework.reconcile import Request
from ome.framework.write_behind import WriteBehind
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.controllers.inferenceservice.test_reconciler import resolvers  # noqa: F401 - fixture
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")
ENGINE_SERVICE = ("services", "demo", "llama-engine")


class Writer:
    """The world's writer, with the applies of `held` kinds answered when `gate` opens and `fail`
    raising once for its (kind, name)."""

    def __init__(
        self, world: FakeWorld, held: set[str], fail: dict[tuple[str, str], Exception] | None = None
    ) -> None:
        self.world, self.held, self.fail = world, held, dict(fail or {})
        self.gate = asyncio.Event()
        self.asked: list[tuple[str, str]] = []

    async def apply(self, res: r.Resource, obj: Obj, **kwargs: Any) -> Obj:
        if kwargs.get("subresource") is None:
            self.asked.append((res.kind, obj["metadata"]["name"]))
        if res.kind in self.held:
            await self.gate.wait()
        if (error := self.fail.pop((res.kind, obj["metadata"]["name"]), None)) is not None:
            raise error
        return await self.world.apply(res, obj, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> Any:
        return await self.world.delete(*args, **kwargs)


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_the_pass_returns_before_its_service_creates_are_answered() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    writer, behind = Writer(world, held={"Service"}), WriteBehind()
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, write_behind=behind)
    await reconciler.reconcile(REQ)  # would wait for the gate if the creates were inline
    services = sorted(name for kind, name in writer.asked if kind == "Service")
    assert services == ["llama", "llama-engine"]
    assert behind.in_flight(("services", "demo", "llama-engine")) is not None
    await settle()
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is not None  # not held: created
    assert world.get_or_none(r.SERVICES, "llama-engine", "demo") is None

    asked = len(writer.asked)
    await reconciler.reconcile(REQ)  # e.g. the Deployment's event: its Services are on their way
    assert sorted(name for kind, name in writer.asked[asked:] if kind == "Service") == []

    writer.gate.set()
    for name in ("llama", "llama-engine"):
        await behind.wait(("services", "demo", name))
    assert world.get_or_none(r.SERVICES, "llama-engine", "demo") is not None
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert [w for w in world.writes if w[0] == "apply"] == []


async def test_a_failed_create_is_made_inline_by_the_next_pass_and_its_error_raised() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    denied = errors.Forbidden(403, "Forbidden", 'admission webhook "svc.example.com" denied the request')
    writer = Writer(world, held=set(), fail={("Service", "llama-engine"): denied})
    behind, requeued = WriteBehind(), []
    behind.bind(requeued.append, lambda owner: None)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, write_behind=behind)
    await reconciler.reconcile(REQ)
    await behind.wait(ENGINE_SERVICE)
    assert requeued == [REQ]
    assert world.get_or_none(r.SERVICES, "llama-engine", "demo") is None

    writer.fail["Service", "llama-engine"] = denied  # still refused: the pass now says so itself
    with pytest.raises(errors.Forbidden, match="denied the request"):
        await reconciler.reconcile(REQ)
    await reconciler.reconcile(REQ)  # allowed: created inline, and beside a pass again from now on
    assert world.get_or_none(r.SERVICES, "llama-engine", "demo") is not None
    assert not behind.failed(ENGINE_SERVICE)


async def test_a_create_with_no_room_is_made_inline() -> None:
    """The pass waits then, as before: that paces the passes at the allocator's speed."""
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    writer, behind = Writer(world, held={"Service"}), WriteBehind(limit=1)
    behind.bind(lambda owner: None, lambda owner: None)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, write_behind=behind)
    task = asyncio.create_task(reconciler.reconcile(REQ))
    await settle()
    assert behind.in_flight_count == 1
    assert not task.done()  # a held Service create found no room: the pass waits for it
    writer.gate.set()
    await task
    for name in ("llama", "llama-engine"):
        await behind.wait(("services", "demo", name))
    assert all(world.get_or_none(r.SERVICES, name, "demo") is not None for name in ("llama", "llama-engine"))
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is not None


async def test_no_ready_is_written_while_its_services_are_on_their_way() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    writer, behind = Writer(world, held={"Service"}), WriteBehind()
    behind.bind(lambda owner: None, lambda owner: None)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, write_behind=behind)
    await reconciler.reconcile(REQ)
    await settle()
    dep = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert dep is not None
    dep["status"] = {"replicas": 1, "availableReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
    world.writes.clear()
    await reconciler.reconcile(REQ)  # the Deployment is available, its Services are not there yet
    assert ("apply/status", "InferenceService", "llama") not in world.writes
    writer.gate.set()
    for name in ("llama", "llama-engine"):
        await behind.wait(("services", "demo", name))
    await reconciler.reconcile(REQ)
    svc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert svc is not None
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in svc["status"]["conditions"])
