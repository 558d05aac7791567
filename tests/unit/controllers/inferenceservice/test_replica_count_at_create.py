"""An OMENative replica is created with its count (the autoscaler writes no /scale after the create), and
later applies keep the count the replica holds, under a resourceVersion precondition."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import converge
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("fixed_resolution")
REQ = Request("demo", "llama")


class Recording:
    """The world's writer, keeping each InferenceReplica apply body as sent."""

    def __init__(self, world: FakeWorld) -> None:
        self.world = world
        self.bodies: list[Obj] = []

    async def apply(self, res: Resource, obj: Obj, **kwargs: Any) -> Obj:
        if obj["kind"] == "InferenceReplica":
            self.bodies.append(copy.deepcopy(obj))
        return await self.world.apply(res, obj, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.world, name)


def _replica(world: FakeWorld) -> Obj:
    found = world.get_or_none(r.INFERENCE_REPLICAS, "llama-engine", "demo")
    assert found is not None
    return found


async def test_the_replica_is_created_with_min_replicas_and_a_noop_writes_nothing() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc(deploymentMode="OMENative", engine={"minReplicas": 2,
                                                                                       "maxReplicas": 4}))
    writer = Recording(world)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer)
    await reconciler.reconcile(REQ)
    assert [b["spec"].get("replicas") for b in writer.bodies] == [2]
    assert "resourceVersion" not in writer.bodies[0]["metadata"]  # a create has no precondition
    assert _replica(world)["spec"]["replicas"] == 2
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert [w for w in world.writes if w[1] == "InferenceReplica"] == []  # the count is not in the hash


async def test_a_later_apply_keeps_the_count_the_replica_holds_under_a_precondition() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc(deploymentMode="OMENative"))
    writer = Recording(world)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer)
    await reconciler.reconcile(REQ)
    assert writer.bodies[0]["spec"]["replicas"] == 1
    replica = _replica(world)
    replica["spec"]["replicas"] = 3  # the HPA scaled it
    replica["metadata"]["resourceVersion"] = "777"
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None
    isvc["metadata"]["generation"] = 2  # a spec change: the replica's desired hash moves
    isvc["spec"]["engine"]["annotations"] = {"example.com/team": "a"}
    await reconciler.reconcile(REQ)
    body = writer.bodies[-1]
    assert len(writer.bodies) == 2
    assert (body["spec"]["replicas"], body["metadata"]["resourceVersion"]) == (3, "777")


def test_a_count_the_cached_object_lacks_is_not_sent_and_needs_no_precondition() -> None:
    stamped = converge.stamp({"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
                              "metadata": {"name": "x", "namespace": "demo"}, "spec": {"component": "engine"}})
    cached = {"metadata": {"name": "x", "namespace": "demo", "resourceVersion": "5"},
              "spec": {"component": "engine"}}
    body = converge.with_create_only(stamped, cached, {"spec": {"replicas": 2}})
    assert "replicas" not in body["spec"] and "resourceVersion" not in body["metadata"]
    created = converge.with_create_only(stamped, None, {"spec": {"replicas": 2}})
    assert created["spec"]["replicas"] == 2
    assert "replicas" not in stamped["spec"]  # the stamped desired object is left as it was


@pytest.mark.parametrize("teardown_runs", [True, False])
async def test_the_replica_carries_the_teardown_finalizer_from_its_create_when_its_controller_runs(
    teardown_runs: bool,
) -> None:
    # The InferenceReplica controller's first pass then has no finalizer patch to make; without that
    # controller in the manager nothing would take the finalizer off, so none is put on.
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc(deploymentMode="OMENative"))
    writer = Recording(world)
    reconciler = make_reconciler(world, FakeRecorder(), writer=writer, replica_teardown=teardown_runs)
    await reconciler.reconcile(REQ)
    expected = ["ome.io/ir-teardown"] if teardown_runs else None
    assert writer.bodies[0]["metadata"].get("finalizers") == expected
    assert _replica(world)["metadata"].get("finalizers") == expected
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert [w for w in world.writes if w[1] == "InferenceReplica"] == []  # settled: no second apply
