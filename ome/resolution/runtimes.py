"""Which serving runtime an InferenceService uses: the one it names, or the best one that supports its model.

Named runtime (`spec.runtime.name`), used with the spec it inherits (`ome.io/inherit-from`, see
runtime_inheritance.py): `spec.runtime.kind` decides where to look (reference-a-runtime page,
"How OME resolves the name"): ClusterServingRuntime, the CRD default, looks at cluster scope and then in
the namespace; ServingRuntime looks only in the namespace; no kind at all (a spec nothing has defaulted)
looks in the namespace first. A named runtime that does not declare support for the model is still used,
with a warning: naming it is a deliberate choice that wins over the runtime's declaration.

Auto-selection (runtime-selection-scoring page): a runtime qualifies when it is enabled, accepts the
InferenceService's accelerator classes and deployment modes, has a `supportedModelFormats` entry that
matches the model, fits the model's size, has an `autoSelect: true` entry and scores above 0. Namespaced
runtimes rank before cluster ones whatever their scores; then higher score, then (for a sized model) the
size range closest to the model, then name.

Every check returns the documented reason text, so the rejection lists why each runtime was excluded.
All inputs are cached objects read defensively: the webhook feeds this whatever a client sent.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ome.api import resources
from ome.api.resources import Resource
from ome.resolution import modes, runtime_inheritance
from ome.resolution.models import ResolutionError, ResolvedModel

Obj = dict[str, Any]
Json = Mapping[str, Any]

SERVING_RUNTIME: Final = "ServingRuntime"
CLUSTER_SERVING_RUNTIME: Final = "ClusterServingRuntime"
ACCELERATOR_CLASS_ANNOTATION: Final = "ome.io/accelerator-class"
INVALID_MODEL: Final = "invalid model specification: modelFormat.name: model format name is required"
# A weight of 0 is documented to count as these, not as "off" (runtime-selection-scoring page).
ZERO_FORMAT_WEIGHT: Final = 10
ZERO_FRAMEWORK_WEIGHT: Final = 5
_SIZE_UNITS: Final = {"": 1.0, "M": 1e6, "B": 1e9, "T": 1e12}
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([MBT]?)$")
# One to three dot-separated numbers without leading zeros, an optional lowercase v, and a non-empty
# pre-release (-), build (+) or dev (.) suffix allowed only after the third number.
_VERSION = re.compile(r"^(v?)(0|[1-9]\d*)(?:\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*)([-+.].+)?)?)?$")
_PIPELINE_PARTS: Final = ("scheduler", "textEncoder", "tokenizer", "transformer", "vae")


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(self, res: Resource, namespace: str | None = None) -> builtins.list[Obj]: ...


class RuntimeNotFound(ResolutionError):
    """spec.runtime names a runtime that exists in none of the scopes its kind allows."""


class RuntimeDisabled(ResolutionError):
    """spec.runtime names a runtime with `disabled: true`."""


class InvalidModel(ResolutionError):
    """The model has no format yet (its metadata is not read), so no runtime can be checked against it."""


class NoSupportingRuntime(ResolutionError):
    """Auto-selection found no runtime; `detail` is the selector's own text (the RuntimeReady message)."""

    def __init__(self, model: str, detail: str) -> None:
        super().__init__(
            f"no supporting runtime found for model {model} and engine does not have complete runner "
            f"configuration: {detail}"
        )
        self.model = model
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ResolvedRuntime:
    kind: str
    """ServingRuntime or ClusterServingRuntime."""
    name: str
    obj: Obj
    """The cached object; never mutate it."""
    auto_selected: bool
    warnings: list[str] = field(default_factory=list)
    """Admission warnings: the auto-selection notice, or the named runtime's missing declaration."""


# -- entry points ------------------------------------------------------------------------------------


def resolve_runtime(reader: Reader, isvc: Json, model: ResolvedModel | None) -> ResolvedRuntime:
    """The runtime the InferenceService uses; raises a ResolutionError subclass when there is none."""
    ref = _dict(_dict(isvc.get("spec")).get("runtime"))
    name = ref.get("name")
    if isinstance(name, str) and name:
        return _resolve_named(reader, isvc, name, ref.get("kind"), model)
    if model is None:
        raise RuntimeNotFound("spec.runtime.name is required when spec.model is not set")
    return _auto_select(reader, isvc, model)


def supports(runtime_obj: Json, model_obj: Json, *, isvc: Json | None = None) -> tuple[bool, str]:
    """Whether the runtime declares support for the model, and the first reason it does not ("" if it does).

    With `isvc`, the InferenceService's accelerator classes and deployment modes are checked too.
    """
    reason = incompatibility(runtime_obj, model_obj, isvc or {})
    return reason is None, reason or ""


