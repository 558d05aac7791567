"""Wire the InferenceService controller into a manager: informers, watches, the reconciler.

Informers (all cluster-wide, children narrowed by the `ome.io/inferenceservice` label):

- InferenceServices (primary; spec, label and annotation changes);
- ServingRuntimes and ClusterServingRuntimes, BaseModels and ClusterBaseModels: a change re-reconciles
  the InferenceServices that use them (runtime changes roll out; a deleted runtime flips RuntimeReady);
- AcceleratorClasses: a spec change, a new or a deleted class re-reconciles the InferenceServices that
  name it, or that pick by policy with a runtime listing it (a runtime revision holds no class);
- owned Deployments (their metadata, spec and Available condition: watch_filters.py) and Services (and
  LeaderWorkerSets when served); HPAs and PDBs are the autoscaler controller's;
- all InferenceReplicas: an owned one re-reconciles its InferenceService, and a standalone one named in
  spec.replicaRefs re-reconciles the services that reference it (so a deleted replica flips the role to
  ReplicaRefMissing, and a returning one brings it back);
- OMENative ControllerRevisions, whose pinned runners give a referenced replica's Service its ports when
  the replica stores none;
- Pods of InferenceServices (slimmed), for the model status of the engine: created, deleted, relabelled,
  or their main container failing (watch_filters.py). Pods and Services are split by manager: this
  controller's own (`ome.io/inferenceservice,!ome.io/managed-by`) and the OMENative Instances' (the
  OMENative controllers' informer, `ome.io/managed-by=OMENative`), so none is cached twice;
- when served at start (routing.detect): owned HTTPRoutes, whose Gateway status sets IngressReady, and the
  backend policy kind of the selected traffic translator (BackendTrafficPolicy or DestinationRule);
- runtime revisions (ControllerRevisions with the `ome.io/runtime-of` label) in the config namespace: a
  new or deleted revision re-reconciles the services that pin that runtime or name the revision.

The autoscaler controller publishes `status.components.<c>.autoscaler` to this controller's
`AutoscalerEntries` (autoscaler/entries.py), which queue this controller's key when the status does not
show them yet: this controller writes the whole status.

A second controller, `runtime-revision-gc` (revision_gc.py), prunes the runtime revisions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, Final, Protocol

from ome.api import resources
from ome.config.config_source import ConfigSource
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.controllers.inferenceservice import pod_index, revision_gc, routing, runtime_pinning, watch_filters
from ome.controllers.inferenceservice.reconciler import InferenceServiceReconciler
from ome.framework import predicates, transforms
from ome.framework.cache import SharedCache
from ome.framework.controller import Controller
from ome.framework.handlers import Obj
from ome.framework.manager import Manager
from ome.framework.post_creates import PostCreates
from ome.framework.reconcile import Request
from ome.resolution import accelerators, fine_tuned, naming, replica_refs

NAME: Final = "inferenceservice"
EVENT_SOURCE: Final = "v1beta1Controllers"
CHILD_SELECTOR: Final = naming.ISVC_LABEL  # "exists": every child carries the label
REVISION_SELECTOR: Final = {naming.MANAGED_BY_LABEL: replica_refs.MANAGED_BY}
"""The InferenceReplica controller's ControllerRevision informer uses the same key, so it is shared."""
OMENATIVE_SELECTOR: Final = REVISION_SELECTOR
"""The OMENative controllers' Pods and Services: the same key as theirs, so one informer holds them."""
NOT_OMENATIVE_SELECTOR: Final = f"{naming.ISVC_LABEL},!{naming.MANAGED_BY_LABEL}"
"""This controller's own Pods and Services. OMENative Instances' Pods and Services carry both labels; an
informer of each selector would hold and decode every one of them twice (N=1000: 1,000 pods and 3,000
Services), so they are read from the OMENative informers instead."""
_SPLIT_BY_MANAGER: Final = (resources.PODS, resources.SERVICES)
REPLICA_REF_INDEX: Final = "replica-ref"
_CHILD_FILTERS: Final = {
    resources.DEPLOYMENTS: watch_filters.deployment_changed,
    resources.SERVICES: watch_filters.service_changed,
}
"""Children whose events are filtered to what can change the output (watch_filters.py)."""


class Lister(Protocol):
    def list(
        self,
        res: resources.Resource,
        namespace: str | None = None,
        *,
        label_selector: Mapping[str, str] | None = None,
        index: tuple[str, str] | None = None,
    ) -> list[dict[str, Any]]: ...


