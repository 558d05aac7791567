"""In-use delete protection for AutoscalerPolicy and RolloutPolicy (autoscaler-policy.md and
rollout-policy.md, "Delete a policy"; labels-and-annotations.md, policy annotations).

A DELETE is denied while an InferenceService of the policy's namespace references it: for an
AutoscalerPolicy, a component's `autoscalerPolicyRef` (kind AutoscalerPolicy or unset), listed as
`<isvc>/<component>`; for a RolloutPolicy, a rollout group's `policyRef` (kind RolloutPolicy or unset),
listed once per InferenceService, at most ten named. `ome.io/allow-in-use-delete: "true"` on the policy
lets the delete through. InferenceServices already being deleted no longer count, so a namespace's
teardown cannot wedge on its own policies. CREATE and UPDATE pass: the policies' bodies are checked by
their controllers (both kinds are alpha and off by default).
"""

from __future__ import annotations

from typing import Any, Final

from ome.api import resources
from ome.resolution import runtimes
from ome.webhooks.handler import DELETE, AdmissionRequest, Outcome
from ome.webhooks.loose import COMPONENTS, as_dict, as_list, dig, text

Obj = dict[str, Any]

ALLOW_IN_USE_DELETE: Final = "ome.io/allow-in-use-delete"
AUTOSCALER_POLICY: Final = "AutoscalerPolicy"
ROLLOUT_POLICY: Final = "RolloutPolicy"
MAX_NAMED: Final = 10
_FORCE: Final = f'remove the refs first, or set the {ALLOW_IN_USE_DELETE}="true" annotation to force deletion'


def validate_autoscaler_policy(request: AdmissionRequest, reader: runtimes.Reader) -> Outcome:
    if not _guarded(request):
        return Outcome()
    refs = [
        f"{text(dig(isvc, 'metadata', 'name'))}/{component}"
        for isvc in _live_services(reader, request.namespace)
        for component in COMPONENTS
        if _names(dig(isvc, "spec", component, "autoscalerPolicyRef"), request.name, AUTOSCALER_POLICY)
    ]
    if not refs:
        return Outcome()
    return Outcome.deny(
        f'{AUTOSCALER_POLICY} "{request.name}" is referenced by {len(refs)} component(s): {", ".join(refs)}; '
        + _FORCE
    )


def validate_rollout_policy(request: AdmissionRequest, reader: runtimes.Reader) -> Outcome:
    if request.operation != DELETE:
        return _rollout_policy_body(request, reader)
    if not _guarded(request):
        return Outcome()
    services = [
        text(dig(isvc, "metadata", "name"))
        for isvc in _live_services(reader, request.namespace)
        if any(
            _names(as_dict(group).get("policyRef"), request.name, ROLLOUT_POLICY)
            for group in as_list(dig(isvc, "spec", "rollout", "groups"))
        )
    ]
    if not services:
        return Outcome()
    overflow = f" and {len(services) - MAX_NAMED} more" if len(services) > MAX_NAMED else ""
    named = ", ".join(services[:MAX_NAMED])
    return Outcome.deny(
        f'{ROLLOUT_POLICY} "{request.name}" is referenced by {len(services)} InferenceService(s): '
        f"{named}{overflow}; {_FORCE}"
    )


def _guarded(request: AdmissionRequest) -> bool:
    """A DELETE without the break-glass annotation."""
    if request.operation != DELETE:
        return False
    return bool(dig(request.obj, "metadata", "annotations", ALLOW_IN_USE_DELETE) != "true")


def _live_services(reader: runtimes.Reader, namespace: str) -> list[Obj]:
    if not namespace:
        return []
    found = reader.list(resources.INFERENCE_SERVICES, namespace)
    live = [isvc for isvc in found if not dig(isvc, "metadata", "deletionTimestamp")]
    return sorted(live, key=lambda isvc: text(dig(isvc, "metadata", "name")))


def _names(ref: Any, name: str, kind: str) -> bool:
    ref = as_dict(ref)
    return text(ref.get("name")) == name and ref.get("kind") in (None, "", kind)


def _rollout_policy_body(request: AdmissionRequest, reader: runtimes.Reader) -> Outcome:
    """Create and update: the body rules (canary_validation), a warning when a policy in use changes."""
    from ome.webhooks import canary_validation  # noqa: PLC0415 - it imports the rollout admission rules

    consumers = sum(
        1
        for isvc in _live_services(reader, request.namespace)
        for group in as_list(dig(isvc, "spec", "rollout", "groups"))
        if _names(as_dict(group).get("policyRef"), request.name, ROLLOUT_POLICY)
    )
    spec = as_dict(request.obj.get("spec"))
    old = as_dict(request.old.get("spec")) if request.old is not None else None
    if (error := canary_validation.policy_update_error(spec, old, consumers)) is not None:
        return Outcome.deny(error)
    return Outcome(warnings=canary_validation.policy_update_warnings(old, spec, consumers))