def incompatibility(runtime_obj: Json, model_obj: Json, isvc: Json) -> str | None:
    """The first check the runtime fails for this model and InferenceService, in the documented order."""
    spec = _dict(runtime_obj.get("spec"))
    model = _dict(model_obj.get("spec"))
    if spec.get("disabled") is True:
        return "runtime is disabled"
    if not _accepts_accelerators(spec, isvc):
        return "runtime does not support the required accelerator class"
    if (reason := _mode_mismatch(spec, isvc)) is not None:
        return reason
    entries = [_dict(e) for e in _list(spec.get("supportedModelFormats"))]
    per_entry = [_entry_mismatches(e, model) for e in entries]
    if not any(not reasons for reasons in per_entry):
        details = "; ".join(", ".join(r or ["unknown mismatch"]) for r in per_entry)
        return f"model format '{format_label(model)}' not in supported formats: {details}"
    return _size_mismatch(spec, model)


# -- named runtime -----------------------------------------------------------------------------------


def _resolve_named(
    reader: Reader, isvc: Json, name: str, kind: Any, model: ResolvedModel | None
) -> ResolvedRuntime:
    namespace = _namespace(isvc)
    found = _lookup(reader, name, namespace, kind)
    if found is None:
        where = f"namespace {namespace}"
        if kind != SERVING_RUNTIME:
            where += " or at cluster scope"
        raise RuntimeNotFound(f"runtime {name} not found in {where}")
    found_kind, obj = found
    try:
        # A named runtime is used with what it inherits; auto-selection matches each runtime's own spec.
        obj = runtime_inheritance.resolve(reader, found_kind, obj)
    except runtime_inheritance.InheritanceError as exc:
        if model is None:
            raise
        message = f"Runtime {name} does not support model {model.name}: {exc.message}"
        raise runtime_inheritance.InheritanceError(message, exc.reason) from exc
    if _dict(obj.get("spec")).get("disabled") is True:
        scope = "namespace-scoped" if found_kind == SERVING_RUNTIME else "cluster-scoped"
        raise RuntimeDisabled(f"{scope} runtime {name} is disabled")
    warnings: list[str] = []
    if model is not None:
        format_name = _format_name(model.spec)
        if not format_name:
            raise InvalidModel(INVALID_MODEL)
        reason = incompatibility(obj, model.obj, isvc)
        if reason is not None:
            warnings.append(
                f'runtime "{name}" does not declare support for model "{model.name}" (runtime {name} does '
                f"not support model {format_name}: {reason}); proceeding because the runtime was named "
                "explicitly"
            )
    return ResolvedRuntime(found_kind, name, obj, auto_selected=False, warnings=warnings)


def _lookup(reader: Reader, name: str, namespace: str, kind: Any) -> tuple[str, Obj] | None:
    cluster: tuple[str, Resource, str | None] = (
        CLUSTER_SERVING_RUNTIME,
        resources.CLUSTER_SERVING_RUNTIMES,
        None,
    )
    local: tuple[str, Resource, str | None] = (SERVING_RUNTIME, resources.SERVING_RUNTIMES, namespace)
    if kind == SERVING_RUNTIME:
        order = [local]
    elif kind == CLUSTER_SERVING_RUNTIME:
        order = [cluster, local]
    else:
        order = [local, cluster]
    for found_kind, res, ns in order:
        if res.namespaced and not ns:
            continue
        obj = reader.get_or_none(res, name, ns)
        if obj is not None:
            return found_kind, obj
    return None


# -- auto-selection ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    kind: str
    name: str
    obj: Obj
    score: float
    distance: float

    def rank(self) -> tuple[int, float, float, str]:
        return (0 if self.kind == SERVING_RUNTIME else 1, -self.score, self.distance, self.name)


