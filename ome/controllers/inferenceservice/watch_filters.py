"""Which child events can change what the InferenceService controller renders or reports (pure).

A Deployment's status moves many times while its pods come up (replica counts, the Progressing
condition's timestamps and message), and a pod's status moves at every step of its start; only a few of
those fields reach this controller's output. Each event that cannot change the output still costs a full
reconcile (resolution, rendering, every child compared), so at scale they crowd out the reconciles that
matter: a spec change then waits behind hundreds of pod updates before its observedGeneration is written.

- Deployment: its metadata (drift, owner, deletion; not kube-controller-manager's revision annotation,
  which neither drift nor the status reads: it cost a pass per new Deployment and per rollout), its spec
  (generation) and its `Available` condition,
  the status the InferenceService reports from it (status.workload_condition), and whether it is
  `Progressing` and free of a `ReplicaFailure` (True/False only), which end the hold on a new service's
  first status (status.first_write_deferral).
- engine Pod: creation, deletion and label changes (the model copies and Pending/Loading count pods),
  and the main container's failure (status.main_container_failure: BlockedByFailedLoad).

- InferenceReplica: its metadata (not its finalizer, which the replica controller adds to every new
  replica: that event cost a pass per service), its spec (generation) and the status fields the service
  mirrors and reads (replica_status.LIFECYCLE_FIELDS); an Instance row's step or a replica's own
  bookkeeping (`instanceStatuses`, observedGeneration) moves no field of the service.
- Service: its metadata and its spec (a Service has no generation). Its status (a load balancer's) is
  not read, and the one move of a POSTed Service's fields to the apply entry (framework/post_creates.py)
  changes only its managed fields, which the informer drops: that write's event cost a pass per Service.

Everything else the controller watches keeps every resourceVersion change.

`spec_or_metadata_changed` is for a watcher that reads no status of the child at all: the autoscaler
controller reads a PodDisruptionBudget's spec and metadata, never its status, which
kube-controller-manager rewrites several times per rollout. `replicas_changed` is narrower still, for its
workloads (Deployments, InferenceReplicas), of which it reads only `spec.replicas`: a new Deployment's
revision annotation and a new replica's finalizer each cost it a pass per service otherwise (1,000 of its
6,041 passes at N=1000).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ome.controllers.inferenceservice.replica_status import LIFECYCLE_FIELDS
from ome.controllers.inferenceservice.status import main_container_failure
from ome.framework.handlers import EventType, Obj

_METADATA: Final = (
    "generation", "labels", "annotations", "ownerReferences", "deletionTimestamp", "finalizers"
)
_POD_METADATA: Final = ("labels", "deletionTimestamp")
_DEPLOYMENT_METADATA: Final = tuple(key for key in _METADATA if key != "annotations")
DEPLOYMENT_REVISION: Final = "deployment.kubernetes.io/revision"
"""kube-controller-manager's count of a Deployment's rollouts: no field of ours, read by no one here."""
_REPLICA_METADATA: Final = tuple(key for key in _METADATA if key != "finalizers")
_WORKLOAD_METADATA: Final = ("labels", "ownerReferences", "deletionTimestamp")
"""What maps a workload to its service (owner) and says it is going."""

Predicate = Callable[[EventType, Obj, "Obj | None"], bool]


def _on_modified(changed: Callable[[Obj, Obj], bool]) -> Predicate:
    """A predicate that lets creations and deletions through and a MODIFIED event when `changed`."""

    def predicate(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
        if event_type != "MODIFIED":
            return True
        return old is not None and changed(obj, old)

    predicate.__doc__ = changed.__doc__
    return predicate


def _metadata_changed(obj: Obj, old: Obj, keys: tuple[str, ...] = _METADATA) -> bool:
    new_meta, old_meta = obj.get("metadata") or {}, old.get("metadata") or {}
    return any(new_meta.get(key) != old_meta.get(key) for key in keys)


@_on_modified
def spec_or_metadata_changed(obj: Obj, old: Obj) -> bool:
    """MODIFIED only when the metadata or the spec (its generation) changed; status changes are dropped."""
    return _metadata_changed(obj, old)


@_on_modified
def replicas_changed(obj: Obj, old: Obj) -> bool:
    """MODIFIED only when `spec.replicas`, the owner, the labels or the deletion changed."""
    if _metadata_changed(obj, old, _WORKLOAD_METADATA):
        return True
    return (obj.get("spec") or {}).get("replicas") != (old.get("spec") or {}).get("replicas")


def _available(obj: Obj) -> tuple[Any, ...] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Available":
            return cond.get("status"), cond.get("reason"), cond.get("message")
    return None


def _trouble(obj: Obj) -> tuple[Any, ...]:
    found = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or ()}
    return found.get("Progressing"), found.get("ReplicaFailure")


@_on_modified
def deployment_changed(obj: Obj, old: Obj) -> bool:
    """MODIFIED only when the metadata, the spec or the Available condition changed."""
    if _metadata_changed(obj, old, _DEPLOYMENT_METADATA) or _annotations(obj) != _annotations(old):
        return True
    return _available(obj) != _available(old) or _trouble(obj) != _trouble(old)


def _annotations(obj: Obj) -> dict[str, Any]:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return {k: v for k, v in annotations.items() if k != DEPLOYMENT_REVISION}


@_on_modified
def service_changed(obj: Obj, old: Obj) -> bool:
    """MODIFIED only when the Service's metadata or spec changed."""
    return _metadata_changed(obj, old) or obj.get("spec") != old.get("spec")


@_on_modified
def pod_changed(obj: Obj, old: Obj) -> bool:
    """MODIFIED only when the pod's labels, deletion or main container failure changed."""
    if _metadata_changed(obj, old, _POD_METADATA):
        return True
    return main_container_failure(obj) != main_container_failure(old)


@_on_modified
def replica_changed(obj: Obj, old: Obj) -> bool:
    """MODIFIED only when the replica's metadata (not its finalizers), its spec or a status field the
    service mirrors changed."""
    if _metadata_changed(obj, old, _REPLICA_METADATA):
        return True
    new_status, old_status = obj.get("status") or {}, old.get("status") or {}
    return any(new_status.get(key) != old_status.get(key) for key in LIFECYCLE_FIELDS)
