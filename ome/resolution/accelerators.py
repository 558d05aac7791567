"""AcceleratorClass selection for the engine and decoder, and what the chosen class does to their pods.

Pure: the reconciler passes the cached AcceleratorClasses (by name) and the runtime spec it renders from
(the live runtime or a pinned revision; a revision holds no class, so a class change always applies).

Selection (docs: concepts/runtimes/accelerator-classes, guides/deploy-models/select-accelerators):

- only when the runtime lists classes in `acceleratorRequirements.acceleratorClasses`; otherwise no
  component gets a class, not even one the InferenceService names. The router never gets one;
- a named class wins over any policy: the component's `acceleratorOverride.acceleratorClass`, then
  `spec.acceleratorSelector.acceleratorClass`. It need not be in the runtime's list, but it must exist:
  a missing one is an error (`accelerator class <name> not found at cluster scope`);
- otherwise the policy (the override's, then the selector's) picks among the runtime's listed classes
  that exist and pass `spec.acceleratorSelector.constraints` (constraints in an override have no effect).
  No policy, or no class that qualifies, means no class: the pods keep the runtime's settings.
  Ties go to the class listed first by the runtime.

What a class changes on each of the component's pods (leader and worker included):

- node selector: the class's `discovery.nodeSelector` over the runtime's, under the component's own
  (not for merged fine-tuned weights, whose pods need no base-model node);
- resources: each of the class's `resources` (quantity default "1") as the runner's request and limit,
  unless the InferenceService sets the runner's resources itself;
- node affinity: the class's `discovery.affinity.nodeAffinity`, unless the component sets an affinity or
  the runtime sets a node affinity;
- the runtime's `acceleratorConfig` entry for the class (runtime_settings / apply_runtime_settings), on
  the runner after the runtime and the InferenceService are merged.

The InferenceService's status does not record the class, and no label or annotation names it: the pods'
node selector shows which class a component got.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from ome.resolution.models import ResolutionError

Obj = dict[str, Any]
Json = Mapping[str, Any]

EVENT_REASON: Final = "AcceleratorClassError"
COMPONENTS: Final = ("engine", "decoder")
BEST_FIT: Final = "BestFit"
CHEAPEST: Final = "Cheapest"
MOST_CAPABLE: Final = "MostCapable"
FIRST_AVAILABLE: Final = "FirstAvailable"
_GIB: Final = 1024**3
_TIERS: Final = {"low": 1, "medium": 2, "high": 3}
_DEFAULT_TIER: Final = 2
_PRECISION_FIELDS: Final = {
    "fp32": "fp32Tflops", "fp16": "fp16Tflops", "int8": "int8Tops", "fp8": "int8Tops", "int4": "int4Tops",
}  # fmt: skip
_SUFFIXES: Final = {
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60), "n": Decimal("1e-9"), "u": Decimal("1e-6"),
    "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
    "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
}  # fmt: skip
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")


class AcceleratorClassError(ResolutionError):
    """A class the InferenceService names is missing; `message` names the component and the class."""


# -- selection ---------------------------------------------------------------------------------------


def listed_classes(runtime_spec: Json | None) -> list[str]:
    """The runtime's `acceleratorRequirements.acceleratorClasses`, deduplicated, in its order."""
    requirements = _dict(_dict(runtime_spec).get("acceleratorRequirements"))
    seen: list[str] = []
    for name in _list(requirements.get("acceleratorClasses")):
        if isinstance(name, str) and name and name not in seen:
            seen.append(name)
    return seen


def requested_class(isvc: Json, component: str) -> str | None:
    """The class the InferenceService names for the component: its override, then the selector."""
    spec = _dict(isvc.get("spec"))
    for source in (_dict(_dict(spec.get(component)).get("acceleratorOverride")), _selector(isvc)):
        name = source.get("acceleratorClass")
        if isinstance(name, str) and name:
            return name
    return None


def requested_policy(isvc: Json, component: str) -> str | None:
    """The policy for the component: its override's, then the selector's."""
    spec = _dict(isvc.get("spec"))
    for source in (_dict(_dict(spec.get(component)).get("acceleratorOverride")), _selector(isvc)):
        policy = source.get("policy")
        if isinstance(policy, str) and policy:
            return policy
    return None


