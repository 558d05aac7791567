"""Wire the autoscaler controllers into a manager.

`autoscaler` (reconciler.py), keyed by InferenceService, publishes its status entries to the
InferenceService controller's `AutoscalerEntries` (entries.py), which writes them: that controller is
registered first and its entries passed here. It watches:

- InferenceServices (spec, label and annotation changes: its own status writes do not bring it back);
- owned HorizontalPodAutoscalers, PodDisruptionBudgets and, when KEDA's CRDs were served at start,
  ScaledObjects (their status feeds `status.components.<c>.autoscaler`), cached whole so that a stranger
  under OME's name is seen;
- owned Deployments and InferenceReplicas: a count changed by `kubectl scale` is held or floored, and an
  OMENative budget follows the Instance count;
- ServingRuntimes and ClusterServingRuntimes (a runtime's autoscaler block, bounds or budget);
- AutoscalerPolicies, when the feature is on: a policy change re-renders the components naming it.

`autoscalerpolicy-status` (policy_status.py) keeps each policy's Ready/InUse/attachedComponents, when the
feature is on. Both look for KEDA and the AutoscalerPolicy CRD only at start, as documented: installing
either later needs a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from ome.api import resources
from ome.config.config_source import ConfigSource
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.controllers.autoscaler.policy_status import PolicyStatusReconciler
from ome.controllers.autoscaler.reconciler import AutoscalerReconciler, Features
from ome.controllers.inferenceservice import runtime_pinning, watch_filters
from ome.framework import predicates
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.handlers import Obj
from ome.framework.manager import Manager
from ome.framework.post_creates import PostCreates
from ome.framework.reconcile import Request
from ome.resolution import autoscaler_objects, autoscaling, modes, naming

NAME: Final = "autoscaler"
POLICY_STATUS_NAME: Final = "autoscalerpolicy-status"
EVENT_SOURCE: Final = "v1beta1Controllers"
CHILD_SELECTOR: Final = naming.ISVC_LABEL


async def detect(client: Client, config: InferenceServiceConfig) -> Features:
    """KEDA's ScaledObject CRD and the AutoscalerPolicy feature (configured on and its CRD served)."""
    keda = await client.is_served(autoscaler_objects.SCALED_OBJECTS)
    wanted = config.autoscaler_policy is not None and config.autoscaler_policy.enabled
    policy = wanted and await client.is_served(resources.AUTOSCALER_POLICIES)
    return Features(keda_served=keda, policy_enabled=policy)