def add_to_manager(
    manager: Manager,
    config: InferenceServiceConfig,
    *,
    lws_served: bool = False,
    max_concurrent_reconciles: int = 4,
    config_namespace: str = "ome",
    revision_retention: int = revision_gc.DEFAULT_RETENTION,
    revision_grace: timedelta = revision_gc.DEFAULT_GRACE,
    config_source: ConfigSource | None = None,
    routing_facts: routing.RoutingFacts | None = None,
    pod_monitor_served: bool = False,
    autoscaler_entries: AutoscalerEntries | None = None,
    replica_teardown: bool = False,
) -> Controller:
    """Register the controller; `lws_served` says whether the LeaderWorkerSet CRD is served
    (check it once at startup with `client.is_served(resources.LEADER_WORKER_SETS)`). Runtime revisions
    live in `config_namespace`, OME's own namespace. `autoscaler_entries` are the ones the autoscaler
    controller of this manager publishes to (none: no autoscaler runs, and no entry is reported).
    `replica_teardown`: the InferenceReplica controller runs in this manager, so the replicas are
    created with its teardown finalizer (never without it: nothing would take the finalizer off)."""
    cache = manager.cache
    entries = autoscaler_entries if autoscaler_entries is not None else AutoscalerEntries()
    behind = manager.write_behind()  # a pass's creates run beside it (write_behind.py)
    reconciler = InferenceServiceReconciler(
        reader=cache,
        writer=manager.client,
        recorder=manager.event_recorder(EVENT_SOURCE),
        config=config,
        lws_served=lws_served,
        config_namespace=config_namespace,
        config_source=config_source,
        routing_facts=routing_facts,
        pod_monitor_served=pod_monitor_served,
        autoscaler_entries=entries,
        seen=cache.seen_version,
        write_behind=behind,
        replica_teardown=replica_teardown,
        posts=PostCreates(manager.client),
    )
    controller = Controller(NAME, reconciler, max_concurrent_reconciles=max_concurrent_reconciles)
    behind.bind(controller.queue.add_rate_limited, controller.queue.add)
    controller.on_stop(behind.cancel)
    entries.subscribe(controller.queue.add)
    spec_or_meta = predicates.or_(
        predicates.generation_changed, predicates.labels_changed, predicates.annotations_changed
    )
    services = cache.informer_for(resources.INFERENCE_SERVICES)
    controller.for_(services, spec_or_meta)
    services.add_handler(reconciler.forget_shown_status)
    _watch_dependencies(controller, cache)
    for res in reconciler.children:
        if res == resources.INFERENCE_REPLICAS:
            continue  # below: standalone replicas carry no InferenceService label
        # The OMENative Services are the replicas' children, never this controller's: not watched here.
        selector = NOT_OMENATIVE_SELECTOR if res in _SPLIT_BY_MANAGER else CHILD_SELECTOR
        informer = cache.informer_for(res, label_selector=selector)
        changed = _CHILD_FILTERS.get(res, predicates.resource_version_changed)
        controller.owns(informer, "ome.io", "InferenceService", changed)
    _watch_replicas(controller, cache)
    _watch_routing(controller, cache, reconciler.routing.resources())
    for pod_selector in (NOT_OMENATIVE_SELECTOR, OMENATIVE_SELECTOR):  # a service's pods are in one of them
        pods = cache.informer_for(resources.PODS, label_selector=pod_selector, transform=transforms.slim_pod)
        pods.add_indexer(pod_index.INDEX, pod_index.index_by_service)  # how the reconciler reads its pods
        controller.watches(pods, _pod_owner, watch_filters.pod_changed)
    runtime_revisions = cache.informer_for(
        resources.CONTROLLER_REVISIONS,
        namespace=config_namespace,
        label_selector=runtime_pinning.REVISION_SELECTOR,
    )
    controller.watches(
        runtime_revisions, runtime_pinning.pinned_services(cache), predicates.resource_version_changed
    )
    manager.add_controller(controller)
    revision_gc.add_to_manager(manager, cache, manager.client, config_namespace=config_namespace,
                               retention=revision_retention, grace=revision_grace)
    return controller


def _watch_routing(controller: Controller, cache: SharedCache, kinds: Iterable[resources.Resource]) -> None:
    """HTTPRoutes (their Gateway status sets IngressReady) and the backend policy, when served. The policy
    informer has no label selector: a same-named policy someone else wrote must be seen, not overwritten."""
    for res in kinds:
        selector = CHILD_SELECTOR if res == resources.HTTP_ROUTES else None
        informer = cache.informer_for(res, label_selector=selector)
        controller.owns(informer, "ome.io", "InferenceService", predicates.resource_version_changed)


def _watch_dependencies(controller: Controller, cache: SharedCache) -> None:
    changed = predicates.or_(predicates.generation_changed, predicates.labels_changed)
    for res, field in (
        (resources.SERVING_RUNTIMES, "runtime"),
        (resources.CLUSTER_SERVING_RUNTIMES, "runtime"),
        (resources.BASE_MODELS, "model"),
        (resources.CLUSTER_BASE_MODELS, "model"),
    ):
        # Models report readiness in status, so their status changes matter too.
        predicate = predicates.resource_version_changed if field == "model" else changed
        controller.watches(cache.informer_for(res), _users_of(cache, field, res.namespaced), predicate)
    weights = cache.informer_for(resources.FINE_TUNED_WEIGHTS)
    controller.watches(weights, _fine_tuned_users(cache), predicates.generation_changed)
    classes = cache.informer_for(resources.ACCELERATOR_CLASSES)
    controller.watches(classes, accelerator_class_users(cache), predicates.generation_changed)


