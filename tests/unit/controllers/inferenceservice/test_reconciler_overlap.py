"""What keeps a reconcile cheap at scale: a component's objects and the external Service are applied
together, the status after them while the service starts and beside them once it runs; children are
read through the owner index, not a namespace scan."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import component_writes
from ome.controllers.inferenceservice.children import CHILD_RESOURCES
from ome.framework import errors
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from ome.framework.store import OWNER_INDEX
from ome.resolution import modes, workloads
from tests.unit.controllers.inferenceservice.fakes import (
    FakeRecorder,
    FakeWorld,
    established,
    make_reconciler,
)
from tests.unit.resolution import builders

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("fixed_resolution")


class OverlapWriter:
    """The world's writer, noting how many applies were in flight at once and their order."""

    def __init__(self, world: FakeWorld) -> None:
        self.world = world
        self.in_flight = 0
        self.most = 0
        self.order: list[tuple[str, int]] = []

    async def apply(self, res: Resource, obj: Obj, **kwargs: Any) -> Obj:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        self.order.append((obj["kind"] + ("/status" if kwargs.get("subresource") else ""), self.in_flight))
        for _ in range(3):  # a round trip: the others get to start theirs meanwhile
            await asyncio.sleep(0)
        try:
            return await self.world.apply(res, obj, **kwargs)
        finally:
            self.in_flight -= 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.world, name)


async def test_children_are_applied_in_one_round_and_the_status_after_them() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, established(builders.isvc()))
    writer = OverlapWriter(world)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, now=datetime(2026, 1, 1, tzinfo=UTC))
    await reconciler.reconcile(Request("demo", "llama"))
    # The Deployment, its Service and the external Service were all in flight together ...
    assert writer.most == 3
    # ... and the status was written alone, once they were done.
    assert writer.order[-1] == ("InferenceService/status", 1)
    assert sorted(kind for kind, _ in writer.order[:-1]) == ["Deployment", "Service", "Service"]


async def test_children_are_read_through_the_owner_index() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reads: list[tuple[str, Any]] = []
    real_list = world.list

    def list_(res: Resource, namespace: str | None = None, **kwargs: Any) -> list[Obj]:
        reads.append((res.name, kwargs.get("index")))
        return real_list(res, namespace, **kwargs)

    world.list = list_  # type: ignore[method-assign]
    reconciler = make_reconciler(world, FakeRecorder(), now=datetime(2026, 1, 1, tzinfo=UTC))
    await reconciler.reconcile(Request("demo", "llama"))
    uid = builders.isvc()["metadata"]["uid"]
    children = [index for name, index in reads if name in {res.name for res in CHILD_RESOURCES}]
    assert children and all(index == (OWNER_INDEX, uid) for index in children)


def _change_engine(world: FakeWorld, **annotations: str) -> None:
    """A spec change of a running service: a new engine annotation, the generation one up."""
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None
    isvc["spec"]["engine"].setdefault("annotations", {}).update(annotations)
    isvc["metadata"]["generation"] = int(isvc["metadata"].get("generation") or 1) + 1


async def test_a_running_service_writes_its_status_beside_the_childrens_applies() -> None:
    """One round trip per spec change: the status (its new observedGeneration) is in flight with the
    children's applies, not after them."""
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, established(builders.isvc()))
    reconciler = make_reconciler(world, FakeRecorder(), now=datetime(2026, 1, 1, tzinfo=UTC))
    await reconciler.reconcile(Request("demo", "llama"))  # created, status reported
    _change_engine(world, churn="1")
    writer = OverlapWriter(world)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, now=datetime(2026, 1, 1, tzinfo=UTC))
    await reconciler.reconcile(Request("demo", "llama"))
    assert sorted(kind for kind, _ in writer.order) == ["Deployment", "InferenceService/status", "Service"]
    assert writer.most == 3, writer.order  # all three in flight at once; a pass that waited: 2, then 1
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo") or {}
    assert isvc["status"]["observedGeneration"] == isvc["metadata"]["generation"]
    deployment = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") or {}
    assert deployment["spec"]["template"]["metadata"]["annotations"]["churn"] == "1"