def add_to_manager(
    manager: Manager,
    config: InferenceServiceConfig,
    *,
    features: Features,
    entries: AutoscalerEntries,
    config_namespace: str = "ome",
    config_source: ConfigSource | None = None,
    max_concurrent_reconciles: int = 4,
) -> Controller:
    """`entries` must be the ones the InferenceService controller of `manager` writes from
    (inferenceservice.controller.add_to_manager's `autoscaler_entries`): entries nobody writes would be
    lost, so entries without a subscriber are refused."""
    if not entries.subscribed:
        raise ValueError("the autoscaler's status entries are written by the InferenceService controller: "
                         "register it first, with these entries")
    cache = manager.cache
    reconciler = AutoscalerReconciler(
        reader=cache,
        writer=manager.client,
        recorder=manager.event_recorder(EVENT_SOURCE),
        config=config,
        features=features,
        entries=entries,
        config_namespace=config_namespace,
        config_source=config_source,
        seen=cache.seen_version,
        posts=PostCreates(manager.client),
    )
    controller = Controller(NAME, reconciler, max_concurrent_reconciles=max_concurrent_reconciles)
    spec_or_meta = predicates.or_(
        predicates.generation_changed, predicates.labels_changed, predicates.annotations_changed
    )
    controller.for_(cache.informer_for(resources.INFERENCE_SERVICES), spec_or_meta)
    # Scalers and budgets are cached whole, not by OME's label: one a stranger made under our name must
    # be seen, so that it fails the component instead of being taken over.
    scalers = [resources.HPAS, resources.PDBS]
    if features.keda_served:
        scalers.append(autoscaler_objects.SCALED_OBJECTS)
    changed = predicates.resource_version_changed
    for res in scalers:
        # The HPA's (and ScaledObject's) status is reported; a budget's status is not read at all.
        spec_only = res == resources.PDBS
        controller.owns(cache.informer_for(res), "ome.io", "InferenceService",
                        watch_filters.spec_or_metadata_changed if spec_only else changed)
    # Only spec.replicas is read from a workload: the rollout's status updates would each cost a reconcile.
    deployments = cache.informer_for(resources.DEPLOYMENTS, label_selector=CHILD_SELECTOR)
    controller.owns(deployments, "ome.io", "InferenceService", watch_filters.replicas_changed)
    # The InferenceService controller reads every replica (standalone ones carry no service label); a
    # replica's status moves at every Instance step, and only its spec.replicas is read here.
    replicas = cache.informer_for(resources.INFERENCE_REPLICAS)
    controller.owns(replicas, "ome.io", "InferenceService", watch_filters.replicas_changed)
    for res in (resources.SERVING_RUNTIMES, resources.CLUSTER_SERVING_RUNTIMES):
        controller.watches(cache.informer_for(res), _runtime_users(cache, res.namespaced),
                           predicates.generation_changed)
    # What resolving a service's components reads (shared with the InferenceService controller).
    for res in (resources.BASE_MODELS, resources.CLUSTER_BASE_MODELS):
        cache.informer_for(res)
    cache.informer_for(resources.CONTROLLER_REVISIONS, namespace=config_namespace,
                       label_selector=runtime_pinning.REVISION_SELECTOR)
    if features.policy_enabled:
        policies = cache.informer_for(resources.AUTOSCALER_POLICIES)
        controller.watches(policies, _policy_users(cache), predicates.generation_changed)
    manager.add_controller(controller)
    if features.policy_enabled:
        _add_policy_status(manager, cache, config_source, config)
    return controller


def _add_policy_status(manager: Manager, cache: SharedCache, source: ConfigSource | None,
                       config: InferenceServiceConfig) -> None:
    status = PolicyStatusReconciler(reader=cache, writer=manager.client,
                                    config=lambda: source.config if source is not None else config)
    controller = Controller(POLICY_STATUS_NAME, status)
    controller.for_(cache.informer_for(resources.AUTOSCALER_POLICIES), predicates.generation_changed)
    controller.watches(cache.informer_for(resources.INFERENCE_SERVICES), _namespace_policies(cache),
                       predicates.generation_changed)
    manager.add_controller(controller)


def _runtime_users(cache: SharedCache, namespaced: bool) -> Callable[[Obj], Iterable[Request]]:
    """A runtime maps to the services that name it, or that auto-select (any runtime may be theirs)."""

    def mapper(obj: Obj) -> Iterable[Request]:
        meta = obj["metadata"]
        for isvc in cache.list(resources.INFERENCE_SERVICES, meta.get("namespace") if namespaced else None):
            named = ((isvc.get("spec") or {}).get("runtime") or {}).get("name")
            if not named or named == meta["name"]:
                yield Request(isvc["metadata"]["namespace"], isvc["metadata"]["name"])

    return mapper


def _policy_users(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    def mapper(policy: Obj) -> Iterable[Request]:
        meta = policy["metadata"]
        for isvc in cache.list(resources.INFERENCE_SERVICES, meta.get("namespace")):
            spec = isvc.get("spec") or {}
            if any(autoscaling.policy_ref(spec.get(c) or {}) == meta["name"] for c in modes.COMPONENTS):
                yield Request(isvc["metadata"]["namespace"], isvc["metadata"]["name"])

    return mapper


def _namespace_policies(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    """An InferenceService change may attach or detach any policy of its namespace."""

    def mapper(isvc: Obj) -> Iterable[Request]:
        namespace = isvc["metadata"].get("namespace")
        for policy in cache.list(resources.AUTOSCALER_POLICIES, namespace):
            yield Request(namespace or "", policy["metadata"]["name"])

    return mapper
