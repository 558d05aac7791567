"""Wiring: the migration controller, keyed by InferenceService, on the replica controllers' informers."""

from __future__ import annotations

from collections.abc import Iterable

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_REPLICAS, INFERENCE_SERVICES, OME_GROUP, PODS
from ome.controllers.migration.reconciler import MigrationReconciler, MigrationSettings
from ome.controllers.migration.reset import ResetReconciler
from ome.controllers.migration.stuck import StuckDeletionReconciler, replicas_on_node, services_on_node
from ome.controllers.node_view import node_informer, ready_changed
from ome.framework import transforms
from ome.framework.controller import Controller
from ome.framework.handlers import Obj
from ome.framework.manager import Manager
from ome.framework.reconcile import Request
from ome.omenative import force_delete
from ome.omenative import instance_names as names
from ome.omenative import migration_request as mr

CHILD_SELECTOR = {names.MANAGED_BY_LABEL: names.MANAGED_BY}
"""The same selector and transform as the InferenceReplica controller's, so the informers are shared."""


def parent_of_replica(obj: Obj) -> Iterable[Request]:
    parent = ((obj.get("spec") or {}).get("parentRef") or {}).get("name")
    return [Request(obj["metadata"]["namespace"], parent)] if parent else []


def parent_of_pod(obj: Obj) -> Iterable[Request]:
    isvc = (obj["metadata"].get("labels") or {}).get(names.ISVC_LABEL)
    return [Request(obj["metadata"]["namespace"], isvc)] if isvc else []


def has_requests(obj: Obj) -> bool:
    return bool(mr.request_keys(obj["metadata"].get("annotations")))


def add_to_manager(manager: Manager, settings: MigrationSettings) -> Controller:
    cache = manager.cache
    services = cache.informer_for(INFERENCE_SERVICES)
    replicas = cache.informer_for(INFERENCE_REPLICAS)
    pods = cache.informer_for(PODS, label_selector=CHILD_SELECTOR, transform=transforms.slim_pod)
    cache.informer_for(CONTROLLER_REVISIONS, label_selector=CHILD_SELECTOR)
    recorder = manager.event_recorder(settings.event_component)
    reconciler = MigrationReconciler(manager.client, cache, settings, recorder=recorder)
    controller = (
        Controller("migration", reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles)
        .for_(services)
        .watches(replicas, parent_of_replica)
        .watches(pods, parent_of_pod)
    )
    if settings.auto_migrate_attempts:
        # Relocation reads the nodes the pods run on, and a node that goes away or NotReady is its cue:
        # waiting for some pod event instead may wait until pod GC has deleted the evidence.
        controller.watches(node_informer(cache), services_on_node(cache), ready_changed)
    manager.add_controller(controller)
    resets = Controller("instancereset", ResetReconciler(manager.client, cache, recorder=recorder,
                                                         columnar=settings.columnar))
    manager.add_controller(resets.for_(replicas))
    if settings.force_delete is not None:
        nodes = node_informer(cache)
        stuck = StuckDeletionReconciler(manager.client, cache, force_delete.Settings(*settings.force_delete),
                                        recorder=recorder)
        manager.add_controller(
            Controller("stuckdeletion", stuck)
            .for_(replicas)
            .owns(pods, OME_GROUP, "InferenceReplica")
            .watches(nodes, replicas_on_node(cache))
        )
    return controller
