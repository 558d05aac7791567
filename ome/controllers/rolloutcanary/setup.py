"""Wiring: the rollout run / canary controller (always: inline plans pin even with RolloutPolicy off) and,
when the RolloutPolicy CRD is served at startup, the RolloutPolicy status controller."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, ROLLOUT_POLICIES
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.rolloutcanary.reconciler import CanaryReconciler
from ome.controllers.rolloutpolicy.reconciler import RolloutPolicyStatusReconciler
from ome.framework.cache import SharedCache
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request
from ome.omenative.canary_prometheus import PrometheusClient

Obj = dict[str, Any]
NAME = "rolloutcanary"
POLICY_STATUS_NAME = "rolloutpolicy-status"


def _parent(replica: Obj) -> Iterable[Request]:
    parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
    return [Request(replica["metadata"]["namespace"], parent)] if parent else []


def _policy_users(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    def mapper(policy: Obj) -> Iterable[Request]:
        meta = policy["metadata"]
        for isvc in cache.list(INFERENCE_SERVICES, meta.get("namespace")):
            groups = ((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or []
            if any(((g or {}).get("policyRef") or {}).get("name") == meta["name"] for g in groups):
                yield Request(isvc["metadata"]["namespace"], isvc["metadata"]["name"])

    return mapper


def _policies_of(isvc: Obj) -> Iterable[Request]:
    groups = ((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or []
    names = {str(((g or {}).get("policyRef") or {}).get("name") or "") for g in groups} - {""}
    return [Request(isvc["metadata"]["namespace"], n) for n in sorted(names)]


def add_to_manager(
    manager: Manager,
    config: Callable[[], InferenceServiceConfig],
    *,
    policy_enabled: bool,
    max_concurrent_reconciles: int = 1,
) -> Controller:
    cache = manager.cache
    isvcs = cache.informer_for(INFERENCE_SERVICES)
    replicas = cache.informer_for(INFERENCE_REPLICAS)
    recorder = manager.event_recorder("ome-inferenceservice-controller")
    prometheus = PrometheusClient(max_concurrency=config().canary_analysis.max_concurrency)
    reconciler = CanaryReconciler(
        manager.client, cache, config, prometheus=prometheus, policy_enabled=policy_enabled, recorder=recorder
    )
    controller = (
        Controller(NAME, reconciler, max_concurrent_reconciles=max_concurrent_reconciles)
        .for_(isvcs)
        .watches(replicas, _parent)
    )
    if policy_enabled:
        policies = cache.informer_for(ROLLOUT_POLICIES)
        controller.watches(policies, _policy_users(cache))
        status = RolloutPolicyStatusReconciler(
            reader=cache, writer=manager.client, bound_providers=lambda: set(reconciler.bound_providers())
        )
        manager.add_controller(
            Controller(POLICY_STATUS_NAME, status).for_(policies).watches(isvcs, _policies_of)
        )
    manager.add_controller(controller)
    return controller
