"""Multi-cluster placement and routing of an InferenceService (alpha, in development, v1.3).

The v1.3 sources carry two generations of spec.placement: the ClusterAffinity policy
(policy, clusterAffinity, maxSurge, replacementTimeout) and the earlier selector form
(requirements, clusterSelector, capacityFactors). Both are accepted here.
"""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    UID,
    URL,
    ComponentType,
    Duration,
    Int32,
    Int64,
    OMEModel,
    Quantity,
    Rule,
    StrMap,
    Time,
    f,
)
from ome.api.v1beta1.rollout_status import RolloutPlanSource, RolloutRunOutcome

PlacementMode = Literal["Single", "All", "Split", "SplitByCapacity"]
PlacementPolicy = Literal["ClusterAffinity"]
PlacementPhase = Literal["Pending", "Admitting", "Racing", "Placed", "Failed"]
CandidatePlacementPhase = Literal["Admitting", "Placed", "Admitted"]
RoutingAllFailedPolicy = Literal["PreserveTraffic", "Drain"]
HTTPMethod = Literal["GET", "HEAD", "POST"]


# --- spec.placement ---------------------------------------------------------------------------


class ClusterSelectorRequirement(OMEModel):
    key: str = f("key", required=True, min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"] = f("operator", required=True)
    values: list[str] | None = f("values", max_items=64, list_type="atomic")


class ClusterAffinityTerm(OMEModel):
    crd_rules = (
        Rule(
            "(has(self.matchExpressions) && size(self.matchExpressions) > 0) || "
            "(has(self.matchFields) && size(self.matchFields) > 0)",
            "a cluster affinity term must contain a requirement",
        ),
    )

    weight: Int32 | None = f("weight", minimum=1)
    match_expressions: list[ClusterSelectorRequirement] | None = f(
        "matchExpressions", max_items=64, list_type="atomic"
    )
    match_fields: list[ClusterSelectorRequirement] | None = f("matchFields", max_items=64, list_type="atomic")


class SplitSpec(OMEModel):
    replicas: Int32 | None = f("replicas", minimum=1)
    spread: bool | None = f("spread")
    max_replicas_per_cluster: Int32 | None = f("maxReplicasPerCluster", minimum=0)
    min_replicas_per_cluster: Int32 | None = f("minReplicasPerCluster", minimum=0)


class PlacementSpec(OMEModel):
    crd_rules = (
        Rule(
            "!has(self.replacementTimeout) || (has(self.policy) && self.policy == 'ClusterAffinity' "
            "&& has(self.mode) && self.mode == 'Single')",
            "replacementTimeout requires ClusterAffinity Single placement",
        ),
    )

    policy: PlacementPolicy | None = f("policy")
    mode: PlacementMode | None = f("mode", crd_default="Single")
    cluster_affinity: list[ClusterAffinityTerm] | None = f(
        "clusterAffinity", nullable=True, min_items=1, max_items=64, list_type="atomic"
    )
    max_surge: Int32 | None = f("maxSurge", minimum=0)
    replacement_timeout: Duration | None = f(
        "replacementTimeout",
        rules=(Rule("duration(self) > duration('0s')", "replacementTimeout must be a positive duration"),),
    )
    split: SplitSpec | None = f("split")
    requirements: str | None = f("requirements")
    cluster_selector: str | None = f("clusterSelector")
    capacity_factors: dict[str, Quantity] | None = f("capacityFactors")


# --- spec.routing -----------------------------------------------------------------------------

_PROBE_FIELDS = (
    "path",
    "method",
    "acceptStatuses",
    "gateStatuses",
    "period",
    "timeout",
    "failureThreshold",
    "successThreshold",
    "allFailedPolicy",
)
_CAPACITY_FIELDS = ("path", "method", "format", "period", "timeout", "samples", "quorum", "maxAge")


def _none_set(names: tuple[str, ...]) -> str:
    return " && ".join(f"!has(self.{n})" for n in names)


def _all_set(names: tuple[str, ...]) -> str:
    return " && ".join(f"has(self.{n})" for n in names)


_POSITIVE_PERIOD = Rule(
    "!has(self.period) || duration(self.period) > duration('0s')", "period must be positive"
)
_POSITIVE_TIMEOUT = Rule(
    "!has(self.timeout) || duration(self.timeout) > duration('0s')", "timeout must be positive"
)
_TIMEOUT_BELOW_PERIOD = Rule(
    "!has(self.period) || !has(self.timeout) || duration(self.timeout) < duration(self.period)",
    "timeout must be shorter than period",
)


class RoutingProbeSpec(OMEModel):
    crd_rules = (
        Rule(
            f"!(has(self.disabled) && self.disabled) || ({_none_set(_PROBE_FIELDS)})",
            "disabled must not be combined with probe configuration fields",
        ),
        Rule(
            f"(has(self.disabled) && self.disabled) || ({_all_set(_PROBE_FIELDS)})",
            "an enabled probe must specify path, method, acceptStatuses, gateStatuses, period, timeout, "
            "failureThreshold, successThreshold, and allFailedPolicy",
        ),
        _POSITIVE_PERIOD,
        _POSITIVE_TIMEOUT,
        _TIMEOUT_BELOW_PERIOD,
        Rule(
            "!has(self.gateStatuses) || !self.gateStatuses.exists(s, s == 401 || s == 403 || s == 429)",
            "gateStatuses must not contain 401, 403, or 429",
        ),
    )

    disabled: bool | None = f("disabled")
    path: str | None = f("path", min_length=1, pattern="^/")
    method: HTTPMethod | None = f("method")
    accept_statuses: list[Int32] | None = f(
        "acceptStatuses", list_type="set", min_items=1, items={"minimum": 100, "maximum": 599}
    )
    gate_statuses: list[Int32] | None = f(
        "gateStatuses", list_type="set", min_items=1, max_items=500, items={"minimum": 100, "maximum": 599}
    )
    period: Duration | None = f("period")
    timeout: Duration | None = f("timeout")
    failure_threshold: Int32 | None = f("failureThreshold", minimum=1)
    success_threshold: Int32 | None = f("successThreshold", minimum=1)
    all_failed_policy: RoutingAllFailedPolicy | None = f("allFailedPolicy")


class RoutingCapacitySpec(OMEModel):
    crd_rules = (
        Rule(
            f"!(has(self.disabled) && self.disabled) || ({_none_set((*_CAPACITY_FIELDS, 'options'))})",
            "disabled must not be combined with capacity configuration fields",
        ),
        Rule(
            f"(has(self.disabled) && self.disabled) || ({_all_set(_CAPACITY_FIELDS)})",
            "an enabled capacity poll must specify path, method, format, period, timeout, samples, quorum, "
            "and maxAge",
        ),
        _POSITIVE_PERIOD,
        _POSITIVE_TIMEOUT,
        _TIMEOUT_BELOW_PERIOD,
        Rule(
            "!has(self.period) || !has(self.maxAge) || duration(self.maxAge) >= duration(self.period)",
            "maxAge must be at least period",
        ),
        Rule(
            "!has(self.samples) || !has(self.quorum) || self.quorum <= self.samples",
            "quorum must not exceed samples",
        ),
    )

    disabled: bool | None = f("disabled")
    path: str | None = f("path", min_length=1, pattern="^/")
    method: HTTPMethod | None = f("method")
    format: str | None = f("format", min_length=1)
    options: StrMap | None = f("options")
    period: Duration | None = f("period")
    timeout: Duration | None = f("timeout")
    samples: Int32 | None = f("samples", minimum=1)
    quorum: Int32 | None = f("quorum", minimum=1)
    max_age: Duration | None = f("maxAge")


class RoutingPublisherSpec(OMEModel):
    options: StrMap | None = f(
        "options",
        max_properties=32,
        rules=(
            Rule(
                "self.all(k, size(k) > 0 && size(k) <= 128 && size(self[k]) > 0 && size(self[k]) <= 4096)",
                "publisher option keys must contain 1-128 characters and values must contain 1-4096 "
                "characters",
            ),
        ),
    )


class RoutingSpec(OMEModel):
    enabled: bool | None = f("enabled")
    capacity_factors: dict[str, Quantity] | None = f("capacityFactors")
    probe: RoutingProbeSpec | None = f("probe")
    capacity: RoutingCapacitySpec | None = f("capacity")
    publisher: RoutingPublisherSpec | None = f("publisher")


# --- status.placement -------------------------------------------------------------------------


class AcceleratorCapacityAttribution(OMEModel):
    flavor_uid: UID = f("flavorUID", required=True)
    node_labels: StrMap | None = f("nodeLabels")
    flavor_set_hash: str = f("flavorSetHash", required=True)
    complete: bool = f("complete", required=True)


class PlacementCapacityPool(OMEModel):
    resource_name: str = f("resourceName", required=True)
    resource_flavor: str = f("resourceFlavor", required=True)
    demand: Int64 = f("demand", required=True, minimum=1)
    allocatable: Int64 = f("allocatable", required=True, minimum=0)
    observed_at: Time = f("observedAt", required=True)
    report_uid: UID = f("reportUID", required=True)
    report_resource_version: str = f("reportResourceVersion", required=True)
    attribution: AcceleratorCapacityAttribution = f("attribution", required=True)


class PlacementCapacitySample(OMEModel):
    demand_fingerprint: str = f("demandFingerprint", required=True)
    replicas: Int64 = f("replicas", required=True, minimum=0)
    pools: list[PlacementCapacityPool] = f(
        "pools", required=True, list_type="map", list_map_keys=("resourceName", "resourceFlavor")
    )


class CandidateAllocationStatus(OMEModel):
    cluster_uid: UID = f("clusterUID", required=True)
    matching_terms: list[Int32] | None = f("matchingTerms", list_type="set")
    weight: Int64 | None = f("weight", minimum=0)
    capacity: PlacementCapacitySample | None = f("capacity")
    original_replicas: Int32 = f("originalReplicas", required=True, minimum=0)
    current_replicas: Int32 = f("currentReplicas", required=True, minimum=0)
    desired_replicas: Int32 = f("desiredReplicas", required=True, minimum=0)
    drain_requested: bool | None = f("drainRequested")


class CandidatePolicyDigest(OMEModel):
    name: str = f("name", required=True)
    portable_digest: str | None = f("portableDigest")


class CandidateComponentAutoscaling(OMEModel):
    resolved_digest: str | None = f("resolvedDigest")
    ready: bool | None = f("ready")


class CandidateAutoscalingStatus(OMEModel):
    policies: list[CandidatePolicyDigest] | None = f("policies", list_type="map", list_map_keys=("name",))
    components: dict[ComponentType, CandidateComponentAutoscaling] | None = f("components")
    ready: bool | None = f("ready")


class CandidateRolloutGroup(OMEModel):
    source: RolloutPlanSource = f("source", required=True)
    policy_name: str | None = f("policyName")
    portable_digest: str | None = f("portableDigest")


class CandidateRolloutLastRun(OMEModel):
    outcome: RolloutRunOutcome = f("outcome", required=True)
    digest: str | None = f("digest")


class CandidateRolloutStatus(OMEModel):
    active_run_id: str | None = f("activeRunID")
    active_groups: list[CandidateRolloutGroup] | None = f("activeGroups", list_type="atomic")
    last_run: CandidateRolloutLastRun | None = f("lastRun")


class CandidatePlacement(OMEModel):
    allocation: CandidateAllocationStatus | None = f("allocation")
    applied_plan_id: str | None = f("appliedPlanID")
    observation_known: bool | None = f("observationKnown")
    observation_failing_since: Time | None = f("observationFailingSince")
    cluster: str = f("cluster", required=True)
    phase: CandidatePlacementPhase | None = f("phase")
    endpoint: URL | None = f("endpoint")
    admitted_replicas: Int32 | None = f("admittedReplicas")
    ready_replicas: Int32 | None = f("readyReplicas")
    autoscaling: CandidateAutoscalingStatus | None = f("autoscaling")
    rollout: CandidateRolloutStatus | None = f("rollout")


class PlacementPlanStatus(OMEModel):
    id: str = f("id", required=True)
    revision: Int64 = f("revision", required=True, minimum=1)
    source_uid: UID = f("sourceUID", required=True)
    observed_generation: Int64 = f("observedGeneration", required=True, minimum=1)
    input_digest: str = f("inputDigest", required=True)
    pause_surge: bool = f("pauseSurge", required=True)
    requested_replicas: Int64 = f("requestedReplicas", required=True, minimum=0)
    assigned_replicas: Int64 = f("assignedReplicas", required=True, minimum=0)
    unassigned_replicas: Int32 = f("unassignedReplicas", required=True, minimum=0)
    original_unassigned_replicas: Int32 = f("originalUnassignedReplicas", required=True, minimum=0)


class PlacementStatus(OMEModel):
    plan: PlacementPlanStatus | None = f("plan")
    cluster: str | None = f("cluster")
    phase: PlacementPhase | None = f("phase")
    endpoint: URL | None = f("endpoint")
    candidates: list[CandidatePlacement] | None = f("candidates", list_type="map", list_map_keys=("cluster",))


class PlacementExecutionPolicy(OMEModel):
    """Allocation authority projected onto an InferenceReplica of a derived service."""

    plan_id: str = f("planID", required=True)
    revision: Int64 = f("revision", required=True, minimum=1)
    source_uid: UID = f("sourceUID", required=True)
    cluster_uid: UID = f("clusterUID", required=True)
    pause_surge: bool = f("pauseSurge", required=True)
