"""A first pass's creates run beside it (framework/write_behind.py): the pass returns before the slow
Service creates are answered, a pass meanwhile starts no second create of them, and a create that
failed is made inline by the next pass, whose error takes the controller's usual path."""

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


class Writer:
    """The world's writer, with the creates of `held` kinds answered when `gate` opens and `fail`
    raising once for its kind."""

    def __init__(self, world: FakeWorld, held: set[str], fail: dict[str, Exception] | None = None) -> None:
        self.world, self.held, self.fail = world, held, dict(fail or {})
        self.gate = asyncio.Event()
        self.asked: list[tuple[str, str]] = []

    async def apply(self, res: r.Resource, obj: Obj, **kwargs: Any) -> Obj:
        if kwargs.get("subresource") is None:
            self.asked.append((res.kind, obj["metadata"]["name"]))
        if res.kind in self.held:
            await self.gate.wait()
        if (error := self.fail.pop(res.kind, None)) is not None:
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
    denied = errors.ApiError(422, "Invalid", "Deployment.apps \"llama-engine\" is invalid")
    writer = Writer(world, held=set(), fail={"Deployment": denied})
    behind, requeued = WriteBehind(), []
    behind.bind(requeued.append)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, write_behind=behind)
    await reconciler.reconcile(REQ)
    await behind.wait(("deployments", "demo", "llama-engine"))
    assert requeued == [REQ]
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None

    writer.fail["Deployment"] = denied  # still invalid: the pass now says so itself
    with pytest.raises(errors.ApiError, match="is invalid"):
        await reconciler.reconcile(REQ)
    await reconciler.reconcile(REQ)  # fixed: created inline, and background creates allowed again
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is not None
    assert not behind.failed(("deployments", "demo", "llama-engine"))
