"""spec.rollout: rollout groups and their progressions (canary, blue-green, rolling update), v1.3."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    ComponentType,
    Duration,
    Int32,
    IntOrString,
    OMEModel,
    Rule,
    SecretKeySelectorDict,
    StrMap,
    f,
)
from ome.api.v1beta1.common import MetricProviderRef

ComparisonOperator = Literal["LT", "LTE", "GT", "GTE"]
OnInconclusive = Literal["Hold", "Rollback", "RollbackOnStall"]
RolloutProgressionKind = Literal["canary", "blueGreen", "rollingUpdate"]
RolloutGroupOrdering = Literal["Sequential", "Concurrent"]

PAIRING_PROTOCOL_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"


class AnalysisPrometheus(OMEModel):
    crd_rules = (
        Rule(
            "!(has(self.providerRef) && has(self.serverAddress))",
            "at most one of providerRef and serverAddress may be set",
        ),
    )

    provider_ref: MetricProviderRef | None = f("providerRef")
    server_address: str | None = f("serverAddress")
    auth_ref: SecretKeySelectorDict | None = f("authRef")
    headers: StrMap | None = f("headers")


class AnalysisMetric(OMEModel):
    name: str = f("name", required=True)
    query: str = f("query", required=True)
    operator: ComparisonOperator = f("operator", required=True)
    threshold: str = f("threshold", required=True)


class RolloutAnalysis(OMEModel):
    interval: Duration = f("interval", required=True)
    initial_delay: Duration | None = f("initialDelay")
    failure_limit: Int32 = f("failureLimit", required=True, minimum=1)
    on_inconclusive: OnInconclusive | None = f("onInconclusive")
    metrics: list[AnalysisMetric] = f(
        "metrics", required=True, min_items=1, max_items=10, list_type="map", list_map_keys=("name",)
    )


class RolloutPause(OMEModel):
    duration: Duration | None = f("duration")


class RolloutGroupStep(OMEModel):
    capacity: IntOrString = f("capacity", required=True)
    traffic: Int32 = f("traffic", required=True, minimum=0, maximum=100)
    pause: RolloutPause | None = f("pause")
    analysis: RolloutAnalysis | None = f("analysis")


class GroupCanary(OMEModel):
    steps: list[RolloutGroupStep] | None = f("steps", max_items=20, list_type="atomic")
    prometheus: AnalysisPrometheus | None = f("prometheus")
    scale_down_delay_seconds: Int32 | None = f("scaleDownDelaySeconds")
    ready_timeout: Duration | None = f("readyTimeout")


class GroupBlueGreen(OMEModel):
    """Surge the new set, wait for Ready, flip traffic at once. No options yet."""


class GroupRollingUpdate(OMEModel):
    max_surge: IntOrString | None = f("maxSurge")
    max_unavailable: IntOrString | None = f("maxUnavailable")


class MaintainRatio(OMEModel):
    tolerance: Int32 | None = f("tolerance", minimum=0, maximum=100)


class RolloutPolicyRef(OMEModel):
    name: str = f("name", required=True, min_length=1)
    progression: RolloutProgressionKind = f("progression", required=True)
    kind: str | None = f("kind", crd_default="RolloutPolicy")


class RolloutGroup(OMEModel):
    crd_rules = (
        Rule(
            "(has(self.canary)?1:0) + (has(self.blueGreen)?1:0) + (has(self.rollingUpdate)?1:0) <= 1",
            "at most one of canary, blueGreen, or rollingUpdate may be set on a rollout group",
        ),
        Rule(
            "!has(self.order) || self.order.all(c, c in self.components)",
            "order must reference only Components listed in this group",
        ),
    )

    components: list[ComponentType] = f(
        "components", required=True, min_items=1, max_items=3, list_type="atomic"
    )
    order: list[ComponentType] | None = f("order", max_items=3, list_type="atomic")
    canary: GroupCanary | None = f("canary")
    blue_green: GroupBlueGreen | None = f("blueGreen")
    rolling_update: GroupRollingUpdate | None = f("rollingUpdate")
    policy_ref: RolloutPolicyRef | None = f("policyRef")
    soak: Duration | None = f("soak")
    maintain_ratio: MaintainRatio | None = f("maintainRatio")


class RolloutSpec(OMEModel):
    groups: list[RolloutGroup] | None = f("groups", max_items=3, list_type="atomic")
    group_ordering: RolloutGroupOrdering | None = f("groupOrdering")
    pairing_protocol: str | None = f("pairingProtocol", max_length=63, pattern=PAIRING_PROTOCOL_PATTERN)