def _fine_tuned_users(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    """A FineTunedWeight maps to every InferenceService that names it in spec.model.fineTunedWeights."""

    def mapper(obj: Obj) -> Iterable[Request]:
        name = obj["metadata"]["name"]
        for isvc in cache.list(resources.INFERENCE_SERVICES):
            if name in fine_tuned.names(isvc):
                yield Request(isvc["metadata"]["namespace"], isvc["metadata"]["name"])

    return mapper


class Reader(Lister, Protocol):
    def get_or_none(
        self, res: resources.Resource, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None: ...


def accelerator_class_users(cache: Reader) -> Callable[[Obj], Iterable[Request]]:
    """Map an AcceleratorClass to the InferenceServices whose engine or decoder may get it."""

    def mapper(obj: Obj) -> Iterable[Request]:
        name = obj["metadata"]["name"]
        for isvc in cache.list(resources.INFERENCE_SERVICES):
            if accelerators.uses_class(isvc, name, _named_runtime_specs(cache, isvc)):
                yield Request(isvc["metadata"]["namespace"], isvc["metadata"]["name"])

    return mapper


def _named_runtime_specs(cache: Reader, isvc: Obj) -> list[dict[str, Any]]:
    """The specs of the runtimes spec.runtime.name may mean, in either scope (none when it auto-selects)."""
    name = ((isvc.get("spec") or {}).get("runtime") or {}).get("name")
    if not name:
        return []
    found = (
        cache.get_or_none(resources.SERVING_RUNTIMES, name, isvc["metadata"]["namespace"]),
        cache.get_or_none(resources.CLUSTER_SERVING_RUNTIMES, name),
    )
    return [obj.get("spec") or {} for obj in found if obj is not None]


def _watch_replicas(controller: Controller, cache: SharedCache) -> None:
    changed = watch_filters.replica_changed  # the mirrored status fields count, the Instance rows do not
    replicas = cache.informer_for(resources.INFERENCE_REPLICAS)
    controller.owns(replicas, "ome.io", "InferenceService", changed)
    # Every replica event asks which services reference it: an index, not a walk of every service.
    cache.informer_for(resources.INFERENCE_SERVICES).add_indexer(REPLICA_REF_INDEX, index_by_replica_ref)
    controller.watches(replicas, referencing_services(cache), changed)
    revisions = cache.informer_for(resources.CONTROLLER_REVISIONS, label_selector=REVISION_SELECTOR)
    controller.watches(revisions, referencing_revision_owner(cache), predicates.resource_version_changed)


def referencing_services(cache: Lister) -> Callable[[Obj], Iterable[Request]]:
    """Map an InferenceReplica to the InferenceServices of its namespace whose spec.replicaRefs name it."""

    def mapper(replica: Obj) -> Iterable[Request]:
        meta = replica["metadata"]
        return _referencing(cache, meta.get("namespace") or "", meta["name"])

    return mapper


def referencing_revision_owner(cache: Lister) -> Callable[[Obj], Iterable[Request]]:
    """Map a ControllerRevision to the services referencing the InferenceReplica that owns it."""

    def mapper(revision: Obj) -> Iterable[Request]:
        meta = revision["metadata"]
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "InferenceReplica":
                return _referencing(cache, meta.get("namespace") or "", ref["name"])
        return []

    return mapper


def index_by_replica_ref(isvc: Mapping[str, Any]) -> list[str]:
    """`namespace/replica` for each replica a service's spec.replicaRefs names (none for most services)."""
    namespace = str((isvc.get("metadata") or {}).get("namespace") or "")
    return sorted({f"{namespace}/{name}" for _, name in replica_refs.roles(isvc)})


def _referencing(cache: Lister, namespace: str, replica: str) -> list[Request]:
    return [
        Request(namespace, isvc["metadata"]["name"])
        for isvc in cache.list(resources.INFERENCE_SERVICES, namespace,
                               index=(REPLICA_REF_INDEX, f"{namespace}/{replica}"))
    ]


def _users_of(cache: SharedCache, field: str, namespaced: bool) -> Callable[[Obj], Iterable[Request]]:
    """Map a runtime or model to the InferenceServices that name it, or (runtimes) that auto-select."""

    def mapper(obj: Obj) -> Iterable[Request]:
        meta = obj["metadata"]
        namespace = meta.get("namespace") if namespaced else None
        for isvc in cache.list(resources.INFERENCE_SERVICES, namespace):
            ref = (isvc.get("spec") or {}).get(field) or {}
            named = ref.get("name")
            overlay_names = {o.get("name") for o in ref.get("overlays") or []} if field == "model" else set()
            if named == meta["name"] or meta["name"] in overlay_names or (field == "runtime" and not named):
                yield Request(isvc["metadata"]["namespace"], isvc["metadata"]["name"])

    return mapper


def _pod_owner(pod: Obj) -> Iterable[Request]:
    meta = pod["metadata"]
    name = (meta.get("labels") or {}).get(naming.ISVC_LABEL)
    return [Request(meta.get("namespace") or "", name)] if name else []
