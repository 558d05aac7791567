"""Run one parity case through the project's pure resolution and renderers, as the reconciler does.

A case (cases/*.yaml) gives the inputs of a Go OME test (the InferenceService, the models, runtimes and
FineTunedWeights in the cluster, the inferenceservice-config data) and the fields the Go test expects on
the rendered objects, written from the Go test's facts. Where v1.3 deliberately differs from v0.1.5, the
case states the v1.3 value and names the doc page in `v13_differences`.

The pipeline mirrors InferenceServiceReconciler._reconcile_service (and the autoscaler controller's
decision for each component's HPA and PDB) without I/O: model and runtime
resolution against a dict-backed reader, fine-tuned weights, accelerator classes, component plans, each
component's objects, then the external Service (unless cluster-local or ingress creation is on).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.controllers.autoscaler import decide as autoscaler_decide
from ome.devcluster.operator_config import CHART_PDB
from ome.resolution import (
    accelerators,
    components,
    fine_tuned,
    ingress,
    models,
    objects,
    runtimes,
    workload_metadata,
    workloads,
)
from ome.resolution.components import ModelSource
from tests.unit.resolution.fake_reader import FakeReader

Obj = dict[str, Any]

_KINDS: dict[str, resources.Resource] = {
    "BaseModel": resources.BASE_MODELS,
    "ClusterBaseModel": resources.CLUSTER_BASE_MODELS,
    "ServingRuntime": resources.SERVING_RUNTIMES,
    "ClusterServingRuntime": resources.CLUSTER_SERVING_RUNTIMES,
    "FineTunedWeight": resources.FINE_TUNED_WEIGHTS,
    "AcceleratorClass": resources.ACCELERATOR_CLASSES,
}


@dataclass
class Rendered:
    runtime_name: str | None
    objects: list[Obj]

    def find(self, kind: str, name: str) -> Obj | None:
        return next((o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name), None)


def _isvc(raw: Mapping[str, Any]) -> Obj:
    isvc = copy.deepcopy(dict(raw))
    isvc.setdefault("apiVersion", "ome.io/v1beta1")
    isvc.setdefault("kind", "InferenceService")
    meta = isvc.setdefault("metadata", {})
    meta.setdefault("uid", f"uid-{meta['name']}")
    meta.setdefault("generation", 1)
    return isvc


def render(case: Mapping[str, Any]) -> Rendered:
    inputs = case["inputs"]
    isvc = _isvc(inputs["isvc"])
    reader = FakeReader(*((_KINDS[o["kind"]], copy.deepcopy(o)) for o in inputs.get("objects") or []))
    config = parse(inputs["config"]) if inputs.get("config") else InferenceServiceConfig()
    if "podDisruptionBudget" not in (inputs.get("config") or {}):
        # A chart install's budgets (each mode maxUnavailable: 1), as v0.1.5 gave every RawDeployment
        # component; without the key, as on a manifest install, v1.3 gives none.
        config = config.model_copy(update={"pod_disruption_budget": CHART_PDB})
    model = models.resolve_model(reader, isvc)
    runtime = runtimes.resolve_runtime(reader, isvc, model)
    source = ModelSource.from_object(model.kind, model.obj) if model is not None else None
    tuned = None
    if model is not None and (names := fine_tuned.names(isvc)):
        tuned = fine_tuned.resolve(isvc, reader.get_or_none(resources.FINE_TUNED_WEIGHTS, names[0]), model.obj)
    runtime_spec = runtime.obj.get("spec") or {}
    classes = {
        name: found
        for name in accelerators.wanted_names(isvc, runtime_spec)
        if (found := reader.get_or_none(resources.ACCELERATOR_CLASSES, name)) is not None
    }
    plans = components.build_plans(
        isvc,
        runtime.obj,
        source,
        config,
        runtime_name=runtime.name,
        fine_tuned=tuned,
        accelerators=accelerators.select_all(isvc, runtime_spec, classes),
        model_facts=None if model is None else workload_metadata.ModelFacts.from_object(model.obj),
    )
    rendered: list[Obj] = []
    for plan in plans:
        rendered += workloads.render_component(isvc, plan, config, lws_served=bool(inputs.get("lws_served")))
        # The HPA (or ScaledObject) and PDB come from the autoscaler controller's pure decision.
        runtime_component = runtime_spec.get(components.RUNTIME_CONFIG_KEYS[plan.component]) or {}
        rendered += autoscaler_decide.desired_objects(isvc, plan, runtime_component, config)
    rendered += _external(isvc, plans, config)
    return Rendered(runtime.name, rendered)


def _external(isvc: Obj, plans: Sequence[components.ComponentPlan], config: InferenceServiceConfig) -> list[Obj]:
    target = workloads.external_target(plans)
    if target is None or objects.is_cluster_local(isvc) or ingress.creation_enabled(isvc, config):
        return []
    return [objects.external_service(isvc, target)]


# -- field paths -----------------------------------------------------------------------------------

_MISSING = object()


def lookup(obj: Any, path: Sequence[Any]) -> Any:
    """Follow `path`: a str is a map key, an int a list index, a map picks the list element whose fields
    equal it (as `containers[name=ome-container]`). Returns _MISSING when a step finds nothing."""
    current = obj
    for step in path:
        if isinstance(step, Mapping):
            if not isinstance(current, list):
                return _MISSING
            current = next(
                (e for e in current if isinstance(e, Mapping) and all(e.get(k) == v for k, v in step.items())),
                _MISSING,
            )
        elif isinstance(step, int) and not isinstance(step, bool):
            if not isinstance(current, list) or step >= len(current):
                return _MISSING
            current = current[step]
        else:
            if not isinstance(current, Mapping) or step not in current:
                return _MISSING
            current = current[step]
        if current is _MISSING:
            return _MISSING
    return current


def is_missing(value: Any) -> bool:
    return value is _MISSING


def includes(actual: Any, expected: Any) -> bool:
    """Maps: every expected key included (recursively); lists: every expected element included in some
    actual element; scalars: equal."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and includes(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and all(any(includes(a, e) for a in actual) for e in expected)
    return bool(actual == expected)