async def test_a_component_failing_beside_the_status_write_reports_again_and_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The status written beside the writes assumed they succeed; a component that fails meanwhile gets
    the status a pass that waited would have written (its condition), and the pass fails as before."""
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, established(builders.isvc()))
    reconciler = make_reconciler(world, FakeRecorder(), now=datetime(2026, 1, 1, tzinfo=UTC))
    await reconciler.reconcile(Request("demo", "llama"))
    _change_engine(world, churn="2")
    writes: list[Obj] = []
    real_apply = world.apply

    async def apply(res: Resource, obj: Obj, **kwargs: Any) -> Obj:
        if kwargs.get("subresource") == "status":
            writes.append(obj["status"])
        return await real_apply(res, obj, **kwargs)

    world.apply = apply  # type: ignore[method-assign]

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise modes.UnreconcilableModeError("engine", "VirtualDeployment")

    monkeypatch.setattr(workloads, "render_component", broken)
    with pytest.raises(component_writes.ComponentError, match="not supported for the engine component"):
        await reconciler.reconcile(Request("demo", "llama"))
    assert len(writes) == 2, "the status beside the writes, then the one from what was done"
    assert writes[0] != writes[1]
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo") or {}
    assert isvc["status"] == writes[1] or all(isvc["status"].get(k) == v for k, v in writes[1].items())


async def test_a_child_write_refused_beside_the_status_write_takes_the_status_back() -> None:
    """A write refused by the apiserver fails the pass before any status in a pass that waits; beside it,
    the status already written goes back to what the pass read, so observedGeneration does not claim a
    generation whose objects were not written."""
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, established(builders.isvc()))
    reconciler = make_reconciler(world, FakeRecorder(), now=datetime(2026, 1, 1, tzinfo=UTC))
    await reconciler.reconcile(Request("demo", "llama"))
    before = (world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo") or {})["status"]
    _change_engine(world, churn="3")
    statuses: list[int] = []
    real_apply = world.apply

    async def apply(res: Resource, obj: Obj, **kwargs: Any) -> Obj:
        if kwargs.get("subresource") == "status":
            statuses.append(obj["status"]["observedGeneration"])
        elif obj["kind"] == "Deployment":
            await asyncio.sleep(0)
            raise errors.ApiError(422, "Invalid", "Deployment.apps \"llama-engine\" is invalid")
        return await real_apply(res, obj, **kwargs)

    world.apply = apply  # type: ignore[method-assign]
    with pytest.raises(errors.ApiError, match="is invalid"):
        await reconciler.reconcile(Request("demo", "llama"))
    assert statuses == [2, 1], "written beside the writes, then taken back"
    after = (world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo") or {})["status"]
    assert after["observedGeneration"] == before["observedGeneration"] == 1


async def test_a_refused_status_write_beside_the_writes_lets_them_finish_and_fails_the_pass() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, established(builders.isvc()))
    reconciler = make_reconciler(world, FakeRecorder(), now=datetime(2026, 1, 1, tzinfo=UTC))
    await reconciler.reconcile(Request("demo", "llama"))
    _change_engine(world, churn="4")
    real_apply = world.apply

    async def apply(res: Resource, obj: Obj, **kwargs: Any) -> Obj:
        if kwargs.get("subresource") == "status":
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        for _ in range(3):  # still in flight when the status write is refused
            await asyncio.sleep(0)
        return await real_apply(res, obj, **kwargs)

    world.apply = apply  # type: ignore[method-assign]
    with pytest.raises(errors.Conflict):
        await reconciler.reconcile(Request("demo", "llama"))
    deployment = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") or {}
    assert deployment["spec"]["template"]["metadata"]["annotations"]["churn"] == "4"