def wanted_names(isvc: Json, runtime_spec: Json | None) -> list[str]:
    """The class names selection may read: the runtime's list plus any class the service names."""
    listed = listed_classes(runtime_spec)
    if not listed:
        return []
    names = list(listed)
    for component in COMPONENTS:
        named = requested_class(isvc, component)
        if named is not None and named not in names:
            names.append(named)
    return names


def select(isvc: Json, runtime_spec: Json | None, component: str, classes: Mapping[str, Json]) -> Obj | None:
    """The AcceleratorClass for one component, or None. `classes` maps names to cached classes.

    Raises AcceleratorClassError (bare message, no component) when the named class does not exist.
    """
    if component not in COMPONENTS or not isinstance(_dict(isvc.get("spec")).get(component), Mapping):
        return None
    listed = listed_classes(runtime_spec)
    if not listed:
        return None
    named = requested_class(isvc, component)
    if named is not None:
        found = classes.get(named)
        if found is None:
            raise AcceleratorClassError(f"accelerator class {named} not found at cluster scope")
        return dict(found)
    policy = requested_policy(isvc, component)
    if policy is None:
        return None
    constraints = _dict(_selector(isvc).get("constraints"))
    candidates = [dict(c) for n in listed if (c := classes.get(n)) is not None]
    eligible = [c for c in candidates if meets_constraints(c, constraints)]
    chooser = _POLICIES.get(policy)
    return chooser(eligible, constraints) if chooser is not None and eligible else None


def select_all(isvc: Json, runtime_spec: Json | None, classes: Mapping[str, Json]) -> dict[str, Obj]:
    """The class of each declared engine/decoder that gets one.

    Raises AcceleratorClassError with `Failed to get accelerator class for <component>: <reason>`.
    """
    chosen: dict[str, Obj] = {}
    for component in COMPONENTS:
        try:
            found = select(isvc, runtime_spec, component, classes)
        except AcceleratorClassError as exc:
            raise AcceleratorClassError(
                f"Failed to get accelerator class for {component}: {exc.message}"
            ) from exc
        if found is not None:
            chosen[component] = found
    return chosen


def uses_class(isvc: Json, class_name: str, runtime_specs: Sequence[Json]) -> bool:
    """Whether a change to the class can change how the InferenceService renders: an engine or decoder
    names it, or picks by policy with a runtime that lists it.

    `runtime_specs` are the specs of the runtimes spec.runtime.name may mean (either scope); a service that
    auto-selects, or whose runtime is not cached, counts as a user of every class its policy might pick.
    """
    spec = _dict(isvc.get("spec"))
    runtime_known = bool(_dict(spec.get("runtime")).get("name")) and bool(runtime_specs)
    for component in COMPONENTS:
        if not isinstance(spec.get(component), Mapping):
            continue
        named = requested_class(isvc, component)
        if named is not None:  # a name wins over any policy: only that class matters
            if named == class_name:
                return True
        elif requested_policy(isvc, component) is not None:
            if not runtime_known or any(class_name in listed_classes(s) for s in runtime_specs):
                return True
    return False


def meets_constraints(cls: Json, constraints: Json) -> bool:
    """Whether a class passes spec.acceleratorSelector.constraints (the documented hard filters)."""
    name = _dict(cls.get("metadata")).get("name")
    spec = _dict(cls.get("spec"))
    capabilities = _dict(spec.get("capabilities"))
    if name in _strings(constraints.get("excludedClasses")):
        return False
    families = _strings(constraints.get("architectureFamilies"))
    if families:
        family = str(spec.get("family") or "").lower()
        vendor_family = f"{str(spec.get('vendor') or '').lower()}-{family}"
        if not any(f.lower() == (vendor_family if "-" in f else family) for f in families):
            return False
    low, high = _int(constraints.get("minMemory")), _int(constraints.get("maxMemory"))
    if low is not None or high is not None:
        memory = memory_gib(cls)
        if memory is None or (low is not None and memory < low) or (high is not None and memory > high):
            return False
    features = {f.lower() for f in _strings(capabilities.get("features"))}
    if any(f.lower() not in features for f in _strings(constraints.get("requiredFeatures"))):
        return False
    minimum = constraints.get("minArchitectureVersion")
    if isinstance(minimum, str):
        capability = capabilities.get("computeCapability")
        if not isinstance(capability, str) or not capability or capability < minimum:  # text comparison
            return False
    return True