def _auto_select(reader: Reader, isvc: Json, model: ResolvedModel) -> ResolvedRuntime:
    format_name = _format_name(model.spec)
    if not format_name:
        raise NoSupportingRuntime(model.name, INVALID_MODEL)
    namespace = _namespace(isvc)
    local = _newest_first(reader.list(resources.SERVING_RUNTIMES, namespace)) if namespace else []
    cluster = _newest_first(reader.list(resources.CLUSTER_SERVING_RUNTIMES))
    candidates: list[_Candidate] = []
    excluded: list[str] = []
    for kind, runtimes in ((SERVING_RUNTIME, local), (CLUSTER_SERVING_RUNTIME, cluster)):
        for obj in runtimes:
            name = str(_dict(obj.get("metadata")).get("name", ""))
            reason = incompatibility(obj, model.obj, isvc)
            if reason is not None:
                excluded.append(f"{name} ({reason})")
                continue
            candidate = _candidate(kind, name, obj, model.spec)
            if candidate is not None:
                candidates.append(candidate)
    if not candidates:
        detail = f"no runtime found to support model {format_name} with format {format_name}"
        detail += f" in namespace {namespace}"
        if local or cluster:
            detail += (
                f". Checked {len(local) + len(cluster)} runtimes ({len(local)} namespace-scoped, "
                f"{len(cluster)} cluster-scoped)"
            )
        if excluded:
            detail += ". Excluded runtimes: " + "; ".join(excluded)
        raise NoSupportingRuntime(model.name, detail)
    best = min(candidates, key=_Candidate.rank)
    warning = f"Runtime {best.name} will be auto-selected for model {model.name}"
    return ResolvedRuntime(best.kind, best.name, best.obj, auto_selected=True, warnings=[warning])


def _candidate(kind: str, name: str, obj: Obj, model: Json) -> _Candidate | None:
    """A compatible runtime that may be auto-selected, or None when autoSelect or the score rules it out."""
    spec = _dict(obj.get("spec"))
    entries = [_dict(e) for e in _list(spec.get("supportedModelFormats"))]
    if not any(e.get("autoSelect") is True for e in entries):
        return None
    score = max((_entry_score(e, model) for e in entries if e.get("autoSelect") is not False), default=0.0)
    if score <= 0:
        return None
    return _Candidate(kind, name, obj, score, _size_distance(spec, model))


def score(runtime_obj: Json, model_obj: Json) -> float:
    """The runtime's auto-selection score for the model: its best entry's (weights) x priority."""
    entries = [_dict(e) for e in _list(_dict(runtime_obj.get("spec")).get("supportedModelFormats"))]
    model = _dict(model_obj.get("spec"))
    return max((_entry_score(e, model) for e in entries if e.get("autoSelect") is not False), default=0.0)


def _entry_score(entry: Json, model: Json) -> float:
    """(format weight + framework weight) x priority for an entry whose format and framework match."""
    fmt, model_fmt = _dict(entry.get("modelFormat")), _dict(model.get("modelFormat"))
    if not fmt.get("name") or fmt.get("name") != model_fmt.get("name"):
        return 0.0
    if not _versions_agree(fmt, model_fmt):
        return 0.0
    total = _weight(fmt, ZERO_FORMAT_WEIGHT)
    fw, model_fw = entry.get("modelFramework"), model.get("modelFramework")
    if isinstance(fw, dict) != isinstance(model_fw, dict):
        return 0.0
    if isinstance(fw, dict) and isinstance(model_fw, dict):
        if fw.get("name") != model_fw.get("name") or not _versions_agree(fw, model_fw):
            return 0.0
        total += _weight(fw, ZERO_FRAMEWORK_WEIGHT)
    priority = entry.get("priority")
    return total * (priority if isinstance(priority, int) and not isinstance(priority, bool) else 1)


def _versions_agree(entry_side: Json, model_side: Json) -> bool:
    """The scorer is lenient: a version only one side sets does not count against the entry."""
    entry_version, model_version = entry_side.get("version"), model_side.get("version")
    if entry_version is None or model_version is None:
        return True
    return compare_versions(entry_version, entry_side.get("operator"), model_version)


def _weight(side: Json, zero_means: int) -> float:
    weight = side.get("weight", 1)
    if not _is_int(weight):
        return 1.0
    return float(zero_means if weight == 0 else weight)


def _newest_first(objs: Iterable[Obj]) -> list[Obj]:
    """Newest first, then by name: the order the exclusion list is written in."""

    def key(obj: Obj) -> tuple[str, str]:
        meta = _dict(obj.get("metadata"))
        return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")

    by_name = sorted(objs, key=lambda o: key(o)[1])
    return sorted(by_name, key=lambda o: key(o)[0], reverse=True)


# -- checks ------------------------------------------------------------------------------------------


def _accepts_accelerators(spec: Json, isvc: Json) -> bool:
    required = required_accelerator_classes(isvc)
    if not required:
        return True
    listed = _list(_dict(spec.get("acceleratorRequirements")).get("acceleratorClasses"))
    return required <= {c for c in listed if isinstance(c, str)}


