"""A pass that runs before the cache shows the previous pass's creates does not create them again; once
the informers have passed those creates, a child absent from the cache was deleted and is applied again."""

from __future__ import annotations

import copy
from typing import Any

from ome.api import resources as r
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from ome.resolution import traffic_policy as tp
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.controllers.inferenceservice.test_reconciler import resolvers  # noqa: F401 - fixture
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")


class LaggingCache(FakeWorld):
    """Children's applies land on the apiserver (`served`); the cache shows them only after `catch_up`."""

    def __init__(self) -> None:
        super().__init__()
        self.served: dict[Any, Obj] = {}

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None) -> Obj:
        if subresource is not None or res == r.INFERENCE_SERVICES:
            return await super().apply(res, obj, field_manager=field_manager, force=force,
                                       subresource=subresource)
        before = dict(self.objects)
        answer = await super().apply(res, obj, field_manager=field_manager, force=force)
        self.served.update({k: v for k, v in self.objects.items() if before.get(k) is not v})
        self.objects.clear()
        self.objects.update(before)  # the cache still shows what it showed
        return answer

    def catch_up(self) -> None:
        self.objects.update(copy.deepcopy(self.served))

    def child_applies(self) -> list[tuple[str, str]]:
        return [(kind, name) for verb, kind, name in self.writes if verb == "apply" and kind != "InferenceService"]


async def test_a_second_pass_before_the_cache_shows_the_creates_creates_nothing_again() -> None:
    world = LaggingCache()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    progress = {"seen": 0}
    reconciler = make_reconciler(world, FakeRecorder(), seen=lambda res, namespace, labels: progress["seen"])
    await reconciler.reconcile(REQ)
    created = sorted(world.child_applies())
    assert {kind for kind, _ in created} >= {"Deployment", "Service"}
    world.writes.clear()
    await reconciler.reconcile(REQ)  # a child's watch event, before the cache shows any create
    assert world.child_applies() == []
    progress["seen"] = max(int(o["metadata"]["resourceVersion"]) for o in world.served.values())
    await reconciler.reconcile(REQ)  # the informers passed every create and hold none: all deleted
    assert sorted(world.child_applies()) == created


async def test_once_the_cache_shows_the_creates_it_decides_alone() -> None:
    world = LaggingCache()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = make_reconciler(world, FakeRecorder(), seen=lambda res, namespace, labels: 0)
    await reconciler.reconcile(REQ)
    world.catch_up()
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.child_applies() == []
    engine = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert engine is not None
    engine["spec"]["template"]["spec"]["containers"][0]["image"] = "someone/else:latest"
    engine["metadata"]["resourceVersion"] = str(10**6)  # an edit after our apply
    await reconciler.reconcile(REQ)
    assert world.child_applies() == [("Deployment", "llama-engine")], "drift is still repaired"


async def test_without_the_informers_progress_an_absent_child_is_applied_again() -> None:
    world = LaggingCache()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = make_reconciler(world, FakeRecorder())
    await reconciler.reconcile(REQ)
    created = sorted(world.child_applies())
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert sorted(world.child_applies()) == created


async def test_the_traffic_policy_and_routes_are_not_applied_again_while_their_informers_lag(
    fixed_resolution: None,
) -> None:
    """A CRD's informer can lag for seconds (its watch cache still initialising after the CRD was
    installed): every pass meanwhile found the policy absent and applied it again."""
    from tests.unit.controllers.inferenceservice.test_reconciler_routing import (
        ENVOY,
        available,
        gateway_config,
    )

    world = LaggingCache()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = make_reconciler(world, FakeRecorder(), config=gateway_config(), routing_facts=ENVOY,
                                 seen=lambda res, namespace, labels: 0)
    await reconciler.reconcile(REQ)
    assert ("BackendTrafficPolicy", "llama") in world.child_applies()
    world.writes.clear()
    await reconciler.reconcile(REQ)  # nothing shown yet
    assert world.child_applies() == []
    world.objects.update({k: v for k, v in copy.deepcopy(world.served).items() if k[0] != tp.BACKEND_TRAFFIC_POLICIES.name})
    available(world)
    await reconciler.reconcile(REQ)  # the engine is available, the policy still not shown: only the routes
    assert {kind for kind, _ in world.child_applies()} == {"HTTPRoute"}
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.child_applies() == []
