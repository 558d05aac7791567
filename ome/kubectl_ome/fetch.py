"""What the commands read from the API server, and the pure selection of it.

`select_replicas` and `warning_events` are pure; the `read_*` coroutines do the requests. A failed
read of the InferenceService raises (the CLI prints it and exits 1); the other reads degrade into
evidence values and issues in the report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.api.resources import (
    CLUSTER_SERVING_RUNTIMES,
    EVENTS,
    INFERENCE_REPLICAS,
    INFERENCE_SERVICES,
    PODS,
    SERVING_RUNTIMES,
)
from ome.framework import errors
from ome.framework.client import Client
from ome.kubectl_ome import snapshot
from ome.kubectl_ome.effective import RuntimeRead, runtime_ref
from ome.kubectl_ome.instances import REJECTED, SOURCE_UNAVAILABLE, ReplicaRead
from ome.omenative.instance_names import ISVC_LABEL
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

MAX_EVENTS: Final = 20
_RESOLVED: Final = re.compile(r'runtime "([^"]+)" resolved')


@dataclass(slots=True)
class ReplicaSet:
    reads: list[ReplicaRead] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _parent(obj: Mapping[str, Any]) -> str | None:
    ref = (obj.get("spec") or {}).get("parentRef") or {}
    return ref.get("name")


def _component(obj: Mapping[str, Any]) -> str | None:
    return (obj.get("spec") or {}).get("component")


def select_replicas(isvc: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> ReplicaSet:
    """The InferenceReplicas behind each component: `{isvc}-{component}` (owned through parentRef),
    the standalone ones `spec.replicaRefs` names, and any second one claiming the component."""
    name = _name(isvc)
    refs = (isvc.get("spec") or {}).get("replicaRefs") or {}
    by_name = {_name(item): item for item in items}
    out = ReplicaSet()
    for component in COMPONENTS:
        canonical = f"{name}-{component}"
        named = list(refs.get(component) or [])
        owned = by_name.get(canonical)
        if owned is not None and canonical not in named and _parent(owned) == name:
            if _component(owned) == component:
                out.reads.append(ReplicaRead(component, canonical, owned, projected=True))
            else:
                out.summary.append(REJECTED)
                out.warnings.append(f"{canonical}: spec.component is {_component(owned)!r}, not {component}")
        for ref in named:
            obj = by_name.get(ref)
            if obj is not None and _component(obj) != component:
                out.summary.append(REJECTED)
                out.warnings.append(f"{ref}: spec.component is {_component(obj)!r}, not {component}")
                continue
            out.reads.append(ReplicaRead(component, ref, obj))
        for item in items:
            other = _name(item)
            if other != canonical and other not in named and _parent(item) == name:
                if _component(item) == component and owned is not None:
                    out.reads.append(ReplicaRead(component, other, item, duplicate=True))
    out.summary = list(dict.fromkeys(out.summary))
    return out


async def read_isvc(client: Client, name: str, namespace: str) -> Obj:
    return await client.get(INFERENCE_SERVICES, name, namespace)


async def read_replicas(client: Client, isvc: Mapping[str, Any]) -> ReplicaSet:
    namespace = (isvc.get("metadata") or {}).get("namespace")
    try:
        items, _ = await client.list(INFERENCE_REPLICAS, namespace)
    except errors.ApiError as exc:
        return ReplicaSet(
            summary=[SOURCE_UNAVAILABLE],
            warnings=[f"cannot list inferencereplicas.ome.io in namespace {namespace!r}: {exc}"],
        )
    return select_replicas(isvc, items)


def runtime_name_reported(isvc: Mapping[str, Any]) -> str | None:
    """The runtime the controller resolved, from its RuntimeReady condition."""
    for cond in (isvc.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "RuntimeReady" and cond.get("status") == "True":
            match = _RESOLVED.search(str(cond.get("message") or ""))
            if match:
                return match.group(1)
    return None


async def read_runtime(client: Client, isvc: Mapping[str, Any]) -> RuntimeRead:
    """The runtime spec.runtime names, else the one the controller reports it resolved."""
    meta, spec = isvc.get("metadata") or {}, isvc.get("spec") or {}
    namespace = str(meta.get("namespace") or "")
    ref = spec.get("runtime") or {}
    if ref.get("name"):
        # As `runtime tree` documents the lookup: a ClusterServingRuntime (the CRD's default kind) is
        # looked for first, then a ServingRuntime of the service's namespace; no kind looks locally first.
        declared = ref.get("kind")
        kinds = (
            ["ServingRuntime"]
            if declared == "ServingRuntime"
            else ["ClusterServingRuntime", "ServingRuntime"]
            if declared == "ClusterServingRuntime"
            else ["ServingRuntime", "ClusterServingRuntime"]
        )
        name, selection = str(ref["name"]), "Explicit"
    elif (reported := runtime_name_reported(isvc)) is not None:
        kinds, name, selection = ["ServingRuntime", "ClusterServingRuntime"], reported, "Reported"
    elif spec.get("model"):
        return RuntimeRead(None, None, "AutoSelectionNotProbed", selection="Selected")
    else:
        return RuntimeRead(None, None, "NotConfigured")
    reason = "NotFound"
    for kind in kinds:
        res = SERVING_RUNTIMES if kind == "ServingRuntime" else CLUSTER_SERVING_RUNTIMES
        try:
            obj = await client.get(res, name, namespace if res.namespaced else None)
        except errors.NotFound:
            continue
        except (errors.Forbidden, errors.Unauthorized):
            reason = "Forbidden"
            continue
        except errors.ApiError:
            reason = "Unreadable"
            continue
        disabled = bool((obj.get("spec") or {}).get("disabled"))
        return RuntimeRead(
            runtime_ref(kind, name, namespace), obj, "Disabled" if disabled else None, selection
        )
    return RuntimeRead(runtime_ref(kinds[0], name, namespace), None, reason, selection)


def _event_time(event: Mapping[str, Any]) -> str:
    series = event.get("series") or {}
    return str(
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def warning_events(
    events: Iterable[Mapping[str, Any]], targets: set[tuple[str, str]], limit: int = MAX_EVENTS
) -> list[Mapping[str, Any]]:
    """The Warning events about `targets` ((kind, name) pairs), newest first."""
    kept = [
        e
        for e in events
        if e.get("type") == "Warning"
        and ((e.get("involvedObject") or {}).get("kind"), (e.get("involvedObject") or {}).get("name"))
        in targets
    ]
    kept.sort(key=_event_time, reverse=True)
    return kept[:limit]


async def read_events(
    client: Client, namespace: str, targets: set[tuple[str, str]]
) -> tuple[list[Mapping[str, Any]], str | None]:
    """Warning events about `targets`, and why they could not be read (None when they could)."""
    try:
        items, _ = await client.list(EVENTS, namespace, field_selector="type=Warning")
    except errors.ApiError as exc:
        return [], f"cannot list events in namespace {namespace!r}: {exc}"
    return warning_events(items, targets), None


async def read_pod_names(client: Client, namespace: str, isvc: str) -> tuple[list[str], str | None]:
    try:
        items, _ = await client.list(PODS, namespace, label_selector={ISVC_LABEL: isvc}, metadata_only=True)
    except errors.ApiError as exc:
        return [], f"cannot list pods in namespace {namespace!r}: {exc}"
    return sorted(_name(p) for p in items), None


# --- the Live runtime: selection and inheritance -------------------------------------------------

SELECTION_LIMIT: Final = 1000
SELECTION_PAGE: Final = 500
SELECTION_PAGES: Final = 2
CHAIN_REASONS: Final[Mapping[str, str]] = {
    "ParentNotFound": "NotFound",
    "InheritanceCycle": "Cycle",
    "MaxDepthExceeded": "MaxDepthExceeded",
}
"""InheritanceReady reasons as the CLI names why it could not observe a chain."""


@dataclass(slots=True)
class LiveRuntime:
    """The runtime behind a service with its merged (inherited) spec, its root-first chain, and whether
    the chain was observed: `inheritance` is Observed, Unavailable (with `inheritance_reason`: NotFound,
    Forbidden, Cycle, MaxDepthExceeded, Unreadable), or empty when the service has no runtime to look for."""

    read: RuntimeRead
    chain: list[str] = field(default_factory=list)
    inheritance: str = ""
    inheritance_reason: str | None = None

    @property
    def inheritance_failed(self) -> bool:
        return self.inheritance == "Unavailable"


def _unobserved(read: RuntimeRead, reason: str | None) -> LiveRuntime:
    return LiveRuntime(read, [], "Unavailable", reason or "Unreadable")


async def _candidates(client: Client, res: Any, namespace: str | None) -> snapshot.PagedRead:
    return await snapshot.paged_list(client, res, namespace, page_size=SELECTION_PAGE,
                                     page_limit=SELECTION_PAGES, request_limit=SELECTION_PAGES,
                                     keep=SELECTION_LIMIT)


async def _select(client: Client, isvc: Mapping[str, Any]) -> RuntimeRead:
    """The runtime OME's automatic selection picks for the service's model (`runtime explain`), from
    at most SELECTION_LIMIT runtimes read in at most two pages of each kind; more is Unreadable."""
    from ome.api.resources import BASE_MODELS, CLUSTER_BASE_MODELS
    from ome.kubectl_ome import explain

    namespace = str((isvc.get("metadata") or {}).get("namespace") or "")
    model_name = str(((isvc.get("spec") or {}).get("model") or {}).get("name") or "")
    try:
        try:
            model = await client.get(BASE_MODELS, model_name, namespace)
        except errors.NotFound:
            model = await client.get(CLUSTER_BASE_MODELS, model_name)
    except errors.ApiError as exc:
        return RuntimeRead(None, None, _failure(snapshot.failure_reason(exc)), selection="Selected")
    local = await _candidates(client, SERVING_RUNTIMES, namespace)
    cluster = await _candidates(client, CLUSTER_SERVING_RUNTIMES, None)
    for read in (local, cluster):
        if read.failure is not None:
            return RuntimeRead(None, None, _failure(read.failure), selection="Selected")
    if local.truncated or cluster.truncated or len(local.items) + len(cluster.items) > SELECTION_LIMIT:
        return RuntimeRead(None, None, "Unreadable", selection="Selected")
    chosen = next((r for r in explain.explain(local.items, cluster.items, model, isvc) if r.compatible), None)
    if chosen is None:
        return RuntimeRead(None, None, "NotFound", selection="Selected")
    pool, kind = (
        (local.items, "ServingRuntime") if chosen.scope == "Namespaced"
        else (cluster.items, "ClusterServingRuntime")
    )
    obj = next(o for o in pool if _name(o) == chosen.runtime)
    return RuntimeRead(runtime_ref(kind, chosen.runtime, namespace), obj, None, "Selected")


def _failure(reason: str) -> str:
    """A failed read as a view's REASON: a timeout is Unreadable there."""
    return "Unreadable" if reason == "TimedOut" else reason


