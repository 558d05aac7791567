"""AutoscalerPolicy status: `Ready` (`TemplatesValid`, or why not: `ProviderUnknown`, ...), `InUse`
(`Attached` / `NoConsumers`) and `attachedComponents` (an engine and a decoder count as two).

Runs only when the feature is on. Consumers are counted from the InferenceServices in the policy's
namespace whose components name it in `autoscalerPolicyRef`. A status that would not change is not
written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler.reconciler import FIELD_MANAGER, Reader, Writer, providers_of
from ome.framework.reconcile import Request, Result
from ome.framework.timefmt import format_time
from ome.resolution import autoscaler_policy, autoscaling, modes

Obj = dict[str, Any]
_STATUS_KEYS: Final = ("observedGeneration", "attachedComponents", "conditions")


def attached(reader: Reader, namespace: str, name: str) -> int:
    count = 0
    for isvc in reader.list(resources.INFERENCE_SERVICES, namespace):
        spec = isvc.get("spec") or {}
        count += sum(1 for c in modes.COMPONENTS if autoscaling.policy_ref(spec.get(c) or {}) == name)
    return count


class PolicyStatusReconciler:
    def __init__(self, *, reader: Reader, writer: Writer, config: Callable[[], InferenceServiceConfig],
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._reader = reader
        self._writer = writer
        self._config = config
        self._clock = clock

    async def reconcile(self, req: Request) -> Result:
        policy = self._reader.get_or_none(resources.AUTOSCALER_POLICIES, req.name, req.namespace)
        if policy is None or (policy.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        count = attached(self._reader, req.namespace, req.name)
        ready = autoscaler_policy.ready_condition(policy, providers_of(self._config()))
        in_use = autoscaler_policy.in_use_condition(count)
        old = policy.get("status") or {}
        now = format_time(self._clock())
        status: Obj = {
            "observedGeneration": (policy.get("metadata") or {}).get("generation"),
            "conditions": [_condition(autoscaler_policy.READY, ready, old, now),
                           _condition(autoscaler_policy.IN_USE, in_use, old, now)],
        }
        if count:
            status["attachedComponents"] = count
        if all(old.get(k) == status.get(k) for k in _STATUS_KEYS):
            return Result()
        body = {"apiVersion": "ome.io/v1beta1", "kind": "AutoscalerPolicy",
                "metadata": {"name": req.name, "namespace": req.namespace}, "status": status}
        await self._writer.apply(resources.AUTOSCALER_POLICIES, body, field_manager=FIELD_MANAGER,
                                 subresource="status")
        return Result()


def _condition(type_: str, value: tuple[str, str, str], old: Mapping[str, Any], now: str) -> Obj:
    status, reason, message = value
    previous = next((c for c in old.get("conditions") or [] if c.get("type") == type_), None) or {}
    since = previous.get("lastTransitionTime") if previous.get("status") == status else None
    return {"type": type_, "status": status, "lastTransitionTime": since or now, "reason": reason,
            "message": message}
