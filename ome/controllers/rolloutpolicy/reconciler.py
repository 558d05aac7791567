"""RolloutPolicy status: `Ready` (`BodyValid`, `ProviderUnbound` or `BodyInvalid`), `InUse` (`Attached` /
`NoConsumers`), `attachedGroups`, `portableDigest` and `observedGeneration` (rollout-policy.md,
Conditions and status).

Attached groups are the rollout groups of the InferenceServices in the policy's namespace whose
`policyRef` names it (kind RolloutPolicy or unset). A status that would not change is not written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from ome.api import resources
from ome.framework.reconcile import Request, Result
from ome.framework.resources import Resource
from ome.framework.timefmt import format_time
from ome.omenative import canary_run
from ome.webhooks import canary_validation

Obj = dict[str, Any]
FIELD_MANAGER: Final = "ome-rolloutpolicy-controller"
READY: Final = "Ready"
IN_USE: Final = "InUse"
_STATUS_KEYS: Final = ("observedGeneration", "portableDigest", "attachedGroups", "conditions")


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...
    def list(self, res: Resource, namespace: str | None = None) -> list[Obj]: ...


class Writer(Protocol):
    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None, timeout: float | None = None) -> Obj: ...


def attached_groups(reader: Reader, namespace: str, name: str) -> int:
    count = 0
    for isvc in reader.list(resources.INFERENCE_SERVICES, namespace):
        for group in ((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or []:
            ref = (group or {}).get("policyRef") or {}
            if ref.get("name") == name and ref.get("kind") in (None, "", "RolloutPolicy"):
                count += 1
    return count


def ready_condition(spec: Mapping[str, Any], bound: set[str] | frozenset[str]) -> tuple[str, str, str]:
    if (error := canary_validation.policy_body_error(dict(spec))) is not None:
        return "False", "BodyInvalid", error
    provider = (((spec.get("canary") or {}).get("prometheus") or {}).get("providerRef") or {}).get("name")
    if provider and provider not in bound:
        return (
            "True",
            "ProviderUnbound",
            f'metric provider "{provider}" is not bound in this cluster\'s metricProviders configuration; a '
            "rollout that uses this policy parks",
        )
    return "True", "BodyValid", "the policy body is valid"


def in_use_condition(count: int) -> tuple[str, str, str]:
    if count:
        return "True", "Attached", f"referenced by {count} rollout group(s)"
    return "False", "NoConsumers", "no rollout group references this policy"


class RolloutPolicyStatusReconciler:
    def __init__(self, *, reader: Reader, writer: Writer, bound_providers: Callable[[], set[str]],
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._reader = reader
        self._writer = writer
        self._bound = bound_providers
        self._clock = clock
        self.writes = 0

    async def reconcile(self, req: Request) -> Result:
        policy = self._reader.get_or_none(resources.ROLLOUT_POLICIES, req.name, req.namespace)
        if policy is None or (policy.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        spec = policy.get("spec") or {}
        count = attached_groups(self._reader, req.namespace, req.name)
        old = policy.get("status") or {}
        now = format_time(self._clock())
        status: Obj = {
            "observedGeneration": (policy.get("metadata") or {}).get("generation"),
            "conditions": [
                _condition(READY, ready_condition(spec, self._bound()), old, now),
                _condition(IN_USE, in_use_condition(count), old, now),
            ],
        }
        body = canary_run.progression_of(spec)
        if body:
            status["portableDigest"] = canary_run.body_digest(body)
        if count:
            status["attachedGroups"] = count
        if all(old.get(k) == status.get(k) for k in _STATUS_KEYS):
            return Result()
        await self._writer.apply(
            resources.ROLLOUT_POLICIES,
            {"apiVersion": "ome.io/v1beta1", "kind": "RolloutPolicy",
             "metadata": {"name": req.name, "namespace": req.namespace}, "status": status},
            field_manager=FIELD_MANAGER, subresource="status",
        )
        self.writes += 1
        return Result()


def _condition(type_: str, value: tuple[str, str, str], old: Mapping[str, Any], now: str) -> Obj:
    status, reason, message = value
    previous = next((c for c in old.get("conditions") or [] if c.get("type") == type_), None) or {}
    same = (previous.get("status"), previous.get("reason")) == (status, reason)
    return {"type": type_, "status": status, "lastTransitionTime": previous.get("lastTransitionTime")
            if same and previous.get("lastTransitionTime") else now, "reason": reason, "message": message}
