"""`kubectl ome runtime effective`: the runtime behind an InferenceService in two views (pure).

The Live view is the runtime as defined now (the one spec.runtime names or selection picks, merged with
the runtimes it inherits from); the Active view is what the service is meant to run: the revision it is
pinned to, else the Live view. Each view shows the short hash of its spec and each component's mode,
`MODE (SOURCE)` as `ome.resolution.modes` resolves it. The Service rows add the pin (`<mode>/<state>`),
the runtime sync request, status freshness, the RuntimeDrifted condition and how the two hashes relate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from ome.kubectl_ome.table import format_table, middle_cut, shorten_end
from ome.resolution import modes
from ome.resolution import runtime_revisions as rr
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


RUNTIME_SYNC: Final = "ome.io/runtime-sync"
WIDE_HEADERS: Final = (
    "VIEW", "STATE", "REASON", "RUNTIME", "REVISION", "HASH", "COMPONENT", "MODE", "MODE-SOURCE", "PIN",
    "PIN-STATE", "SYNC", "STATUS", "DRIFT", "LIVE-RELATION", "ISSUES",
)  # fmt: skip
DRIFT_CAUSES: Final = frozenset(
    {rr.REVISION_MISMATCH, rr.REVISION_MISSING, rr.SOURCE_RUNTIME_MISSING, rr.RUNTIME_MISMATCH}
)
LIVE_UNAVAILABLE: Final = frozenset({"NotFound", "Disabled", "Forbidden", "Unreadable", "UnsupportedAPI"})


def full_hash(spec: Mapping[str, Any] | None) -> str:
    """sha256 over the spec's canonical JSON; its first 8 digits are `runtime_revisions.spec_hash`."""
    return hashlib.sha256(orjson.dumps(spec or {}, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True, slots=True)
class View:
    scope: str
    state: str
    reason: str | None
    runtime: str | None
    """`CSR/<name>` or `SR/<namespace>/<name>`."""
    revision: str | None
    hash: str | None
    """The full hash of the view's spec."""
    modes: list[ComponentMode]

    @property
    def short_hash(self) -> str | None:
        return self.hash[: rr.HASH_LENGTH] if self.hash else None


@dataclass(frozen=True, slots=True)
class Effective:
    live: View
    active: View
    pin: str
    pin_state: str
    sync: str
    status: str
    drift: str
    relation: str
    issues: list[str]
    selection: str | None
    chain: list[str]


def drift_state(isvc: Mapping[str, Any]) -> tuple[str, str]:
    """The RuntimeDrifted condition as (state, cause)."""
    found = [
        c for c in (isvc.get("status") or {}).get("conditions") or [] if c.get("type") == rr.RUNTIME_DRIFTED
    ]
    if not found:
        return "NotReported", "-"
    if len(found) > 1 or found[0].get("status") not in ("True", "False", "Unknown"):
        return "Malformed", "-"
    reason = found[0].get("reason")
    return f"Reported{found[0].get('status')}", str(reason) if reason in DRIFT_CAUSES else "Other"


def sync_state(isvc: Mapping[str, Any]) -> str:
    token = ((isvc.get("metadata") or {}).get("annotations") or {}).get(RUNTIME_SYNC)
    recorded = (isvc.get("status") or {}).get(rr.TOKEN_FIELD)
    if not token:
        return "StatusOnly" if recorded else "Absent"
    return "Acknowledged" if token == recorded else "Pending"


def relation(live: View, active: View) -> str:
    if not live.hash or not active.hash:
        return "Unknown"
    if live.hash == active.hash:
        return "Equal"
    return "Ambiguous" if live.short_hash == active.short_hash else "Different"


def _active_from_revision(
    isvc: Mapping[str, Any], runtime: str | None, name: str, revision: Obj | str | None
) -> tuple[View, str | None, list[str]]:
    """(Active view, the pin state it forces or None, revision issues)."""
    if revision is None or revision == "NotFound":
        return (
            View("Active", "Unavailable", "NotFound", runtime, name, None, []),
            "RevisionMissing",
            [f"RevisionNotFound({name})"],
        )
    if isinstance(revision, str):
        return (
            View("Active", "Unavailable", revision, runtime, name, None, []),
            "Unavailable",
            [f"RevisionUnavailable({name})"],
        )
    spec = rr.revision_spec(revision)
    labels = (revision.get("metadata") or {}).get("labels") or {}
    short = labels.get(rr.REVISION_HASH_LABEL)
    if short is not None and short != rr.spec_hash(spec):
        return (
            View("Active", "Unavailable", "MalformedPayload", runtime, name, None, []),
            "RevisionInvalid",
            [f"RevisionHashMismatch({name})"],
        )
    if spec.get("disabled") is True:
        return (
            View("Active", "Unavailable", "Disabled", runtime, name, full_hash(spec), []),
            "RevisionDisabled",
            [f"RevisionDisabled({name})"],
        )
    modes_ = component_modes(isvc, {"spec": spec})
    return View("Active", "Available", None, runtime, name, full_hash(spec), modes_), None, []


def build(
    isvc: Mapping[str, Any],
    runtime: RuntimeRead,
    revisions: Mapping[str, Obj | str],
    *,
    inheritance_issue: bool = False,
    chain: Sequence[str] = (),
) -> Effective:
    """`runtime.obj` carries the merged (inherited) spec; `revisions` maps each revision the service
    names to the object read, or why it could not be read (`NotFound`, `Forbidden`, ...)."""
    live_spec = (runtime.obj or {}).get("spec") if runtime.available else None
    live = View(
        "Live",
        "Available" if runtime.available else "Unavailable",
        runtime.reason if not runtime.available else None,
        runtime.ref,
        None,
        full_hash(live_spec) if live_spec is not None else None,
        component_modes(isvc, runtime.obj),
    )
    mode = pin_mode(isvc)
    ref = (isvc.get("spec") or {}).get("runtime") or {}
    reported = (isvc.get("status") or {}).get(rr.PINNED_FIELD)
    issues: list[str] = []
    revision_issues: list[str] = []
    if ref.get("kind") not in (None, "ServingRuntime", "ClusterServingRuntime"):
        issues.append("InvalidDeclaredKind")
    if inheritance_issue:
        issues.append("InheritanceUnavailable")
    if runtime.reason in LIVE_UNAVAILABLE:
        issues.append("LiveRuntimeUnavailable")
    freshness = status_freshness(isvc)
    if freshness != "Current":
        issues.append(f"Status{freshness}")
    drift, cause = drift_state(isvc)
    if drift == "Malformed":
        issues.append("ReportedDriftConflict")
    as_live = View("Active", live.state, live.reason, live.runtime, None, live.hash, live.modes)
    if mode == "InvalidPin":
        state = "InvalidIntent"
        active = View("Active", "Unavailable", "MalformedPayload", runtime.ref, None, None, [])
    elif mode == "AutoSync":
        state, active = ("NotApplicable" if runtime.available else "Unavailable"), as_live
    elif mode == "ManagedPin" and not reported:
        state, active = ("AwaitingPin" if runtime.available else "Unavailable"), as_live
        issues.append("ActiveRevisionUnreported")
    else:
        target = str(ref.get("revision") or reported) if mode == "ExplicitPin" else str(reported)
        active, forced, revision_issues = _active_from_revision(
            isvc, runtime.ref, target, revisions.get(target)
        )
        if forced is not None:
            state = forced
        elif mode == "ExplicitPin" and reported and reported != target:
            state = "DesiredReportedMismatch"
        else:
            state = "Resolved"
        if active.state != "Available":
            issues.append("ActiveRevisionUnavailable")
    issues += revision_issues
    return Effective(
        live=live,
        active=active,
        pin=mode,
        pin_state=state,
        sync=sync_state(isvc),
        status=freshness,
        drift=f"{drift}/{cause}" if cause != "-" else drift,
        relation=relation(live, active),
        issues=issues,
        selection=runtime.selection if runtime.ref else None,
        chain=list(chain),
    )


NAMESPACE_WIDTH: Final = 20
ISSUE_CODE_WIDTH: Final = 28
TAG_WIDTH: Final = 9
"""`#` and eight hex digits of the sha256 of the whole identity, which tell apart names cut alike."""


def identity_cell(value: str, width: int = VALUE_WIDTH) -> str:
    """An identity within `width`: whole, or both of its ends around `...` followed by `#<8 hex>`."""
    value = value or "-"
    if len(value) <= width:
        return value
    tag = hashlib.sha256(value.encode()).hexdigest()[:8]
    return f"{middle_cut(value, width - TAG_WIDTH)}#{tag}"


def runtime_cell(ref: str) -> str:
    """`CSR/<name>` or `SR/<namespace>/<name>` within the value width: a namespace keeps at most 20
    characters and the name the rest, each cut as `identity_cell` cuts."""
    kind, _, rest = ref.partition("/")
    if kind == "SR" and "/" in rest:
        namespace, _, name = rest.partition("/")
        room = VALUE_WIDTH - len(kind) - 2 - NAMESPACE_WIDTH
        return f"{kind}/{identity_cell(namespace, NAMESPACE_WIDTH)}/{identity_cell(name, room)}"
    return f"{kind}/{identity_cell(rest, VALUE_WIDTH - len(kind) - 1)}"


def issue_cell(issue: str) -> str:
    """An issue code, or `Code(<revision>)` with each part cut on its own when the whole is too long."""
    code, paren, revision = issue.partition("(")
    if not paren or not revision.endswith(")"):
        return identity_cell(issue)
    if len(issue) <= VALUE_WIDTH:
        return issue
    room = VALUE_WIDTH - ISSUE_CODE_WIDTH - 2
    return f"{identity_cell(code, ISSUE_CODE_WIDTH)}({identity_cell(revision[:-1], room)})"


def _view_rows(view: View) -> list[tuple[str, str, str]]:
    rows = [(view.scope, "STATE", view.state)]
    for field, value in (
        ("REASON", view.reason),
        ("RUNTIME", runtime_cell(view.runtime) if view.runtime else None),
        ("REVISION", identity_cell(view.revision) if view.revision else None),
        ("HASH", view.short_hash),
    ):
        if value:
            rows.append((view.scope, field, value))
    rows += [(view.scope, m.component.upper(), str(m)) for m in view.modes]
    return rows


def effective_rows(report: Effective) -> list[tuple[str, str, str]]:
    """(SCOPE, FIELD, VALUE): Live rows, Active rows, then Service rows."""
    rows = _view_rows(report.live) + _view_rows(report.active)
    rows += [
        ("Service", "PIN", f"{report.pin}/{report.pin_state}"),
        ("Service", "SYNC", report.sync),
        ("Service", "STATUS", report.status),
        ("Service", "DRIFT", report.drift),
        ("Service", "LIVE-RELATION", report.relation),
    ]
    rows += [("Service", "ISSUE", issue_cell(issue)) for issue in report.issues]
    return rows


def format_effective(rows: Sequence[tuple[str, str, str]]) -> str:
    """The SCOPE/FIELD/VALUE table; a value still past the width keeps its first 51 characters and `...`."""
    return format_table(
        ("SCOPE", "FIELD", "VALUE"), [(s, f, shorten_end(v, VALUE_WIDTH)) for s, f, v in rows]
    )


def _full_runtime(ref: str | None) -> str:
    if not ref:
        return "-"
    if ref.startswith("SR/"):
        return "ServingRuntime/" + ref[3:]
    return "ClusterServingRuntime/" + ref.removeprefix("CSR/")


def wide_rows(report: Effective) -> list[list[str]]:
    out = []
    for view in (report.live, report.active):
        shown: list[ComponentMode | None] = list(view.modes) or [None]
        for m in shown:
            out.append(
                [
                    view.scope, view.state, view.reason or "-", _full_runtime(view.runtime),
                    view.revision or "-", view.short_hash or "-", m.component if m else "-",
                    m.mode if m else "-", m.source if m else "-", report.pin, report.pin_state, report.sync,
                    report.status, report.drift, report.relation, ",".join(report.issues) or "-",
                ]
            )  # fmt: skip
    return out


def format_wide(report: Effective) -> str:
    return format_table(WIDE_HEADERS, wide_rows(report))


def _view_document(view: View) -> Obj:
    doc: Obj = {"state": view.state}
    for key, value in (
        ("reason", view.reason),
        ("runtime", view.runtime),
        ("revision", view.revision),
        ("hash", view.short_hash),
    ):
        if value:
            doc[key] = value
    doc["components"] = [{"component": m.component, "mode": m.mode, "source": m.source} for m in view.modes]
    return doc


def effective_document(isvc: Mapping[str, Any], report: Effective) -> Obj:
    meta = isvc.get("metadata") or {}
    return {
        "apiVersion": "cli.ome.io/v1alpha1",
        "kind": "RuntimeEffectiveReport",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "content": {
            "selection": report.selection,
            "inheritanceChain": report.chain,
            "live": _view_document(report.live),
            "active": _view_document(report.active),
            "service": {
                "pin": report.pin,
                "pinState": report.pin_state,
                "sync": report.sync,
                "status": report.status,
                "drift": report.drift,
                "liveRelation": report.relation,
            },
            "issues": list(report.issues),
        },
    }
