"""Render a RawDeployment component's workload: its Deployment and Service.

Both share the name `{isvc}-{component}` (the Service name is hash-truncated to 63 characters). The pods
carry `app={name}`, which the Service (and the PodDisruptionBudget) select, and the queue labels of their
annotations. The Deployment never sets `spec.replicas`: the autoscaler reconciler
(ome/controllers/autoscaler) owns the count, the component's HPA or ScaledObject and its budget.
Containers without an imagePullPolicy get IfNotPresent (pod_defaults.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import naming, objects, pod_defaults, workload_metadata
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

DEFAULT_STRATEGY: Final = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}


def render(isvc: Mapping[str, Any], plan: ComponentPlan, config: InferenceServiceConfig) -> list[Obj]:
    """The Deployment and its Service."""
    selector = {naming.APP_LABEL: naming.truncate(plan.name)}
    return [
        deployment(isvc, plan),
        objects.component_service(isvc, plan, selector),
    ]


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
