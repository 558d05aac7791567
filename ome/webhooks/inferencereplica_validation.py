"""InferenceReplica validation: a projected replica's spec belongs to the OME controller.

An InferenceService on OMENative writes an InferenceReplica per component (a *projected* replica: its
spec.parentRef names the service, and the service is its controller owner). Edits there would be
overwritten on the next reconcile or, worse, roll Instances the service did not ask for, so only the
controller's identity may create or change a projected replica's spec; users change the InferenceService.
A *standalone* replica, created directly with no parent, is its owner's to write. Nobody but the
controller may turn a standalone replica into a projected one by adding a parentRef.

The identity is the manager's ServiceAccount by default; `controller_username` makes it configurable
(tests run the controller under other credentials).
"""

from __future__ import annotations

from typing import Any, Final

from ome.webhooks.handler import CREATE, AdmissionRequest, Outcome
from ome.webhooks.loose import as_dict, dig, text
from ome.webhooks.replica_refs import projected_by

Obj = dict[str, Any]

DEFAULT_CONTROLLER_USERNAME: Final = "system:serviceaccount:ome:ome-controller-manager"


def validate(request: AdmissionRequest, *, controller_username: str = DEFAULT_CONTROLLER_USERNAME) -> Outcome:
    if request.username == controller_username:
        return Outcome()
    parent = projected_by(request.obj)
    where = f"InferenceReplica {request.namespace}/{request.name}"
    if request.operation == CREATE:
        if parent:
            return Outcome.deny(
                f"{where} names InferenceService {parent} as its parent; only the OME controller "
                f"({controller_username}) creates projected replicas. Create the replica without "
                "spec.parentRef to run it standalone"
            )
        return Outcome()
    old = request.old or {}
    old_parent = projected_by(old)
    if not old_parent and text(dig(request.obj, "spec", "parentRef", "name")):
        return Outcome.deny(f"{where} is standalone; spec.parentRef is set only by the OME controller")
    if old_parent and as_dict(old.get("spec")) != request.spec:
        return Outcome.deny(
            f"{where} is projected by InferenceService {old_parent}, so only the OME controller "
            f"({controller_username}) writes its spec; change InferenceService {old_parent} instead"
        )
    return Outcome()
