"""RolloutPolicy: a reusable rollout progression that rollout groups reference (alpha, v1.3)."""

from __future__ import annotations

from ome.api.v1beta1.base import AGE, CRDInfo, Int32, Int64, KubeObject, OMEModel, PrinterColumn, Rule, f
from ome.api.v1beta1.common import Condition
from ome.api.v1beta1.rollout import GroupBlueGreen, GroupCanary, GroupRollingUpdate


class RolloutPolicySpec(OMEModel):
    crd_rules = (
        Rule(
            "(has(self.canary)?1:0) + (has(self.blueGreen)?1:0) + (has(self.rollingUpdate)?1:0) == 1",
            "exactly one of canary, blueGreen, or rollingUpdate must be set",
        ),
    )

    canary: GroupCanary | None = f("canary")
    blue_green: GroupBlueGreen | None = f("blueGreen")
    rolling_update: GroupRollingUpdate | None = f("rollingUpdate")


class RolloutPolicyStatus(OMEModel):
    observed_generation: Int64 | None = f("observedGeneration")
    portable_digest: str | None = f("portableDigest")
    attached_groups: Int32 | None = f("attachedGroups")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))


class RolloutPolicy(KubeObject):
    crd = CRDInfo(
        kind="RolloutPolicy",
        plural="rolloutpolicies",
        singular="rolloutpolicy",
        printer_columns=(
            PrinterColumn("Ready", "string", ".status.conditions[?(@.type=='Ready')].status"),
            PrinterColumn("Digest", "string", ".status.portableDigest"),
            PrinterColumn("Refs", "integer", ".status.attachedGroups"),
            AGE,
        ),
    )

    spec: RolloutPolicySpec | None = f("spec")
    status: RolloutPolicyStatus | None = f("status")
