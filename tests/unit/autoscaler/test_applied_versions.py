"""The autoscaler skips re-applying what it just applied while the cache has not shown that write yet, and
stays level-triggered: a cache that caught up with someone else's change, or lost the object, is applied
over again."""

from __future__ import annotations

import copy
from typing import Any

from ome.api import resources as r
from ome.api.resources import Resource
from ome.controllers.autoscaler import reconciler as rec
from tests.unit.autoscaler.test_reconciler import (
    CHART_CONFIG,
    NOW,
    REQ,
    FakeRecorder,
    World,
    _put_isvc,
    _reconciler,
    _set_engine,
    resolvers,
)

Obj = dict[str, Any]
__all__ = ["resolvers"]  # the autouse fixture that fixes model and runtime resolution


class StaleCache(World):
    """Applies land on the apiserver (`served`) and are counted; reads come from the cache, which shows a
    write only when `catch_up` is called: the pass an apply's watch event starts sees the cache as it was."""

    def __init__(self) -> None:
        super().__init__()
        self.served: dict[tuple[str, str, str], Obj] = {}
        self.applies: list[tuple[str, str]] = []

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None) -> Obj:
        if subresource == "status":
            return await super().apply(res, obj, field_manager=field_manager, force=force, subresource=subresource)
        key = (res.name, obj["metadata"]["namespace"], obj["metadata"]["name"])
        cached = self.objects.pop(key, None)
        answer = await super().apply(res, obj, field_manager=field_manager, force=force)
        if cached is not None:
            self.objects[key] = cached  # the cache still shows the older copy
        else:
            del self.objects[key]
        self.served[key] = answer
        self.applies.append((res.kind, obj["metadata"]["name"]))
        return answer

    def catch_up(self) -> None:
        self.objects.update(copy.deepcopy(self.served))

    def served_version(self) -> int:
        """The newest resourceVersion the apiserver has answered a write with."""
        return max(int(o["metadata"]["resourceVersion"]) for o in self.served.values())


def _with_progress(world: StaleCache, progress: dict[str, int]) -> rec.AutoscalerReconciler:
    """The autoscaler over `world`, told the informers' progress from `progress["seen"]`."""
    return rec.AutoscalerReconciler(
        reader=world, writer=world, recorder=FakeRecorder(),  # type: ignore[arg-type]
        config=CHART_CONFIG, features=rec.Features(keda_served=True, policy_enabled=False),
        entries=world.entries, clock=lambda: NOW, seen=lambda res, namespace, labels: progress["seen"],
    )


async def _world_with_scalers() -> tuple[StaleCache, rec.AutoscalerReconciler]:
    world = StaleCache()
    _put_isvc(world)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    world.catch_up()
    assert {kind for kind, _ in world.applies} == {"HorizontalPodAutoscaler", "PodDisruptionBudget"}
    world.applies.clear()
    return world, reconciler


async def test_two_passes_before_the_cache_shows_the_write_apply_once() -> None:
    world, reconciler = await _world_with_scalers()
    _set_engine(world, {"minReplicas": 2, "maxReplicas": 5})
    await reconciler.reconcile(REQ)
    first = list(world.applies)
    assert ("HorizontalPodAutoscaler", "llama-engine") in first
    await reconciler.reconcile(REQ)  # the HPA's watch event, before the cache shows either write
    assert world.applies == first
    world.catch_up()
    await reconciler.reconcile(REQ)
    assert world.applies == first


async def test_someone_elses_edit_seen_by_the_cache_is_applied_over() -> None:
    world, reconciler = await _world_with_scalers()
    _set_engine(world, {"minReplicas": 2, "maxReplicas": 5})
    await reconciler.reconcile(REQ)
    world.catch_up()
    world.applies.clear()
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None
    hpa["spec"]["maxReplicas"] = 9  # kubectl edit: a newer resourceVersion than our apply's
    hpa["metadata"]["resourceVersion"] = str(int(hpa["metadata"]["resourceVersion"]) + 100)
    await reconciler.reconcile(REQ)
    assert world.applies == [("HorizontalPodAutoscaler", "llama-engine")]


async def test_a_change_back_to_the_stale_cached_content_is_applied() -> None:
    world, reconciler = await _world_with_scalers()
    _set_engine(world, {"minReplicas": 2, "maxReplicas": 5})
    await reconciler.reconcile(REQ)
    world.applies.clear()
    _set_engine(world, {})  # back to what the (stale) cache still shows; the apiserver holds 2..5
    await reconciler.reconcile(REQ)
    assert ("HorizontalPodAutoscaler", "llama-engine") in world.applies
    served = world.served[(r.HPAS.name, "demo", "llama-engine")]
    assert (served["spec"]["minReplicas"], served["spec"]["maxReplicas"]) == (1, 3)


async def test_an_object_gone_from_the_cache_is_applied_again() -> None:
    world, reconciler = await _world_with_scalers()
    _set_engine(world, {"minReplicas": 2, "maxReplicas": 5})
    await reconciler.reconcile(REQ)
    world.applies.clear()
    del world.objects[(r.HPAS.name, "demo", "llama-engine")]  # deleted by someone: absent is not "older"
    await reconciler.reconcile(REQ)
    assert world.applies == [("HorizontalPodAutoscaler", "llama-engine")]


async def test_a_pass_before_the_cache_shows_the_creates_does_not_create_again() -> None:
    """A new service: the first pass creates the HPA and the budget; the HPA's watch event starts the
    next pass while the cache shows neither. With the informers' progress below the creates' versions the
    absent objects are ours in flight, not deleted ones; once the informers have passed those versions,
    an absent object was deleted after our create and is applied again."""
    world = StaleCache()
    _put_isvc(world)
    progress = {"seen": 0}
    reconciler = _with_progress(world, progress)
    await reconciler.reconcile(REQ)
    created = sorted(world.applies)
    assert [kind for kind, _ in created] == ["HorizontalPodAutoscaler", "PodDisruptionBudget"]
    await reconciler.reconcile(REQ)  # the cache shows neither create yet
    assert sorted(world.applies) == created, "no second create of the same content"
    progress["seen"] = world.served_version()
    await reconciler.reconcile(REQ)  # the informers passed both creates and hold neither: deleted
    assert sorted(world.applies) == sorted(created * 2)


class ShownDuringThePass(StaleCache):
    """The cache shows the creates (and the informers pass their versions) right after a pass has read the
    budget as absent: the event of an earlier write lands while this pass is still deciding."""

    def __init__(self, progress: dict[str, int]) -> None:
        super().__init__()
        self.progress = progress
        self.show_after_read = False

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        found = super().get_or_none(res, name, namespace)
        if res == r.PDBS and self.show_after_read:
            self.show_after_read = False
            self.catch_up()
            self.progress["seen"] = self.served_version()
        return found


async def test_a_create_shown_while_the_pass_decides_is_not_created_again() -> None:
    """The informers' progress is read as each write is decided, so the cache is too: an absent object
    read before its create's event, with the progress read after it, would look deleted and be
    created again (a 409 and a move of its fields, as measured at N=1,000)."""
    progress = {"seen": 0}
    world = ShownDuringThePass(progress)
    _put_isvc(world)
    reconciler = _with_progress(world, progress)
    await reconciler.reconcile(REQ)
    created = sorted(world.applies)
    assert [kind for kind, _ in created] == ["HorizontalPodAutoscaler", "PodDisruptionBudget"]
    world.show_after_read = True
    await reconciler.reconcile(REQ)
    assert sorted(world.applies) == created, "nothing created twice"
