"""Render a RawDeployment component: Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget.

All four share the name `{isvc}-{component}` (the Service name is hash-truncated to 63 characters). The
pods carry `app={name}`, which the Service and PDB select, and the queue labels of their annotations. The
Deployment leaves `spec.replicas` to the HPA, except when the component turns the autoscaler off, where it
pins `minReplicas`. Containers without an imagePullPolicy get IfNotPresent (pod_defaults.py).

A component with no `autoscaler` block (of its own or from its runtime) reads the legacy annotation
`ome.io/targetUtilizationPercentage` (the component's wins over the InferenceService's): a whole number
from 1 to 100 replaces the default 80% CPU target; another value leaves the default (the webhook rejects
it). The autoscaler reconciler (issue 14) takes over this choice.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import modes, naming, objects, pod_defaults, workload_metadata
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

DEFAULT_MIN_REPLICAS: Final = 1
DEFAULT_MAX_REPLICAS: Final = {"engine": 3, "decoder": 3, "router": 2}
DEFAULT_CPU_UTILIZATION: Final = 80
TARGET_UTILIZATION_ANNOTATION: Final = "ome.io/targetUtilizationPercentage"
AUTOSCALER_CLASS_ANNOTATION: Final = "ome.io/autoscalerClass"
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
            "spec": _pod_spec(plan.pod_spec),
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


def _pod_spec(planned: Obj) -> Obj:
    spec = copy.deepcopy(planned)
    pod_defaults.add_pull_policy(spec)
    return spec


def _pod_metadata(plan: ComponentPlan, app: str) -> Obj:
    labels = {**plan.labels, naming.APP_LABEL: app, **workload_metadata.queue_labels(plan.annotations)}
    meta: Obj = {"labels": labels}
    if plan.annotations:
        meta["annotations"] = dict(plan.annotations)
    return meta


def hpa(isvc: Mapping[str, Any], plan: ComponentPlan) -> Obj:
    minimum, maximum = replica_bounds(plan)
    hpa_block = (plan.merged.get("autoscaler") or {}).get("hpa") or {}
    metrics = hpa_block.get("metrics") or [_cpu_metric(cpu_target(plan))]
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
        "metadata": objects.metadata(isvc, plan.name, plan.labels, plan.annotations),
        "spec": spec,
    }


def cpu_target(plan: ComponentPlan) -> int:
    """The default CPU target, or the legacy annotation's for a RawDeployment component without a block."""
    if plan.mode != modes.RAW_DEPLOYMENT or plan.merged.get("autoscaler"):
        return DEFAULT_CPU_UTILIZATION
    if plan.annotations.get(AUTOSCALER_CLASS_ANNOTATION, "hpa") != "hpa":
        return DEFAULT_CPU_UTILIZATION
    value = plan.annotations.get(TARGET_UTILIZATION_ANNOTATION, "")
    if value.isdigit() and 1 <= int(value) <= 100:
        return int(value)
    return DEFAULT_CPU_UTILIZATION


def _cpu_metric(utilization: int) -> Obj:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }
