"""Rollout status: canary step machine, pinned rollout runs, cross-component coordination (v1.3)."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import ComponentType, Int32, Int64, IntOrString, OMEModel, Time, f
from ome.api.v1beta1.rollout import ComparisonOperator, RolloutGroup, RolloutPolicyRef

RolloutPhase = Literal[
    "Stable",
    "Canarying",
    "BlueGreenStandby",
    "Pending",
    "Paused",
    "Promoting",
    "RollingBack",
    "RolledBack",
    "Failed",
]
RolloutPlanSource = Literal["Inline", "Policy"]
RolloutRunOutcome = Literal["Completed", "RolledBack", "Superseded"]
CoordinationPolicy = Literal["BlueGreen", "RollingUpdate", "Independent", "Sequential"]
CoordinationPhase = Literal[
    "Idle",
    "Surging",
    "Waiting",
    "Shifting",
    "Draining",
    "ScalingDown",
    "Staged",
    "Failed",
    "RollingBack",
    "Paused",
]


class ComponentTrafficTarget(OMEModel):
    """Share of a component's traffic routed to one revision."""

    revision_name: str = f("revisionName", required=True)
    percent: Int32 = f("percent", required=True, minimum=0, maximum=100)
    tag: str | None = f("tag")
    latest_revision: bool | None = f("latestRevision")
    pairing_protocol: str | None = f("pairingProtocol")


class AnalysisMetricResult(OMEModel):
    name: str = f("name", required=True)
    value: str | None = f("value")
    threshold: str | None = f("threshold")
    operator: ComparisonOperator | None = f("operator")
    passed: bool = f("passed", required=True)
    message: str | None = f("message")
    time: Time | None = f("time")


class CanaryStatus(OMEModel):
    target_id: str | None = f("targetID")
    canary_revision_hash: str | None = f("canaryRevisionHash")
    stable_revision_hash: str | None = f("stableRevisionHash")
    current_step: Int32 = f("currentStep", required=True)
    step_entered_time: Time | None = f("stepEnteredTime")
    observed_traffic_weight: Int32 = f("observedTrafficWeight", required=True)
    promoted_through: str | None = f("promotedThrough")
    pre_step_hold: bool | None = f("preStepHold")
    rolled_back_revision_hash: str | None = f("rolledBackRevisionHash")
    analysis_failed_checks: Int32 | None = f("analysisFailedChecks")
    last_evaluation_time: Time | None = f("lastEvaluationTime")
    last_conclusive_evaluation_time: Time | None = f("lastConclusiveEvaluationTime")
    metric_results: list[AnalysisMetricResult] | None = f(
        "metricResults", list_type="map", list_map_keys=("name",)
    )


# --- pinned rollout runs ---------------------------------------------------------------------


class RolloutRunTarget(OMEModel):
    component: ComponentType = f("component", required=True)
    revision: str | None = f("revision")
    stable_revision: str | None = f("stableRevision")


class RolloutRunGroup(OMEModel):
    source: RolloutPlanSource = f("source", required=True)
    policy_ref: RolloutPolicyRef | None = f("policyRef")
    policy_generation: Int64 | None = f("policyGeneration")
    portable_digest: str | None = f("portableDigest")
    group: RolloutGroup = f("group", required=True)


class RolloutRunPlan(OMEModel):
    groups: list[RolloutRunGroup] | None = f("groups", list_type="atomic")


class RolloutRun(OMEModel):
    run_id: str = f("runID", required=True)
    opened_at: Time = f("openedAt", required=True)
    pinned_at: Time = f("pinnedAt", required=True)
    target_revisions: list[RolloutRunTarget] | None = f(
        "targetRevisions", list_type="map", list_map_keys=("component",)
    )
    plan: RolloutRunPlan = f("plan", required=True)


class RolloutRunProvenance(OMEModel):
    source: RolloutPlanSource = f("source", required=True)
    policy_ref: RolloutPolicyRef | None = f("policyRef")
    portable_digest: str | None = f("portableDigest")


class RolloutRunRecord(OMEModel):
    outcome: RolloutRunOutcome = f("outcome", required=True)
    opened_at: Time | None = f("openedAt")
    closed_at: Time | None = f("closedAt")
    target_revisions: list[RolloutRunTarget] | None = f(
        "targetRevisions", list_type="map", list_map_keys=("component",)
    )
    groups: list[RolloutRunProvenance] | None = f("groups", list_type="atomic")


class ShadowedRolloutPolicyRef(OMEModel):
    name: str = f("name", required=True)
    would_pin_digest: str | None = f("wouldPinDigest")


class RolloutGroupResolution(OMEModel):
    index: Int32 = f("index", required=True)
    source: RolloutPlanSource = f("source", required=True)
    policy_ref: RolloutPolicyRef | None = f("policyRef")
    observed_digest: str | None = f("observedDigest")
    shadowed_policy_ref: ShadowedRolloutPolicyRef | None = f("shadowedPolicyRef")


class RolloutStatus(OMEModel):
    """status.rollout: the pinned active run, the last run, the per-group resolution view."""

    active_run: RolloutRun | None = f("activeRun")
    last_run: RolloutRunRecord | None = f("lastRun")
    groups: list[RolloutGroupResolution] | None = f("groups", list_type="atomic")


# --- coordination -----------------------------------------------------------------------------


class RolloutCoordinationRatio(OMEModel):
    original: dict[str, Int32] | None = f("original")
    current: dict[str, Int32] | None = f("current")
    new_pods: dict[str, Int32] | None = f("newPods")


class RolloutCoordinationGroupStatus(OMEModel):
    name: str | None = f("name")
    components: list[ComponentType] | None = f("components")
    policy: CoordinationPolicy | None = f("policy")
    order: list[ComponentType] | None = f("order")
    phase: CoordinationPhase | None = f("phase")
    composite_phase: str | None = f("compositePhase")
    current_component: ComponentType | None = f("currentComponent")
    previous_component: ComponentType | None = f("previousComponent")
    observed_surge: IntOrString | None = f("observedSurge")
    observed_ratio: RolloutCoordinationRatio | None = f("observedRatio")
    last_transition_time: Time | None = f("lastTransitionTime")
    message: str | None = f("message")


class RolloutCoordinationStatus(OMEModel):
    groups: list[RolloutCoordinationGroupStatus] | None = f("groups")
