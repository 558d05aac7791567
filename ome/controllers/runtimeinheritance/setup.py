"""Wiring of the runtime inheritance status controller.

A runtime's chain depends on the names and `ome.io/inherit-from` annotations of the runtimes above it,
so an event of a runtime (created, deleted, or its annotation changed) reconciles it and every runtime
below it: for a ClusterServingRuntime, in every namespace; for a ServingRuntime, in its namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from ome.api.resources import CLUSTER_SERVING_RUNTIMES, SERVING_RUNTIMES
from ome.controllers.runtimeinheritance.reconciler import InheritanceStatusReconciler
from ome.framework.cache import SharedCache
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request
from ome.resolution import runtime_inheritance as inheritance

Obj = dict[str, Any]
NAME: Final = "servingruntime-inheritance"
EVENT_SOURCE: Final = "servingruntime-inheritance-controller"
CLUSTER: Final = inheritance.CLUSTER_SERVING_RUNTIME
NAMESPACED: Final = inheritance.SERVING_RUNTIME


def _chain_relevant(event_type: str, obj: Obj, old: Obj | None) -> bool:
    # Status writes (ours) change neither names nor parents: they wake nothing.
    if old is None or event_type != "MODIFIED":
        return True
    return inheritance.parent_name(obj) != inheritance.parent_name(old)


def _all(cache: SharedCache) -> list[inheritance.Link]:
    links = [inheritance.Link(CLUSTER, o) for o in cache.list(CLUSTER_SERVING_RUNTIMES)]
    return links + [inheritance.Link(NAMESPACED, o) for o in cache.list(SERVING_RUNTIMES)]


def self_and_descendants(cache: SharedCache, kind: str) -> Callable[[Obj], Iterable[Request]]:
    def mapper(obj: Obj) -> Iterable[Request]:
        meta = obj["metadata"]
        namespace = meta.get("namespace") if kind == inheritance.SERVING_RUNTIME else None
        below = inheritance.descendants(_all(cache), kind, meta["name"], namespace)
        return [Request(namespace or "", meta["name"]),
                *(Request(link.obj["metadata"].get("namespace") or "", link.name) for link in below)]

    return mapper


def add_to_manager(manager: Manager) -> Controller:
    cache = manager.cache
    recorder = manager.event_recorder(EVENT_SOURCE)
    controller = Controller(NAME, InheritanceStatusReconciler(cache, manager.client, recorder))
    cluster = cache.informer_for(CLUSTER_SERVING_RUNTIMES)
    namespaced = cache.informer_for(SERVING_RUNTIMES)
    controller.for_(cluster, _chain_relevant)
    controller.for_(namespaced, _chain_relevant)
    for informer, kind in ((cluster, CLUSTER), (namespaced, NAMESPACED)):
        controller.watches(informer, self_and_descendants(cache, kind), _chain_relevant)
    manager.add_controller(controller)
    return controller


__all__ = ["NAME", "add_to_manager", "self_and_descendants"]
