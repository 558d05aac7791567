"""`kubectl ome runtime effective`: the runtime behind an InferenceService and each component's mode (pure).

The mode of a component is what `ome.resolution.modes` resolves from the runtime's component config
merged with the InferenceService's; it prints as `MODE (SOURCE)`, such as `RawDeployment (Default)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ome.kubectl_ome.table import format_table, shorten_end
from ome.resolution import modes
from ome.resolution.components import RUNTIME_CONFIG_KEYS, declared_components
from ome.resolution.merge import merge_component

Obj = dict[str, Any]

SOURCES: Final[Mapping[str, str]] = {
    "Annotation": "ComponentAnnotation",
    "Spec": "ServiceSpec",
    "LeaderWorker": "LeaderWorkerShape",
    "Default": "Default",
}
"""ModeDecision rules as the CLI names their source."""
SERVICE_ANNOTATION: Final = "ServiceAnnotation"
VALUE_WIDTH: Final = 54


@dataclass(frozen=True, slots=True)
class ComponentMode:
    component: str
    mode: str
    source: str

    def __str__(self) -> str:
        return f"{self.mode} ({self.source})"


@dataclass(frozen=True, slots=True)
class RuntimeRead:
    """The runtime the CLI read for an InferenceService, or why it has none."""

    ref: str | None
    """`CSR/<name>` or `SR/<namespace>/<name>`."""
    obj: Mapping[str, Any] | None
    reason: str | None = None
    """Why the view is unavailable: NotConfigured, NotFound, Disabled, Forbidden, Unreadable,
    AutoSelectionNotProbed."""
    selection: str = "Explicit"
    """Explicit (spec.runtime names it), Reported (the controller's RuntimeReady names it) or None."""

    @property
    def available(self) -> bool:
        return self.obj is not None and self.reason is None


def runtime_ref(kind: str, name: str, namespace: str) -> str:
    return f"SR/{namespace}/{name}" if kind == "ServingRuntime" else f"CSR/{name}"


def component_modes(isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> list[ComponentMode]:
    """Every declared component's mode and the rule that set it, engine then decoder then router."""
    spec = isvc.get("spec") or {}
    if modes.is_virtual(isvc):
        return [
            ComponentMode(c, modes.VIRTUAL_DEPLOYMENT, SERVICE_ANNOTATION) for c in declared_components(isvc)
        ]
    runtime_spec = (runtime or {}).get("spec") or {}
    out = []
    for component in declared_components(isvc):
        merged = merge_component(runtime_spec.get(RUNTIME_CONFIG_KEYS[component]), spec[component])
        decision = modes.resolve(component, merged, spec.get("deploymentMode"))
        out.append(ComponentMode(component, decision.mode, SOURCES.get(decision.rule, decision.rule)))
    return out


def status_freshness(isvc: Mapping[str, Any]) -> str:
    """How status.observedGeneration compares with metadata.generation."""
    generation = (isvc.get("metadata") or {}).get("generation")
    observed = (isvc.get("status") or {}).get("observedGeneration")
    if observed is None:
        return "Unobserved"
    if not isinstance(observed, int) or not isinstance(generation, int) or observed > generation:
        return "Invalid"
    return "Current" if observed == generation else "Stale"


def pin_mode(isvc: Mapping[str, Any]) -> str:
    ref = (isvc.get("spec") or {}).get("runtime") or {}
    if not ref.get("name") or ref.get("autoSync", True) is not False:
        return "AutoSync"
    if ref.get("kind", "ClusterServingRuntime") not in ("ServingRuntime", "ClusterServingRuntime"):
        return "InvalidPin"
    return "ExplicitPin" if ref.get("revision") else "ManagedPin"


def effective_rows(isvc: Mapping[str, Any], runtime: RuntimeRead) -> list[tuple[str, str, str]]:
    """(SCOPE, FIELD, VALUE) rows: the Live view, then the Service rows."""
    rows = [("Live", "STATE", "Available" if runtime.available else "Unavailable")]
    if runtime.reason:
        rows.append(("Live", "REASON", runtime.reason))
    if runtime.ref:
        rows.append(("Live", "RUNTIME", runtime.ref))
    for mode in component_modes(isvc, runtime.obj):
        rows.append(("Live", mode.component.upper(), str(mode)))
    if runtime.ref:
        rows.append(("Service", "SELECTION", runtime.selection))
    rows.append(("Service", "PIN", pin_mode(isvc)))
    freshness = status_freshness(isvc)
    rows.append(("Service", "STATUS", freshness))
    for issue in issues(runtime, freshness):
        rows.append(("Service", "ISSUE", issue))
    return rows


def issues(runtime: RuntimeRead, freshness: str) -> list[str]:
    out = []
    if runtime.reason not in (None, "NotConfigured", "AutoSelectionNotProbed"):
        out.append("LiveRuntimeUnavailable")
    if freshness != "Current":
        out.append(f"Status{freshness}")
    return out


def format_effective(rows: Sequence[tuple[str, str, str]]) -> str:
    return format_table(
        ("SCOPE", "FIELD", "VALUE"), [(s, f, shorten_end(v, VALUE_WIDTH)) for s, f, v in rows]
    )


def effective_document(isvc: Mapping[str, Any], runtime: RuntimeRead) -> Obj:
    meta = isvc.get("metadata") or {}
    return {
        "apiVersion": "cli.ome.io/v1alpha1",
        "kind": "RuntimeEffectiveReport",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "content": {
            "live": {
                "state": "Available" if runtime.available else "Unavailable",
                "reason": runtime.reason,
                "runtime": runtime.ref,
                "selection": runtime.selection if runtime.ref else None,
                "components": [
                    {"component": m.component, "mode": m.mode, "source": m.source}
                    for m in component_modes(isvc, runtime.obj)
                ],
            },
            "pin": pin_mode(isvc),
            "status": status_freshness(isvc),
            "issues": issues(runtime, status_freshness(isvc)),
        },
    }
