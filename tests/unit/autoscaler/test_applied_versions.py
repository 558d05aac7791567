"""The autoscaler skips re-applying what it just applied while the cache has not shown that write yet, and
stays level-triggered: a cache that caught up with someone else's change, or lost the object, is applied
over again."""

from __future__ import annotations

import copy
from typing import Any

from ome.api import resources as r
from ome.api.resources import Resource
from ome.controllers.autoscaler import reconciler as rec
from tests.unit.autoscaler.test_reconciler import REQ, World, _put_isvc, _reconciler, _set_engine, resolvers

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


def test_entries_are_bounded_and_dropped_once_the_cache_catches_up() -> None:
    applied = rec.AppliedVersions(max_entries=2)
    for n in range(3):
        applied.record(("hpa", "demo", f"s{n}"), "h", {"metadata": {"resourceVersion": "10"}})
    assert len(applied) == 2 and applied.newer(("hpa", "demo", "s0"), {"metadata": {"resourceVersion": "1"}}) is None
    assert applied.newer(("hpa", "demo", "s2"), {"metadata": {"resourceVersion": "9"}}) == "h"
    assert applied.newer(("hpa", "demo", "s2"), {"metadata": {"resourceVersion": "10"}}) is None
    assert len(applied) == 1
