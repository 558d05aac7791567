"""The `podDisruptionBudget` key of the `inferenceservice-config` ConfigMap: each deployment mode's
default budget, and what a budget value may be (also read by the autoscaler admission webhook)."""

from __future__ import annotations

import re
from typing import Any, Final

from pydantic import Field, model_validator

from ome.config.section import Section

PDB_CONFIG_ERROR: Final = "fails to create InferenceServicesConfig"
_BUDGET = re.compile(r"^(\d+)%$")


def budget_problem(value: object) -> str | None:
    """Why `value` is not a budget (a non-negative integer or a percentage from 0% to 100%), or None."""
    if isinstance(value, bool):
        return "must be a non-negative integer or a percentage from 0% to 100%"
    if isinstance(value, int):
        return None if value >= 0 else "must be a non-negative integer or a percentage from 0% to 100%"
    if isinstance(value, str) and (found := _BUDGET.match(value)) and int(found.group(1)) <= 100:
        return None
    return "must be a non-negative integer or a percentage from 0% to 100%"


class PDBPolicy(Section):
    """One mode's default budget: exactly one of the two fields."""

    min_available: int | str | None = Field(default=None, alias="minAvailable")
    max_unavailable: int | str | None = Field(default=None, alias="maxUnavailable")

    def as_spec(self) -> dict[str, int | str]:
        if self.min_available is not None:
            return {"minAvailable": self.min_available}
        return {"maxUnavailable": self.max_unavailable if self.max_unavailable is not None else 1}


class PDBConfig(Section):
    """podDisruptionBudget: per-mode defaults. A mode left out or `null`, or the whole key left out (a
    manifest install), has no default; the chart writes the key (config/chart/pod_disruption_budget.yaml)."""

    raw_deployment: PDBPolicy | None = Field(default=None, alias="rawDeployment")
    ome_native: PDBPolicy | None = Field(default=None, alias="omeNative")

    @model_validator(mode="before")
    @classmethod
    def _exactly_one(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for mode in ("rawDeployment", "omeNative"):
            policy = data.get(mode)
            if policy is None or isinstance(policy, PDBPolicy):
                continue
            if not isinstance(policy, dict):
                raise ValueError(f"podDisruptionBudget.{mode} must be an object")
            unknown = sorted(set(policy) - {"minAvailable", "maxUnavailable"})
            if unknown:
                raise ValueError(f"unknown field podDisruptionBudget.{mode}.{unknown[0]}")
            present = [k for k in ("minAvailable", "maxUnavailable") if policy.get(k) is not None]
            if len(present) != 1:
                raise ValueError(
                    f"exactly one of podDisruptionBudget.{mode}.minAvailable or "
                    f"podDisruptionBudget.{mode}.maxUnavailable must be set"
                )
            if (problem := budget_problem(policy[present[0]])) is not None:
                raise ValueError(f"podDisruptionBudget.{mode}.{present[0]} {problem}")
        return data

    def for_mode(self, mode: str) -> PDBPolicy | None:
        """The default of a deployment mode (MultiNode has none)."""
        return {"RawDeployment": self.raw_deployment, "OMENative": self.ome_native}.get(mode)

