"""Wiring: the rollout coordination controller, keyed by InferenceService, on the shared informers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.controllers.rolloutcoordination.reconciler import RolloutCoordinationReconciler
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request
from ome.omenative.rollout_budget import OperatorDefault

Obj = dict[str, Any]
NAME = "rolloutcoordination"


def parent_request(replica: Obj) -> Iterable[Request]:
    parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
    return [Request(replica["metadata"]["namespace"], parent)] if parent else []


def add_to_manager(
    manager: Manager, *, defaults: Mapping[str, OperatorDefault] | None = None, ratio_tolerance: int = 5,
    max_concurrent_reconciles: int = 1,
) -> Controller:
    cache = manager.cache
    isvcs = cache.informer_for(INFERENCE_SERVICES)
    replicas = cache.informer_for(INFERENCE_REPLICAS)
    recorder = manager.event_recorder("ome-inferenceservice-controller")
    reconciler = RolloutCoordinationReconciler(
        manager.client, cache, defaults=defaults, ratio_tolerance=ratio_tolerance, recorder=recorder
    )
    controller = (
        Controller(NAME, reconciler, max_concurrent_reconciles=max_concurrent_reconciles)
        .for_(isvcs)
        .watches(replicas, parent_request)
    )
    manager.add_controller(controller)
    return controller
