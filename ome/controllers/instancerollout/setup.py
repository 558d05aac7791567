"""Wiring: the Instance rollout controller, on the InferenceReplica controller's informers."""

from __future__ import annotations

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_REPLICAS, INFERENCE_SERVICES, OME_GROUP, PODS
from ome.controllers import quota_view
from ome.controllers.instancerollout.reconciler import InstanceRolloutReconciler
from ome.controllers.node_view import node_informer
from ome.controllers.rolloutcanary import hold as canary_hold
from ome.controllers.rolloutcoordination import observe as coordination
from ome.framework import transforms
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request
from ome.omenative import instance_names as names
from ome.omenative.rollout_settings import RolloutSettings

CHILD_SELECTOR = {names.MANAGED_BY_LABEL: names.MANAGED_BY}
"""The same selector and transform as the InferenceReplica controller's, so the informers are shared."""


def add_to_manager(manager: Manager, settings: RolloutSettings) -> Controller:
    cache = manager.cache
    replicas = cache.informer_for(INFERENCE_REPLICAS)
    pods = cache.informer_for(PODS, label_selector=CHILD_SELECTOR, transform=transforms.slim_pod)
    revs = cache.informer_for(CONTROLLER_REVISIONS, label_selector=CHILD_SELECTOR)
    node_informer(cache)  # operation.waiting NodeUnknown: a pod to replace on a node gone silent
    recorder = manager.event_recorder(settings.event_component)
    reconciler = InstanceRolloutReconciler(manager.client, cache, settings, recorder=recorder)
    controller = (
        Controller(
            "instancerollout", reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles
        )
        .for_(replicas)
        .owns(pods, OME_GROUP, "InferenceReplica")
        .owns(revs, OME_GROUP, "InferenceReplica")
        # A replica in a rollout group moves as its group's other replicas do (rolloutcoordination).
        .watches(replicas, lambda obj: [
            Request(obj["metadata"]["namespace"], name) for name in coordination.siblings(cache, obj)
        ])
        # A canary's step, rollback or hold is written on the InferenceService (rolloutcanary).
        .watches(cache.informer_for(INFERENCE_SERVICES), canary_hold.replica_requests)
        # A quota raised (or freed) in a namespace: its Instances waiting on QuotaExceeded try again now.
        .watches(quota_view.quota_informer(cache), lambda obj: quota_view.quota_waiters(cache, obj),
                 quota_view.quota_changed)
    )
    manager.add_controller(controller)
    return controller
