"""InferenceReplica validation: a projected replica's spec belongs to the InferenceService controller.

An InferenceService on OMENative writes an InferenceReplica per component, a *projected* replica: its
spec.parentRef names the service, and the service is its controller owner. A spec edit there would be
overwritten on the next reconcile or roll Instances the service did not ask for, so users change the
InferenceService instead. A *standalone* replica, with neither mark, is governed by RBAC.

The controller is recognised by the `ome.io/controller-write: "true"` annotation it writes on every
replica it projects (labels-and-annotations page, InferenceReplica): no controller identity is
configured, so the check does not depend on who the manager runs as (a ServiceAccount in the cluster,
an admin kubeconfig outside it). It is a convention, not a security boundary: RBAC on
inferencereplicas is that. The rules, in order:

* an update that keeps the spec and installs no InferenceService controller owner reference passes
  without the annotation: finalizers, labels, annotation mailboxes, the garbage collector's patches;
* spec.parentRef and spec.component are immutable for every writer;
* a create or spec update of a projected replica needs the annotation (denial ends in
  `edit the InferenceService instead`);
* spec.parentRef is only set together with the InferenceService controller owner reference;
* only the controller installs an InferenceService controller owner reference;
* a standalone create must not carry the annotation: the controller creates only what it projects.
"""

from __future__ import annotations

from typing import Any, Final

from ome.resolution.naming import CONTROLLER_WRITE_ANNOTATION, CONTROLLER_WRITE_VALUE
from ome.webhooks.handler import CREATE, UPDATE, AdmissionRequest, Outcome
from ome.webhooks.loose import as_dict, dig, text
from ome.webhooks.replica_refs import isvc_controller_owner, projected_by

Obj = dict[str, Any]

PROJECTED_WRITE_HINT: Final = "edit the InferenceService instead"


def validate(request: AdmissionRequest) -> Outcome:
    if request.operation not in (CREATE, UPDATE):
        return Outcome()
    where = f"InferenceReplica {request.namespace}/{request.name}"
    obj = request.obj
    old = request.old or {}
    if request.operation == UPDATE:
        if dig(old, "spec", "parentRef") != dig(obj, "spec", "parentRef"):
            return Outcome.deny(f"{where}: spec.parentRef is immutable")
        if dig(old, "spec", "component") != dig(obj, "spec", "component"):
            return Outcome.deny(f"{where}: spec.component is immutable")
        installs_owner = _owner_installed(old, obj)
        if as_dict(old.get("spec")) == request.spec and not installs_owner:
            return Outcome()  # metadata only: finalizers, labels, annotations, owner references kept
        controller = is_controller_write(obj)
        parent = projected_by(old)
        if installs_owner and not controller:
            return Outcome.deny(
                f"{where}: only the InferenceService controller sets an InferenceService controller owner "
                "reference on an InferenceReplica"
            )
        if parent and not controller:
            return Outcome.deny(_projected_write(request, parent))
        return Outcome()
    controller = is_controller_write(obj)
    owner = isvc_controller_owner(obj)
    if text(dig(obj, "spec", "parentRef", "name")) and not owner:
        return Outcome.deny(
            f"{where}: spec.parentRef is set by the InferenceService controller on the replicas it projects; "
            "omit it on a standalone InferenceReplica"
        )
    if owner:
        return Outcome() if controller else Outcome.deny(_projected_write(request, owner))
    if controller:
        return Outcome.deny(
            f"{where}: the {CONTROLLER_WRITE_ANNOTATION} annotation marks a write as the InferenceService "
            "controller's, and the controller creates only the replicas it projects; drop it from a "
            "standalone InferenceReplica"
        )
    return Outcome()


def is_controller_write(obj: Obj) -> bool:
    """Only the literal "true" counts, so a hand-written "True" or "yes" does not pass."""
    annotations = as_dict(dig(obj, "metadata", "annotations"))
    return annotations.get(CONTROLLER_WRITE_ANNOTATION) == CONTROLLER_WRITE_VALUE


def _owner_installed(old: Obj, new: Obj) -> bool:
    """The update adds an InferenceService controller owner reference the old object did not have."""
    owner = isvc_controller_owner(new)
    return bool(owner) and owner != isvc_controller_owner(old)


def _projected_write(request: AdmissionRequest, parent: str) -> str:
    ns = request.namespace
    return (
        f"InferenceReplica {ns}/{request.name} is projected by InferenceService {ns}/{parent} and rejects a "
        f"direct {request.operation} without the {CONTROLLER_WRITE_ANNOTATION}={CONTROLLER_WRITE_VALUE} "
        f"annotation; {PROJECTED_WRITE_HINT}"
    )