def required_accelerator_classes(isvc: Json) -> set[str]:
    """Classes the InferenceService asks for: its annotation, acceleratorSelector and component overrides."""
    spec = _dict(isvc.get("spec"))
    names = [
        _dict(_dict(isvc.get("metadata")).get("annotations")).get(ACCELERATOR_CLASS_ANNOTATION),
        _dict(spec.get("acceleratorSelector")).get("acceleratorClass"),
        _dict(_dict(spec.get("engine")).get("acceleratorOverride")).get("acceleratorClass"),
        _dict(_dict(spec.get("decoder")).get("acceleratorOverride")).get("acceleratorClass"),
    ]
    return {n for n in names if isinstance(n, str) and n}


def _mode_mismatch(spec: Json, isvc: Json) -> str | None:
    """Both sides declare a mode for the engine (or a declared decoder) and the modes differ."""
    isvc_spec = _dict(isvc.get("spec"))
    spec_mode = isvc_spec.get("deploymentMode")
    spec_mode = spec_mode if isinstance(spec_mode, str) else None
    for component, config in (("engine", "engineConfig"), ("decoder", "decoderConfig")):
        if component == "decoder" and not isinstance(isvc_spec.get("decoder"), dict):
            continue
        requested = modes.declared_mode(_dict(isvc_spec.get(component)), spec_mode)
        offered = modes.annotation_mode(_str_map(_dict(spec.get(config)).get("annotations")))
        if requested and offered and requested != offered:
            return (
                f"runtime {component} deployment mode {offered} does not match requested {component} "
                f"deployment mode {requested}"
            )
    return None


def entry_mismatches(entry: Json, model: Json) -> list[str]:
    """Why one supportedModelFormats entry does not match the model's spec (empty when it does)."""
    return _entry_mismatches(entry, model)


def size_distance(spec: Json, model: Json) -> float:
    """How far the model's size sits from the middle of the runtime's range (a ranking tie-break)."""
    return _size_distance(spec, model)


def _entry_mismatches(entry: Json, model: Json) -> list[str]:
    """Every way one supportedModelFormats entry differs from the model; empty means it matches."""
    reasons = _pipeline_mismatches(entry, model)
    for key, noun in (("modelArchitecture", "architecture"), ("quantization", "quantization")):
        reasons += _optional_value_mismatch(entry.get(key), model.get(key), noun)
    fmt = entry.get("modelFormat")
    if not isinstance(fmt, dict) or not fmt.get("name"):
        reasons.append("runtime entry declares no model format")
    else:
        reasons += _named_versioned_mismatch(fmt, _dict(model.get("modelFormat")), "format")
    fw, model_fw = entry.get("modelFramework"), model.get("modelFramework")
    if isinstance(fw, dict) and not isinstance(model_fw, dict):
        reasons.append(f"model has no framework but runtime requires {fw.get('name')}")
    elif isinstance(model_fw, dict) and not isinstance(fw, dict):
        reasons.append(f"model has framework {model_fw.get('name')} but runtime has no framework requirement")
    elif isinstance(fw, dict) and isinstance(model_fw, dict):
        reasons += _named_versioned_mismatch(fw, model_fw, "framework")
    return reasons


def _optional_value_mismatch(runtime_value: Any, model_value: Any, noun: str) -> list[str]:
    if runtime_value is None and model_value is None:
        return []
    if model_value is None:
        return [f"model has no {noun} but runtime requires {runtime_value}"]
    if runtime_value is None:
        return [f"model has {noun} {model_value} but runtime has no {noun} requirement"]
    if runtime_value != model_value:
        return [f"{noun} mismatch (model={model_value}, runtime={runtime_value})"]
    return []


def _named_versioned_mismatch(entry_side: Json, model_side: Json, noun: str) -> list[str]:
    """Names must be equal; a version only one side sets never matches (model-version-matching page)."""
    if entry_side.get("name") != model_side.get("name"):
        return [f"{noun} name mismatch (model={model_side.get('name')}, runtime={entry_side.get('name')})"]
    entry_version, model_version = entry_side.get("version"), model_side.get("version")
    if entry_version is None and model_version is None:
        return []
    if model_version is None:
        return [f"model has no {noun} version but runtime requires {entry_version}"]
    if entry_version is None:
        return [f"model has {noun} version but runtime has no version requirement"]
    if not compare_versions(entry_version, entry_side.get("operator"), model_version):
        return [f"{noun} version mismatch (model={model_version}, runtime={entry_version})"]
    return []