def memory_gib(cls: Json) -> int | None:
    """capabilities.memoryGB in whole GiB, rounded down (`80Gi` is 80, `80G` is 74)."""
    value = quantity(_dict(_dict(cls.get("spec")).get("capabilities")).get("memoryGB"))
    return None if value is None else math.ceil(value) // _GIB


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity (`80Gi`, `4.5`, `1e3`) as a number; None when absent or unparsable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    try:
        base = Decimal(number)
        return base * Decimal(f"1{exponent}") if exponent else base * _SUFFIXES[suffix or ""]
    except InvalidOperation:
        return None


# -- policies (ties: the runtime's order) --------------------------------------------------------------


def _first_available(candidates: list[Obj], constraints: Json) -> Obj | None:
    return candidates[0]


def _cheapest(candidates: list[Obj], constraints: Json) -> Obj | None:
    """Lowest spotPerHour (else perHour), else perMillionTokens, else tier; classes without cost are out."""
    costs = [(c, _dict(_dict(c.get("spec")).get("cost"))) for c in candidates]

    def hourly(cost: Json) -> Decimal | None:
        spot = quantity(cost.get("spotPerHour"))
        return spot if spot is not None else quantity(cost.get("perHour"))

    def tokens(cost: Json) -> Decimal | None:
        return quantity(cost.get("perMillionTokens"))

    def tier(cost: Json) -> Decimal | None:
        value = cost.get("tier")
        if not isinstance(value, str) or not value:
            return None
        return Decimal(_TIERS.get(value.lower(), _DEFAULT_TIER))

    keys: tuple[Callable[[Json], Decimal | None], ...] = (hourly, tokens, tier)
    for key in keys:
        priced = [(c, price) for c, cost in costs if cost and (price := key(cost)) is not None]
        if priced:
            return min(priced, key=lambda pair: pair[1])[0]  # min keeps the first of equals
    return None


def _best_fit(candidates: list[Obj], constraints: Json) -> Obj | None:
    """0.7 x memory fit (required / actual) + 0.3 x compute score."""
    return _highest(candidates, lambda c: 0.7 * _memory_fit(c, constraints) + 0.3 * _compute(c, constraints))


def _most_capable(candidates: list[Obj], constraints: Json) -> Obj | None:
    """0.5 x memory + 0.3 x bandwidth + 0.2 x TFLOPS, each relative to the best candidate."""
    precisions = [p.lower() for p in _strings(constraints.get("preferredPrecisions"))]
    raw = [_capability_values(c, precisions) for c in candidates]
    tops = [max(values[i] for values in raw) for i in range(3)]

    def normalised(i: int, value: float) -> float:
        return value / tops[i] if tops[i] > 0 else 0.0

    scores = {
        id(c): 0.5 * normalised(1, mem) + 0.3 * normalised(2, bandwidth) + 0.2 * normalised(0, tflops)
        for c, (tflops, mem, bandwidth) in zip(candidates, raw, strict=True)
    }
    return _highest(candidates, lambda c: scores[id(c)])


_POLICIES: Final[dict[str, Callable[[list[Obj], Json], Obj | None]]] = {
    FIRST_AVAILABLE: _first_available,
    CHEAPEST: _cheapest,
    BEST_FIT: _best_fit,
    MOST_CAPABLE: _most_capable,
}


def _highest(candidates: list[Obj], score: Callable[[Obj], float]) -> Obj | None:
    best: Obj | None = None
    best_score = -math.inf
    for candidate in candidates:
        value = score(candidate)
        if value > best_score:  # strictly greater: the earlier of equals stays
            best, best_score = candidate, value
    return best


