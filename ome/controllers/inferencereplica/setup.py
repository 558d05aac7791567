"""Wiring: the informers the InferenceReplica controller reads and the controller itself."""

from __future__ import annotations

from collections.abc import Callable

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_REPLICAS, OME_GROUP, PODS, SERVICES
from ome.controllers import quota_view
from ome.controllers.inferencereplica.reconciler import InferenceReplicaReconciler
from ome.framework import transforms
from ome.framework.controller import Controller
from ome.framework.handlers import EventType, Obj
from ome.framework.manager import Manager
from ome.omenative import instance_names as names
from ome.omenative import podmonitor
from ome.omenative.settings import InferenceReplicaSettings

CHILD_SELECTOR = {names.MANAGED_BY_LABEL: names.MANAGED_BY}
"""Children are found by label, so the pod and Service informers never hold other workloads."""


def add_to_manager(manager: Manager, settings: InferenceReplicaSettings) -> Controller:
    cache = manager.cache
    replicas = cache.informer_for(INFERENCE_REPLICAS)
    pods = cache.informer_for(PODS, label_selector=CHILD_SELECTOR, transform=transforms.slim_pod)
    svcs = cache.informer_for(SERVICES, label_selector=CHILD_SELECTOR)
    revs = cache.informer_for(CONTROLLER_REVISIONS, label_selector=CHILD_SELECTOR)
    recorder = manager.event_recorder(settings.serving_gate_controller)
    behind = manager.write_behind()  # Service creates run beside the pass (write_behind.py)
    reconciler = InferenceReplicaReconciler(manager.client, cache, settings, recorder=recorder,
                                            write_behind=behind)
    pods.add_handler(expectation_observer(reconciler))
    controller = (
        Controller(
            "inferencereplica", reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles
        )
        .for_(replicas)
        .owns(pods, OME_GROUP, "InferenceReplica")
        .owns(svcs, OME_GROUP, "InferenceReplica")
        .owns(revs, OME_GROUP, "InferenceReplica")
        # A quota raised (or freed) in a namespace: its Create/Restart operations waiting on
        # QuotaExceeded try their pods again now.
        .watches(quota_view.quota_informer(cache), lambda obj: quota_view.quota_waiters(cache, obj),
                 quota_view.quota_changed)
    )
    if settings.pod_monitor_served:
        # Only when the CRD was served at start: an informer on an unserved type never syncs.
        monitors = cache.informer_for(podmonitor.POD_MONITORS, label_selector=CHILD_SELECTOR)
        controller.owns(monitors, OME_GROUP, "InferenceReplica")
    behind.bind(controller.queue.add_rate_limited, controller.queue.add)
    controller.on_stop(behind.cancel)
    manager.add_controller(controller)
    return controller


def expectation_observer(
    reconciler: InferenceReplicaReconciler,
) -> Callable[[EventType, Obj, Obj | None], None]:
    """Lower the expectations as our pod creations and deletions reach the cache. Pod names repeat
    across incarnations, so an update whose uid changed (a relist that saw the old pod go and the new
    one come) is a deletion and a creation."""

    def handle(event_type: EventType, obj: Obj, old: Obj | None) -> None:
        owner = next((r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
        if owner is None or owner.get("kind") != "InferenceReplica":
            return
        key = (obj["metadata"]["namespace"], owner["name"])
        if event_type == "ADDED":
            reconciler.expectations.creation_observed(key)
        elif event_type == "DELETED":
            reconciler.expectations.deletion_observed(key)
        elif old is not None and old["metadata"].get("uid") != obj["metadata"].get("uid"):
            reconciler.expectations.deletion_observed(key)
            reconciler.expectations.creation_observed(key)

    return handle
