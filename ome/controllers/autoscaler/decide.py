"""What the autoscaler reconciler wants for one component (pure): the scaler to apply or keep, the stale
scalers to delete, the PodDisruptionBudget, a replica count to write and the status entry.

Replica counts: under `None` OME holds the workload at `minReplicas` (OMENative: at least 1), even after a
`kubectl scale`; under `External` it keeps the count, except that an OMENative component is never left at
0 (or unset): it goes back to `minReplicas`, or 1. `HPA` and `KEDA` leave the count to the autoscaler.

A policy hold keeps the scaler its policy last rendered (read back from the object), with the bounds of
the spec on RawDeployment; when the policy never rendered, whatever runs is left as it is.

A component's first status entry under an HPA is held back until the HPA controller has reported on the
HPA with the workload's count (its conditions and counts are part of the entry), for at most
`SCALER_REPORT_GRACE` after the HPA was created: one status write instead of one for the class and more
for the HPA's reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.framework.timefmt import parse_time
from ome.resolution import autoscaler_objects as scalers
from ome.resolution import autoscaling, components, disruption, modes, naming, omenative
from ome.resolution.autoscaling import Bounds, Resolution
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

HPA_STATUS_FIELDS: Final = ("currentReplicas", "desiredReplicas")
SCALER_REPORT_GRACE: Final = 60.0
"""Seconds after an HPA's creation by which its component's first status entry is written, reported on
or not (the HPA controller reports every 15 s by default)."""
KEDA_MISSING: Final = (
    "won't watch keda.sh/v1alpha1/ScaledObject resources: the CRD was not served when the controller "
    "started; install KEDA and restart the controller"
)


@dataclass(frozen=True, slots=True)
class Inputs:
    isvc: Mapping[str, Any]
    component: str
    mode: str
    isvc_component: Mapping[str, Any]
    runtime_component: Mapping[str, Any]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    pod_selector: Mapping[str, str]
    pods_per_instance: int = 1
    policy: autoscaling.PolicyOutcome | None = None
    hpa: Mapping[str, Any] | None = None
    scaled_object: Mapping[str, Any] | None = None
    pdb: Mapping[str, Any] | None = None
    workload: Mapping[str, Any] | None = None
    keda_hpa: Mapping[str, Any] | None = None
    """The HorizontalPodAutoscaler KEDA made for the ScaledObject: its replica counts go to status."""


@dataclass(frozen=True)
class Desired:
    resolution: Resolution
    bounds: Bounds | None
    scaler: Obj | None = None
    """Apply this HPA or ScaledObject (None: nothing to apply)."""
    keep: frozenset[str] = frozenset()
    """Kinds of OME's scalers to leave alone (the kept one while holding); every other one is deleted."""
    pdb: Obj | None = None
    scale_to: int | None = None
    error: str | None = None
    """Why the component cannot be reconciled (logged as `Failed to reconcile component`)."""
    kept_block: Obj | None = None
    pdb_error: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def klass(self) -> str | None:
        if self.resolution.hold is not None:
            return str(self.kept_block["class"]) if self.kept_block else None
        return self.resolution.klass


def decide(inputs: Inputs, config: InferenceServiceConfig, *, keda_served: bool) -> Desired:
    resolution = autoscaling.resolve(
        mode=inputs.mode,
        isvc_component=inputs.isvc_component,
        runtime_component=inputs.runtime_component,
        annotations=inputs.annotations,
        policy=inputs.policy,
    )
    pdb, pdb_error = _pdb(inputs, config)
    if inputs.mode == modes.MULTINODE:
        return Desired(resolution, None, pdb=None, pdb_error=pdb_error)
    try:
        bounds = autoscaling.replica_bounds(
            component=inputs.component,
            mode=inputs.mode,
            isvc_component=inputs.isvc_component,
            runtime_component=inputs.runtime_component,
            defaults=config.deploy.replicas,
        )
    except autoscaling.AutoscalingError as exc:
        # RawDeployment with min above an explicit max: the autoscaler stops updating, as documented.
        return Desired(resolution, None, keep=frozenset({"HorizontalPodAutoscaler", "ScaledObject"}),
                       error=str(exc), pdb=pdb, pdb_error=pdb_error)
    if pdb is not None and inputs.mode == modes.OMENATIVE:
        pdb = _omenative_pdb(inputs, config, bounds)
    target = scalers.Target(inputs.isvc, inputs.component, inputs.mode, bounds, inputs.labels,
                            inputs.annotations)
    if resolution.hold is not None:
        return _holding(inputs, resolution, target, pdb, pdb_error)
    klass = resolution.klass
    if klass == autoscaling.KEDA and not keda_served:
        return Desired(resolution, bounds, keep=frozenset({"HorizontalPodAutoscaler"}), pdb=pdb,
                       pdb_error=pdb_error,
                       error=KEDA_MISSING)
    try:
        scaler = scalers.render(target, resolution.block, policy=resolution.policy)
    except autoscaling.AutoscalingError as exc:
        return Desired(resolution, bounds, keep=_kinds(inputs), pdb=pdb, pdb_error=pdb_error, error=str(exc))
    return Desired(resolution, bounds, scaler=scaler, pdb=pdb, pdb_error=pdb_error,
                   scale_to=_scale_to(inputs, klass, bounds))


