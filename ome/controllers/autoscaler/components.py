"""The components of an InferenceService as the autoscaler sees them, read from the shared cache.

The same resolution as the InferenceService controller (model, runtime or its pinned revision, component
plans), without the pod-level inputs (overlays, fine-tuned weights, accelerator classes) that autoscaling
does not need. A service whose model or runtime cannot be resolved yields nothing: the InferenceService
controller reports that, and its autoscalers stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import runtime_pinning
from ome.resolution import components, models, modes, replica_refs, runtimes, workload_metadata
from ome.resolution import runtime_revisions as rr
from ome.resolution.components import ComponentPlan, ModelSource

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Component:
    plan: ComponentPlan
    isvc_component: Mapping[str, Any]
    runtime_component: Mapping[str, Any]

    @property
    def pods_per_instance(self) -> int:
        return 1 + max(self.plan.worker_size, 1) if self.plan.multi_pod else 1


def resolve(reader: runtime_pinning.Lister, isvc: Mapping[str, Any], config: InferenceServiceConfig,
            config_namespace: str) -> list[Component] | None:
    """Every declared component in reconcile order, or None when the service cannot be resolved now."""
    if replica_refs.is_referencing(isvc) or modes.is_virtual(isvc):
        return []
    try:
        model = models.resolve_model(reader, isvc)  # type: ignore[arg-type]
    except models.ResolutionError:
        return None
    runtime_obj: Mapping[str, Any] | None
    runtime_name: str | None = None
    try:
        runtime = runtimes.resolve_runtime(reader, isvc, model)  # type: ignore[arg-type]
        runtime_obj, runtime_name, problem = runtime.obj, runtime.name, ""
    except runtimes.NoSupportingRuntime:
        return None
    except models.ResolutionError as exc:
        if not rr.pins(isvc):
            return None
        runtime_obj, problem = None, str(exc)
    revisions = runtime_pinning.Revisions(reader, config_namespace).list()
    pin = rr.decide(isvc, runtime_obj, revisions, config_namespace=config_namespace, live_problem=problem)
    if pin.pin_error is not None or pin.paused:
        return None
    if pin.pinning or runtime_obj is None:
        if pin.spec is None:
            return None
        runtime_obj = {"spec": pin.spec}
    source = ModelSource.from_object(model.kind, model.obj) if model is not None else None
    facts = None if model is None else workload_metadata.ModelFacts.from_object(model.obj)
    plans = components.build_plans(isvc, runtime_obj, source, config, runtime_name=runtime_name,
                                   model_facts=facts)
    runtime_spec = (runtime_obj or {}).get("spec") or {}
    spec = isvc.get("spec") or {}
    return [
        Component(plan, spec.get(plan.component) or {},
                  runtime_spec.get(components.RUNTIME_CONFIG_KEYS[plan.component]) or {})
        for plan in plans
    ]
