"""Admission defaults for InferenceServices and serving runtimes: only what the v1.3 API documents.

v1.3 deliberately writes little into the objects users own. Replica bounds, terminationGracePeriodSeconds
and worker.size are resolved when OME renders the workload (from the InferenceService, then the runtime,
then the operator's defaults) and never written back, so a later change to the runtime or the operator's
defaults still reaches the service. What is filled here are the API's own documented defaults, for
objects that reach us without the CRD's structural defaulting (the same values the CRDs declare, so on a
real apiserver the patch is normally empty):

* InferenceService: spec.model.kind ClusterBaseModel, spec.runtime.kind ClusterServingRuntime, both
  apiGroups ome.io, spec.scalingPolicy.mode Independent.
* ServingRuntime / ClusterServingRuntime: each supportedModelFormats entry's modelFormat and
  modelFramework get operator Equal and weight 1; `ome.io/engine: sglang-pd` fills in its preset where the
  runtime leaves fields unset (runtime_presets.py).
"""

from __future__ import annotations

from typing import Any, Final

from ome.webhooks import runtime_presets
from ome.webhooks.handler import AdmissionRequest
from ome.webhooks.loose import as_dict, as_list

Obj = dict[str, Any]

API_GROUP: Final = "ome.io"
_REF_DEFAULTS: Final = (
    ("model", {"kind": "ClusterBaseModel", "apiGroup": API_GROUP}),
    ("runtime", {"kind": "ClusterServingRuntime", "apiGroup": API_GROUP}),
)
_MATCH_DEFAULTS: Final = {"operator": "Equal", "weight": 1}


def default_inference_service(request: AdmissionRequest) -> Obj:
    """The InferenceService with documented defaults filled in; `request.obj` is a private copy."""
    spec = request.obj.get("spec")
    if not isinstance(spec, dict):
        return request.obj
    for key, defaults in _REF_DEFAULTS:
        ref = spec.get(key)
        if isinstance(ref, dict):
            _fill(ref, defaults)
    policy = spec.get("scalingPolicy")
    if isinstance(policy, dict):
        _fill(policy, {"mode": "Independent"})
    return request.obj


def default_serving_runtime(request: AdmissionRequest) -> Obj:
    """A ServingRuntime or ClusterServingRuntime with its format entries' operator and weight filled in."""
    for entry in as_list(as_dict(request.obj.get("spec")).get("supportedModelFormats")):
        for key in ("modelFormat", "modelFramework"):
            side = as_dict(entry).get(key)
            if isinstance(side, dict):
                _fill(side, _MATCH_DEFAULTS)
    return runtime_presets.apply_preset(request.obj)


def _fill(target: Obj, defaults: dict[str, Any]) -> None:
    for key, value in defaults.items():
        if target.get(key) is None:
            target[key] = value
