"""ServingRuntime and ClusterServingRuntime validation.

* Accelerator classes the runtime lists in acceleratorRequirements must exist.
* Within one runtime, autoSelect entries that share an entry `name` (an empty name is a name too) must
  share a priority: otherwise the runtime's score would depend on which entry matched first.
* Against the other enabled runtimes of the same scope (same namespace for a ServingRuntime): two
  runtimes that could both be auto-selected for the same model, with the same priority, make the choice
  fall to name order; that is rejected. "The same model" means an autoSelect entry equal on name
  (case-insensitive), version, quantization, format, framework and architecture, the same
  modelSizeRange, and at least one protocol version in common.

Before those, for every runtime: an `ome.io/engine` value must name a preset, a runtime marked
`ome.io/runtime-profile: "true"` must set `disabled: true`, and its `ome.io/inherit-from` chain must
resolve (runtime_inheritance.py has the documented texts).

A disabled runtime is never auto-selected, so it is admitted without the format and priority checks.
Unlike the v1.2.2 webhook, the in-runtime priority rule applies even when the runtime is the first of its
scope.
"""

from __future__ import annotations

from typing import Any, Final

from ome.api import resources
from ome.resolution import runtime_inheritance, runtimes
from ome.webhooks import autoscaler_admission, runtime_presets
from ome.webhooks.handler import AdmissionRequest, Outcome
from ome.webhooks.loose import as_dict, as_list, dig, text

Obj = dict[str, Any]

_KINDS: Final = {"ServingRuntime": "servingruntime", "ClusterServingRuntime": "clusterservingruntime"}


def validate(request: AdmissionRequest, reader: runtimes.Reader) -> Outcome:
    spec = request.spec
    for error in (
        runtime_presets.preset_error(request.obj),
        runtime_inheritance.profile_error(request.obj),
        inheritance_error(reader, request),
    ):
        if error is not None:
            return Outcome.deny(error)
    if spec.get("disabled") is True:
        return Outcome()
    for error in (
        unknown_accelerators_error(reader, spec),
        priority_conflict_error(request.kind, request.name, spec),
        priority_clash_error(reader, request),
        autoscaler_admission.runtime_error(spec),
    ):
        if error is not None:
            return Outcome.deny(error)
    return Outcome()


def inheritance_error(reader: runtimes.Reader, request: AdmissionRequest) -> str | None:
    """The chain from the runtime written (not yet in the cache) up to its root must resolve."""
    obj = {**request.obj, "metadata": {**as_dict(request.obj.get("metadata")), "name": request.name}}
    if request.namespace:
        obj["metadata"]["namespace"] = request.namespace
    try:
        runtime_inheritance.chain(reader, request.kind, obj)
    except runtime_inheritance.InheritanceError as exc:
        return exc.message
    return None


def unknown_accelerators_error(reader: runtimes.Reader, spec: Obj) -> str | None:
    listed = as_list(dig(spec, "acceleratorRequirements", "acceleratorClasses"))
    missing = [
        c
        for c in listed
        if not isinstance(c, str) or reader.get_or_none(resources.ACCELERATOR_CLASSES, c) is None
    ]
    if not missing:
        return None
    return (
        "unknown accelerator classes referenced in AcceleratorRequirements: ["
        + " ".join(map(str, missing))
        + "]"
    )


def priority_conflict_error(kind: str, name: str, spec: Obj) -> str | None:
    priorities: dict[str, Any] = {}
    for entry in _auto_select_entries(spec):
        key = text(entry.get("name"))
        priority = entry.get("priority")
        if key in priorities and priorities[key] != priority:
            return f"different priorities assigned for the model format {key} under the {_KINDS[kind]} {name}"
        priorities.setdefault(key, priority)
    return None


def priority_clash_error(reader: runtimes.Reader, request: AdmissionRequest) -> str | None:
    spec, namespaced = request.spec, request.kind == "ServingRuntime"
    if namespaced:
        others = reader.list(resources.SERVING_RUNTIMES, request.namespace) if request.namespace else []
    else:
        others = reader.list(resources.CLUSTER_SERVING_RUNTIMES)
    for other in others:
        other_name = text(dig(other, "metadata", "name"))
        other_spec = as_dict(other.get("spec"))
        if other_name == request.name or other_spec.get("disabled") is True:
            continue
        if clash := _shared_format(spec, other_spec):
            if namespaced:
                return (
                    f"same priority assigned for the model format {clash} in the servingruntimes "
                    f"{request.name} and {other_name} in namespace {request.namespace}"
                )
            pair = f"{request.name} and {other_name}"
            return f"same priority assigned for the model format {clash} in the clusterservingruntimes {pair}"
    return None


def _shared_format(spec: Obj, other: Obj) -> str | None:
    """The name of a format both runtimes would be auto-selected for at the same priority, or None."""
    protocols = {p for p in as_list(spec.get("protocolVersions")) if isinstance(p, str)}
    if not protocols & set(as_list(other.get("protocolVersions"))):
        return None
    if spec.get("modelSizeRange") != other.get("modelSizeRange"):
        return None
    theirs = _auto_select_entries(other)
    for entry in _auto_select_entries(spec):
        if entry.get("priority") is None:
            continue
        for candidate in theirs:
            if _same_format(entry, candidate) and entry.get("priority") == candidate.get("priority"):
                return text(entry.get("name")) or text(dig(entry, "modelFormat", "name"))
    return None


def _same_format(a: Obj, b: Obj) -> bool:
    if text(a.get("name")).lower() != text(b.get("name")).lower():
        return False
    keys = ("version", "quantization", "modelFramework", "modelFormat", "modelArchitecture")
    return all(a.get(k) == b.get(k) for k in keys)


def _auto_select_entries(spec: Obj) -> list[Obj]:
    return [
        e
        for e in (as_dict(x) for x in as_list(spec.get("supportedModelFormats")))
        if e.get("autoSelect") is True
    ]