def _pipeline_mismatches(entry: Json, model: Json) -> list[str]:
    wanted = entry.get("diffusionPipeline")
    if not isinstance(wanted, dict):
        return []
    have = model.get("diffusionPipeline")
    if not isinstance(have, dict):
        return ["diffusion pipeline required by runtime but not specified in model"]
    reasons = []
    if wanted.get("className") and wanted.get("className") != have.get("className"):
        model_class, runtime_class = have.get("className"), wanted.get("className")
        reasons.append(f"pipeline class mismatch (model={model_class}, runtime={runtime_class})")
    parts = [(p, wanted.get(p), have.get(p)) for p in _PIPELINE_PARTS]
    extra_wanted = _dict(wanted.get("additionalComponents"))
    extra_have = _dict(have.get("additionalComponents"))
    parts += [(p, component, extra_have.get(p)) for p, component in extra_wanted.items()]
    for part, want, got in parts:
        if isinstance(want, dict) and not _component_matches(want, got):
            reasons.append(f"pipeline component {part} mismatch")
    return reasons


def _component_matches(want: Json, got: Any) -> bool:
    if not isinstance(got, dict):
        return False
    return all(not want.get(k) or want.get(k) == got.get(k) for k in ("library", "type"))


def _size_mismatch(spec: Json, model: Json) -> str | None:
    size_text = model.get("modelParameterSize")
    bounds = _dict(spec.get("modelSizeRange"))
    low, high = bounds.get("min"), bounds.get("max")
    if not isinstance(size_text, str) or (low is None and high is None):
        return None
    size = parse_size(size_text)
    too_small = isinstance(low, str) and size < parse_size(low)
    too_big = isinstance(high, str) and size > parse_size(high)
    if not (too_small or too_big):
        return None
    lower = f"[{low}" if low is not None else "(-inf"
    upper = f"{high}]" if high is not None else "inf)"
    return f"model size {size_text} is outside supported range {lower}, {upper}"


def _size_distance(spec: Json, model: Json) -> float:
    """How far the runtime's bounds are from the model's size; 0 without a size or a range."""
    size_text = model.get("modelParameterSize")
    if not isinstance(size_text, str):
        return 0.0
    size = parse_size(size_text)
    bounds = _dict(spec.get("modelSizeRange"))
    present = [b for b in (bounds.get("min"), bounds.get("max")) if isinstance(b, str)]
    return sum(abs(parse_size(b) - size) for b in present)


def parse_size(text: str) -> float:
    """`3.21B` -> 3.21e9; suffixes M, B, T in upper case; anything unparsable reads as 0 (documented)."""
    match = _SIZE.match(text)
    if match is None:
        return 0.0
    return float(match.group(1)) * _SIZE_UNITS[match.group(2)]


# -- versions ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Version:
    v_prefix: bool
    parts: tuple[int, ...]
    suffix: str

    @property
    def padded(self) -> tuple[int, ...]:
        return self.parts + (0,) * (3 - len(self.parts))


def parse_version(text: Any) -> Version | None:
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text)
    if match is None:
        return None
    parts = tuple(int(p) for p in match.group(2, 3, 4) if p is not None)
    return Version(match.group(1) == "v", parts, match.group(5) or "")


def compare_versions(entry_version: Any, operator: Any, model_version: Any) -> bool:
    """Whether the entry's version (left side) accepts the model's under the entry's operator."""
    entry, model = parse_version(entry_version), parse_version(model_version)
    if entry is None or model is None:
        return False
    equal = entry.padded == model.padded and entry.suffix == model.suffix
    if operator in (None, "Equal") or entry.suffix or model.suffix:
        return equal
    if len(entry.parts) != len(model.parts) or entry.v_prefix != model.v_prefix:
        return False
    if operator == "GreaterThan":
        return entry.parts > model.parts
    if operator == "GreaterThanOrEqual":
        return entry.parts >= model.parts
    return equal


def format_label(model: Json) -> str:
    """`mt:<format>[:<version>][:<architecture>][:<quantization>][:<framework>[:<version>]]`."""
    fmt, fw = _dict(model.get("modelFormat")), _dict(model.get("modelFramework"))
    parts = ["mt", str(fmt.get("name") or "")]
    parts += [
        str(v)
        for v in (fmt.get("version"), model.get("modelArchitecture"), model.get("quantization"))
        if v is not None
    ]
    if fw.get("name"):
        parts.append(str(fw["name"]))
        if fw.get("version") is not None:
            parts.append(str(fw["version"]))
    return ":".join(parts)


# -- loose JSON helpers --------------------------------------------------------------------------------


def _format_name(model_spec: Json) -> str:
    name = _dict(model_spec.get("modelFormat")).get("name")
    return name if isinstance(name, str) else ""


def _namespace(isvc: Json) -> str:
    namespace = _dict(isvc.get("metadata")).get("namespace")
    return namespace if isinstance(namespace, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str_map(value: Any) -> dict[str, str]:
    return {k: v for k, v in _dict(value).items() if isinstance(v, str)}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