async def read_live_runtime(client: Client, isvc: Mapping[str, Any]) -> LiveRuntime:
    """The Live view's runtime: the one spec.runtime names (or selection picks), merged with the
    runtimes it inherits from (at most runtime_inheritance.MAX_DEPTH reads) by the resolver's merge."""
    from ome.kubectl_ome.runtime_tree import SnapshotReader
    from ome.resolution import runtime_inheritance as ri

    spec = isvc.get("spec") or {}
    if (spec.get("runtime") or {}).get("name"):
        read = await read_runtime(client, isvc)
    elif spec.get("model"):
        read = await _select(client, isvc)
    else:
        return LiveRuntime(RuntimeRead(None, None, "NotConfigured"))
    if read.obj is None:
        return _unobserved(read, read.reason)
    kind = "ServingRuntime" if str(read.ref).startswith("SR/") else "ClusterServingRuntime"
    obj = dict(read.obj)
    cluster: list[Obj] = []
    local: list[Obj] = []
    (local if kind == "ServingRuntime" else cluster).append(obj)
    current, current_kind = obj, kind
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    unread: str | None = None
    """Why a parent could not be read, when it failed otherwise than NotFound."""
    for _ in range(ri.MAX_DEPTH):
        parent = ri.parent_name(current)
        if not parent or parent in {_name(o) for o in cluster + local}:
            break
        found: Obj | None = None
        for res, ns in ((SERVING_RUNTIMES, namespace), (CLUSTER_SERVING_RUNTIMES, None)):
            if res.namespaced and current_kind != "ServingRuntime":
                continue
            try:
                found = await client.get(res, parent, ns)
            except errors.NotFound:
                continue
            except errors.ApiError as exc:
                unread = _failure(snapshot.failure_reason(exc))
                continue
            (local if res.namespaced else cluster).append(found)
            current_kind = "ServingRuntime" if res.namespaced else "ClusterServingRuntime"
            break
        if found is None:
            break
        current = found
    try:
        links = ri.chain(SnapshotReader(cluster, local), kind, obj)
    except ri.InheritanceError as exc:
        reason = CHAIN_REASONS.get(exc.reason, "Unreadable")
        if reason == "NotFound" and unread is not None:
            reason = unread
        return _unobserved(RuntimeRead(read.ref, None, "NotFound", read.selection), reason)
    merged = dict(obj)
    merged["spec"] = ri.merged_spec([link.obj.get("spec") or {} for link in links])
    chain = [runtime_ref(link.kind, link.name, namespace) for link in links]
    return LiveRuntime(RuntimeRead(read.ref, merged, read.reason, read.selection), chain, "Observed")