def _holding(inputs: Inputs, resolution: Resolution, target: scalers.Target, pdb: Obj | None,
             pdb_error: str | None) -> Desired:
    current = inputs.scaled_object if inputs.scaled_object is not None else inputs.hpa
    kind = "ScaledObject" if inputs.scaled_object is not None else "HorizontalPodAutoscaler"
    last = scalers.last_rendered(current)
    if last is None or current is None:
        # Never rendered from the policy: leave whatever runs as it is.
        return Desired(resolution, target.bounds, keep=_kinds(inputs), pdb=pdb, pdb_error=pdb_error)
    block, policy = last
    scaler = None
    if inputs.mode == modes.RAW_DEPLOYMENT:
        try:
            scaler = scalers.render(target, block, policy=policy)
        except autoscaling.AutoscalingError:
            scaler = None
    return Desired(resolution, target.bounds, scaler=scaler, keep=frozenset({kind}), pdb=pdb,
                   pdb_error=pdb_error, kept_block=block)


def _kinds(inputs: Inputs) -> frozenset[str]:
    kinds = set()
    if inputs.hpa is not None:
        kinds.add("HorizontalPodAutoscaler")
    if inputs.scaled_object is not None:
        kinds.add("ScaledObject")
    return frozenset(kinds)


def _scale_to(inputs: Inputs, klass: str | None, bounds: Bounds) -> int | None:
    workload = inputs.workload
    if workload is None:
        return None
    current = (workload.get("spec") or {}).get("replicas")
    floor = autoscaling.floor_for_mode(inputs.mode, bounds.min)
    if klass == autoscaling.NONE:
        return floor if current != floor else None
    if inputs.mode == modes.OMENATIVE and (current is None or int(current) <= 0):
        return floor
    return None


def _pdb(inputs: Inputs, config: InferenceServiceConfig) -> tuple[Obj | None, str | None]:
    try:
        budget = disruption.resolve_budget(inputs.component, inputs.mode, inputs.isvc_component,
                                           inputs.runtime_component, config.pod_disruption_budget)
    except disruption.BudgetError as exc:
        return None, str(exc)
    if budget is None:
        return None, None
    if (problem := disruption.preflight_error(inputs.component, inputs.pdb, inputs.isvc)) is not None:
        return None, problem
    return disruption.render(inputs.isvc, component=inputs.component, mode=inputs.mode, budget=budget,
                             labels=inputs.labels, annotations=inputs.annotations,
                             selector=inputs.pod_selector), None


def _omenative_pdb(inputs: Inputs, config: InferenceServiceConfig, bounds: Bounds) -> Obj | None:
    budget = disruption.resolve_budget(inputs.component, inputs.mode, inputs.isvc_component,
                                       inputs.runtime_component, config.pod_disruption_budget)
    if budget is None:
        return None
    replicas = ((inputs.workload or {}).get("spec") or {}).get("replicas")
    instances = int(replicas) if replicas else autoscaling.floor_for_mode(inputs.mode, bounds.min)
    return disruption.render(inputs.isvc, component=inputs.component, mode=inputs.mode, budget=budget,
                             labels=inputs.labels, annotations=inputs.annotations,
                             selector=inputs.pod_selector, instances=max(instances, 1),
                             pods_per_instance=inputs.pods_per_instance)


def inputs_for(
    isvc: Mapping[str, Any],
    plan: ComponentPlan,
    runtime_component: Mapping[str, Any],
    **observed: Any,
) -> Inputs:
    """The inputs of one planned component; `observed` adds the cached objects and the policy outcome."""
    selector = (omenative.pod_selector(plan) if plan.mode == modes.OMENATIVE
                else {naming.APP_LABEL: naming.truncate(plan.name)})
    pods = 1 + max(plan.worker_size, 1) if plan.multi_pod else 1
    return Inputs(
        isvc=isvc, component=plan.component, mode=plan.mode,
        isvc_component=((isvc.get("spec") or {}).get(plan.component) or {}),
        runtime_component=runtime_component, labels=plan.labels,
        annotations=dict(plan.annotations),
        pod_selector=selector, pods_per_instance=pods, **observed,
    )


def initial_replicas(isvc: Mapping[str, Any], plan: ComponentPlan, runtime_spec: Mapping[str, Any],
                     config: InferenceServiceConfig) -> int | None:
    """The count an OMENative replica is created with: the one `_scale_to` would set on a replica
    created without it (minReplicas, at least 1), so the create needs no `/scale` write after it.
    None for other modes, or when the bounds do not resolve (decide reports that)."""
    if plan.mode != modes.OMENATIVE:
        return None
    try:
        bounds = autoscaling.replica_bounds(
            component=plan.component, mode=plan.mode,
            isvc_component=(isvc.get("spec") or {}).get(plan.component) or {},
            runtime_component=runtime_spec.get(components.RUNTIME_CONFIG_KEYS[plan.component]) or {},
            defaults=config.deploy.replicas,
        )
    except autoscaling.AutoscalingError:
        return None
    return autoscaling.floor_for_mode(plan.mode, bounds.min)


