"""A pass that renders nothing and leaves the running workloads as they are: what it reports. Pure.

A model OME cannot serve from (disabled, or Sharded) and a broken runtime chain each record an event
named here. A runtime that cannot be resolved sets RuntimeReady False (the reconciler records a
`RuntimeNotFound` Warning event, or a `RuntimePinError` one when the service cannot pin). A pinned runtime
that drifted in a way that pauses updates (RevisionMismatch, RevisionMissing, RuntimeMismatch) is reported
while the workloads still serve where they did. Neither status knows anything new about the model:
status.modelStatus stays as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import runtime_pinning, status
from ome.resolution import models
from ome.resolution import runtime_revisions as rr

Obj = dict[str, Any]

RUNTIME_NOT_FOUND: Final = "RuntimeNotFound"
RUNTIME_VALIDATION_ERROR: Final = "RuntimeValidationError"
RUNTIME_FETCH_ERROR: Final = "RuntimeFetchError"
MODEL_RECONCILE_ERROR: Final = "ModelReconcileError"
MODEL_NOT_READY: Final = "ModelNotReady"
SHARDED_UNSUPPORTED: Final = "no model cache provider is configured for sharded model loading"


def model_problem(model: models.ResolvedModel) -> tuple[Literal["Normal", "Warning"], str, str] | None:
    """A model OME cannot serve from, as troubleshoot-an-inferenceservice.md lists them: disabled (Warning
    ModelReconcileError), or Sharded (Normal ModelNotReady). Nothing is rendered for either."""
    if model.disabled:
        return "Warning", MODEL_RECONCILE_ERROR, f"specified base model {model.name} is disabled"
    if model.spec.get("distribution") == "Sharded":
        return "Normal", MODEL_NOT_READY, SHARDED_UNSUPPORTED
    return None


def inheritance_event_reason(isvc: Obj, *, has_model: bool) -> str:
    """The event of a broken runtime chain, as runtime-inheritance.md names it."""
    if rr.pins(isvc):
        return rr.PIN_ERROR
    return RUNTIME_VALIDATION_ERROR if has_model else RUNTIME_FETCH_ERROR


def unresolved_status(
    isvc: Obj, error: str, *, has_model: bool, config: InferenceServiceConfig, now: str
) -> Obj:
    """The status of a service whose runtime cannot be resolved (`error`: RuntimeReady's message)."""
    observed = status.Observed(
        plans=None,
        runtime_error=error,
        has_model=has_model,
        **runtime_pinning.observed_fields(rr.carried(isvc)),
    )
    return _keep_model_status(isvc, status.compute(isvc, observed, config, now), has_model)


def paused_status(
    isvc: Obj, pin: rr.Decision, runtime_name: str, *, has_model: bool, problem: str,
    config: InferenceServiceConfig, now: str,
) -> Obj:
    """The status of a service whose runtime drifted in a way that pauses updates."""
    observed = status.Observed(
        plans=None,
        runtime_name=runtime_name,
        runtime_error=problem or None,
        has_model=has_model,
        **runtime_pinning.observed_fields(pin),
    )
    computed = status.compute(isvc, observed, config, now)
    old = isvc.get("status") or {}
    for key in ("url", "address", "addresses", "traffic"):  # the workloads still serve where they did
        if key in old:
            computed[key] = old[key]
    return _keep_model_status(isvc, computed, has_model)


def _keep_model_status(isvc: Mapping[str, Any], computed: Obj, has_model: bool) -> Obj:
    """Nothing new is known about the model: keep status.modelStatus as it is."""
    computed.pop("modelStatus", None)
    if has_model and (old := (isvc.get("status") or {}).get("modelStatus")) is not None:
        computed["modelStatus"] = old
    return computed