def _memory_fit(cls: Json, constraints: Json) -> float:
    required = _int(constraints.get("minMemory"))
    if required is None:
        return 1.0
    memory = quantity(_dict(_dict(cls.get("spec")).get("capabilities")).get("memoryGB"))
    if memory is None:
        return 0.0
    actual = float(math.ceil(memory)) / _GIB
    if actual < required:
        return 0.0
    return 1.0 if actual == required else required / actual


def _performance(cls: Json) -> Json:
    return _dict(_dict(_dict(cls.get("spec")).get("capabilities")).get("performance"))


def _tflops(performance: Json, precision: str) -> int:
    field = _PRECISION_FIELDS.get(precision)
    value = _int(performance.get(field)) if field else None
    return value or 0


def _from_tflops(tflops: int, required: int) -> float:
    if tflops <= 0:
        return 0.0
    if required <= 0:
        return 1.0
    return min(1.0, tflops / required)


def _compute(cls: Json, constraints: Json) -> float:
    """TFLOPS against minComputePerformanceTFLOPS; each fallback precision halves the score."""
    performance = _performance(cls)
    if not performance:
        return 0.0
    required = _int(constraints.get("minComputePerformanceTFLOPS")) or 0
    precisions = [p.lower() for p in _strings(constraints.get("preferredPrecisions"))]
    if not precisions:
        best = max((_tflops(performance, p) for p in ("fp32", "fp16", "int8", "int4")), default=0)
        return _from_tflops(best, required)
    penalty = 1.0
    for precision in precisions:
        if (value := _tflops(performance, precision)) > 0:
            return _from_tflops(value, required) * penalty
        penalty *= 0.5
    if "fp16" not in precisions and (value := _tflops(performance, "fp16")) > 0:
        return _from_tflops(value, required) * penalty
    return 0.0


def _capability_values(cls: Json, precisions: list[str]) -> tuple[float, float, float]:
    """(TFLOPS of the first preferred precision the class has, else fp16; memory GiB; bandwidth GB/s)."""
    performance = _performance(cls)
    tflops = 0
    for precision in precisions or ["fp16"]:
        if (tflops := _tflops(performance, precision)) > 0:
            break
    capabilities = _dict(_dict(cls.get("spec")).get("capabilities"))
    memory = quantity(capabilities.get("memoryGB"))
    bandwidth = quantity(capabilities.get("memoryBandwidthGBps"))
    return (
        float(tflops),
        float(math.ceil(memory)) / _GIB if memory is not None else 0.0,
        float(math.ceil(bandwidth)) if bandwidth is not None else 0.0,
    )


# -- application -----------------------------------------------------------------------------------


def apply(
    pod_spec: Obj,
    container: Obj,
    cls: Json,
    *,
    own_node_selector: Mapping[str, Any],
    own_affinity: bool,
    own_resources: bool,
    node_selector: bool = True,
    settings: Json | None = None,
) -> None:
    """Put the class on one pod spec; `own_*` are what the InferenceService itself sets for this pod.

    `container` is the runner's container in `pod_spec`. `node_selector` is False for merged fine-tuned
    weights. `settings` is the runtime's acceleratorConfig entry for the class (runtime_settings).
    """
    if settings:
        apply_runtime_settings(container, settings)
    discovery = _dict(_dict(cls.get("spec")).get("discovery"))
    selector = {k: v for k, v in _dict(discovery.get("nodeSelector")).items() if isinstance(v, str)}
    if node_selector and selector:
        current = _dict(pod_spec.get("nodeSelector"))
        pod_spec["nodeSelector"] = {**current, **selector, **own_node_selector}
    if not own_resources:
        _set_resources(container, _list(_dict(cls.get("spec")).get("resources")))
    node_affinity = _dict(discovery.get("affinity")).get("nodeAffinity")
    affinity = _dict(pod_spec.get("affinity"))
    if node_affinity and not own_affinity and not affinity.get("nodeAffinity"):
        pod_spec["affinity"] = {**affinity, "nodeAffinity": copy.deepcopy(node_affinity)}