def desired_objects(isvc: Mapping[str, Any], plan: ComponentPlan, runtime_component: Mapping[str, Any],
                    config: InferenceServiceConfig, *, keda_served: bool = False) -> list[Obj]:
    """The HPA or ScaledObject and the PodDisruptionBudget a fresh component gets (nothing cached yet)."""
    desired = decide(inputs_for(isvc, plan, runtime_component), config, keda_served=keda_served)
    return [obj for obj in (desired.scaler, desired.pdb) if obj is not None]


# -- status ----------------------------------------------------------------------------------------


def status_entry(inputs: Inputs, desired: Desired, old: Mapping[str, Any], now: str) -> Obj:
    """status.components.<c>: `autoscaler`, as this controller reports it (the InferenceService
    controller reports `scaleTargetRef` next to it)."""
    resolution = desired.resolution
    klass = desired.klass
    entry: Obj = {}
    auto: Obj = {"specSource": resolution.source}
    if klass:
        auto["class"] = klass
        auto["managedBy"] = autoscaling.managed_by(klass)
    if resolution.policy:
        auto["policy"] = {"name": resolution.policy}
        if resolution.policy_generation is not None:
            auto["policy"]["observedGeneration"] = resolution.policy_generation
    if resolution.shadowed:
        auto["shadowedPolicyRef"] = {"name": resolution.shadowed}
    conditions: list[Obj] = []
    live = {autoscaling.KEDA: inputs.scaled_object, autoscaling.HPA: inputs.hpa}.get(klass or "")
    if live is not None and auto.get("managedBy") == "ome":
        live_status = live.get("status") or {}
        counts = live_status if klass == autoscaling.HPA else ((inputs.keda_hpa or {}).get("status") or {})
        for key in HPA_STATUS_FIELDS:
            if counts.get(key):
                auto[key] = counts[key]
        since = live_status.get("lastScaleTime") or live_status.get("lastActiveTime")
        if since:
            auto["lastScaleTime"] = since
        conditions.extend(_copied_conditions(live_status.get("conditions") or [], now))
    if resolution.condition is not None:
        conditions.append(_condition(resolution.condition, old, now))
    if conditions:
        auto["conditions"] = sorted(conditions, key=lambda c: c["type"])
    entry["autoscaler"] = auto
    return entry


def awaiting_scaler_report(inputs: Inputs, desired: Desired, old: Mapping[str, Any], now: datetime
                           ) -> float | None:
    """Seconds to hold back the component's first entry (`old` is empty) while the HPA OME applied has no
    report from the HPA controller yet; None: write it now. The HPA's creation and its status update
    are both events of this controller, so the hold ends with the report."""
    if old or desired.klass != autoscaling.HPA or desired.scaler is None:
        return None
    if autoscaling.managed_by(desired.klass) != "ome" or desired.resolution.hold is not None:
        return None
    hpa = inputs.hpa
    if hpa is not None and _reported(hpa, inputs.workload):
        return None
    # Not in the cache yet: applied in this pass, so as new as the service.
    created = ((hpa or inputs.isvc).get("metadata") or {}).get("creationTimestamp")
    if not created:
        return None
    try:
        age = (now - parse_time(str(created))).total_seconds()
    except ValueError:
        return None
    return SCALER_REPORT_GRACE - age if age < SCALER_REPORT_GRACE else None


def _reported(hpa: Mapping[str, Any], workload: Mapping[str, Any] | None) -> bool:
    """The HPA controller reported on the HPA, and counted the workload's replicas: an OMENative replica
    reports its count (the scale subresource's status) only once its Instances are recorded, and an HPA
    that synced before that reports again a sync later."""
    status = hpa.get("status") or {}
    if not status.get("conditions"):
        return False
    wanted = ((workload or {}).get("spec") or {}).get("replicas")
    return not isinstance(wanted, int) or wanted < 1 or status.get("currentReplicas") == wanted


def _copied_conditions(conditions: list[Mapping[str, Any]], now: str) -> list[Obj]:
    copied = []
    for cond in conditions:
        if not cond.get("type") or cond.get("type") == autoscaling.RESOLVED_CONDITION:
            continue
        copied.append({
            "type": cond["type"],
            "status": cond.get("status") or "Unknown",
            "lastTransitionTime": cond.get("lastTransitionTime") or now,
            "reason": cond.get("reason") or cond["type"],
            "message": cond.get("message") or "",
        })
    return copied


def _condition(cond: autoscaling.Condition, old: Mapping[str, Any], now: str) -> Obj:
    previous = next((c for c in (old.get("conditions") or []) if c.get("type") == cond.type), None) or {}
    since = previous.get("lastTransitionTime") if previous.get("status") == cond.status else None
    return {"type": cond.type, "status": cond.status, "lastTransitionTime": since or now,
            "reason": cond.reason, "message": cond.message}
