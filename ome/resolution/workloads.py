"""Dispatch a component plan to its mode's renderer, and pick the external Service's target (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import modes, multinode, omenative, rawdeployment, router_rbac
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]


class LeaderWorkerSetUnavailableError(Exception):
    """A MultiNode component needs the LeaderWorkerSet CRD, which the cluster does not serve."""

    def __init__(self, component: str) -> None:
        super().__init__(
            f"{component} is MultiNode, which needs the LeaderWorkerSet controller; "
            "the leaderworkersets.leaderworkerset.x-k8s.io CRD is not served"
        )


def render_component(
    isvc: Mapping[str, Any], plan: ComponentPlan, config: InferenceServiceConfig, *, lws_served: bool
) -> list[Obj]:
    """The desired objects of one component; raises for a mode it cannot run in.

    A router's ServiceAccount, Role and RoleBinding come first, so its pods find their identity.
    """
    modes.check_reconcilable(plan.component, plan.mode)
    identity = router_rbac.render(isvc, plan) if plan.component == "router" else []
    if plan.mode == modes.OMENATIVE:
        return identity + omenative.render(isvc, plan, config)
    if plan.mode == modes.MULTINODE:
        if not lws_served:
            raise LeaderWorkerSetUnavailableError(plan.component)
        return identity + multinode.render(isvc, plan)
    return identity + rawdeployment.render(isvc, plan, config)


def external_target(plans: Sequence[ComponentPlan]) -> ComponentPlan | None:
    """The router when there is one, else the engine."""
    by_component = {plan.component: plan for plan in plans}
    return by_component.get("router") or by_component.get("engine")


def workload_kind(mode: str) -> str:
    return {
        modes.OMENATIVE: "InferenceReplica",
        modes.MULTINODE: "LeaderWorkerSet",
    }.get(mode, "Deployment")