# -- the runtime's settings for the class (serving-runtimes.md, "Per-accelerator configuration") ----------

TP_FLAGS: Final = ("--tp-size", "--tp", "--tensor-parallel-size")
PP_FLAGS: Final = ("--pp-size", "--pp", "--pipeline-parallel-size")


def runtime_settings(
    runtime_spec: Json | None, class_name: str, *, model_format: str = "", auto_selected: bool = False
) -> Json | None:
    """The `acceleratorConfig` entry for the class, from the supportedModelFormats entry that best matches
    the model's format (only `autoSelect: true` entries when OME chose the runtime); None without one.
    A key spelled unlike the class's name is ignored, as documented."""
    entries = [_dict(e) for e in _list(_dict(runtime_spec).get("supportedModelFormats"))]
    if auto_selected:
        entries = [e for e in entries if e.get("autoSelect") is True]
    configured = [
        e for e in entries if isinstance(_dict(e.get("acceleratorConfig")).get(class_name), Mapping)
    ]
    if not configured:
        return None
    same_format = [e for e in configured if _dict(e.get("modelFormat")).get("name") == model_format]
    chosen = (same_format or configured)[0]
    return _dict(_dict(chosen.get("acceleratorConfig")).get(class_name))


def apply_runtime_settings(container: Obj, settings: Json) -> None:
    """tensorParallelismOverride rewrites an existing TP/PP flag (args, else command; never adds one);
    runtimeArgsOverride replaces a flag's value in args or appends it; environmentOverride sets env vars
    over the InferenceService's. dataParallelSize and minMemoryPerBillionParams have no effect (documented).
    """
    parallelism = _dict(settings.get("tensorParallelismOverride"))
    for flags, key in ((TP_FLAGS, "tensorParallelSize"), (PP_FLAGS, "pipelineParallelSize")):
        size = _int(parallelism.get(key))
        if size is None or size <= 0:
            continue
        for field in ("args", "command"):
            values = _strings(container.get(field))
            if len(values) == len(_list(container.get(field))) and _rewrite_flag(values, flags, str(size)):
                container[field] = values
                break
    overrides = _strings(settings.get("runtimeArgsOverride"))
    if overrides:
        args = _strings(container.get("args"))
        for override in overrides:
            flag, has_value, value = override.partition("=")
            if not (has_value and flag.startswith("-") and _rewrite_flag(args, (flag,), value)) and (
                override not in args
            ):
                args.append(override)
        container["args"] = args
    env_override = {k: v for k, v in _dict(settings.get("environmentOverride")).items() if isinstance(v, str)}
    if env_override:
        env = [
            e
            for e in _list(container.get("env"))
            if not (isinstance(e, Mapping) and e.get("name") in env_override)
        ]
        container["env"] = env + [{"name": k, "value": v} for k, v in env_override.items()]


def _rewrite_flag(values: list[str], flags: Sequence[str], value: str) -> bool:
    """Set the value of the first of `flags` present (`--flag=v` or `--flag v`); False when none is."""
    for i, item in enumerate(values):
        name = item.split("=", 1)[0]
        if name not in flags:
            continue
        if "=" in item:
            values[i] = f"{name}={value}"
        elif i + 1 < len(values):
            values[i + 1] = value
        else:
            values.append(value)
        return True
    return False


def _set_resources(container: Obj, entries: Sequence[Any]) -> None:
    quantities = {
        e["name"]: str(e.get("quantity") if e.get("quantity") is not None else "1")
        for e in entries
        if isinstance(e, Mapping) and isinstance(e.get("name"), str) and e["name"]
    }
    if not quantities:
        return
    resources = dict(_dict(container.get("resources")))
    for key in ("requests", "limits"):
        resources[key] = {**_dict(resources.get(key)), **quantities}
    container["resources"] = resources


# -- helpers ---------------------------------------------------------------------------------------


def _selector(isvc: Json) -> Json:
    return _dict(_dict(isvc.get("spec")).get("acceleratorSelector"))


def _dict(value: Any) -> Json:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [v for v in _list(value) if isinstance(v, str)]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
