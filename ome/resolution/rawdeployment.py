"""Render a RawDeployment component: Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget.

All four share the name `{isvc}-{component}` (the Service name is hash-truncated to 63 characters). The
pods carry `app={name}`, which the Service and PDB select. The Deployment leaves `spec.replicas` to the
HPA, except when the component turns the autoscaler off, where it pins `minReplicas`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import naming, objects
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

DEFAULT_MIN_REPLICAS: Final = 1
DEFAULT_MAX_REPLICAS: Final = {"engine": 3, "decoder": 3, "router": 2}
DEFAULT_CPU_UTILIZATION: Final = 80
DEFAULT_STRATEGY: Final = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}


def render(isvc: Mapping[str, Any], plan: ComponentPlan, config: InferenceServiceConfig) -> list[Obj]:
    """Deployment, Service, then HPA (unless the autoscaler is not an HPA) and PDB."""
    selector = {naming.APP_LABEL: naming.truncate(plan.name)}
    rendered = [
        deployment(isvc, plan),
        objects.component_service(isvc, plan, selector),
    ]
    if uses_hpa(plan.merged):
        rendered.append(hpa(isvc, plan))
    rendered.append(objects.pdb(isvc, plan, selector, config.pod_disruption_budget.raw_deployment))
    return rendered


def replica_bounds(plan: ComponentPlan) -> tuple[int, int]:
    merged = plan.merged
    minimum = max(int(merged.get("minReplicas") or DEFAULT_MIN_REPLICAS), 1)
    maximum = int(merged.get("maxReplicas") or DEFAULT_MAX_REPLICAS[plan.component])
    return minimum, max(maximum, minimum)


def uses_hpa(merged: Mapping[str, Any]) -> bool:
    autoscaler = merged.get("autoscaler") or {}
    return bool(autoscaler.get("class", "HPA") == "HPA")


def deployment(isvc: Mapping[str, Any], plan: ComponentPlan) -> Obj:
    app = naming.truncate(plan.name)
    spec: Obj = {
        "selector": {"matchLabels": {naming.APP_LABEL: app}},
        "strategy": plan.merged.get("deploymentStrategy") or DEFAULT_STRATEGY,
        "template": {
            "metadata": _pod_metadata(plan, app),
            "spec": plan.pod_spec,
        },
    }
    if not uses_hpa(plan.merged):
        spec["replicas"] = replica_bounds(plan)[0]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": objects.metadata(isvc, plan.name, plan.labels, plan.annotations),
        "spec": spec,
    }


def _pod_metadata(plan: ComponentPlan, app: str) -> Obj:
    meta: Obj = {"labels": {**plan.labels, naming.APP_LABEL: app}}
    if plan.annotations:
        meta["annotations"] = dict(plan.annotations)
    return meta


def hpa(isvc: Mapping[str, Any], plan: ComponentPlan) -> Obj:
    minimum, maximum = replica_bounds(plan)
    hpa_block = (plan.merged.get("autoscaler") or {}).get("hpa") or {}
    metrics = hpa_block.get("metrics") or [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
    spec: Obj = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": plan.name},
        "minReplicas": minimum,
        "maxReplicas": maximum,
        "metrics": metrics,
    }
    if hpa_block.get("behavior"):
        spec["behavior"] = hpa_block["behavior"]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": objects.metadata(isvc, plan.name, plan.labels),
        "spec": spec,
    }


def _cpu_metric(utilization: int) -> Obj:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }
