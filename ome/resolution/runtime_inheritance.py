"""Runtime inheritance (concepts/runtimes/runtime-inheritance.md): a runtime's chain and its merged spec.

A runtime names its parent in `ome.io/inherit-from`. Parents are looked up by name only: a
ClusterServingRuntime's among ClusterServingRuntimes, a ServingRuntime's among the ServingRuntimes of its
namespace and then the ClusterServingRuntimes (once the chain reaches cluster scope it stays there). A chain
holds at most MAX_DEPTH runtimes and a name at most once, whatever its kind.

The merge runs from the root down, each spec laid over its parent's with the strategic-merge rules of
resolution/merge.py (single values replace, objects and maps merge, named lists merge by their key, other
lists replace). A child's `[]`, `{}` or `""` counts as unset, so a child can't remove what a parent sets.
Only the spec is inherited: the merged object keeps the child's metadata.

Pure: the lookups go through the injected reader; the errors carry the documented texts, with the chain
starting at the runtime written, and the InheritanceReady reasons. `inheritance_status` is the status
the inheritance controller (ome/controllers/runtimeinheritance) writes from a resolution's outcome.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ome.api import resources
from ome.resolution.merge import strategic_merge
from ome.resolution.models import ResolutionError

Obj = dict[str, Any]

INHERIT_FROM: Final = "ome.io/inherit-from"
RUNTIME_PROFILE: Final = "ome.io/runtime-profile"
MAX_DEPTH: Final = 5
SERVING_RUNTIME: Final = "ServingRuntime"
CLUSTER_SERVING_RUNTIME: Final = "ClusterServingRuntime"
PARENT_NOT_FOUND: Final = "ParentNotFound"
INHERITANCE_CYCLE: Final = "InheritanceCycle"
MAX_DEPTH_EXCEEDED: Final = "MaxDepthExceeded"
INHERITANCE_READY: Final = "InheritanceReady"
RESOLVED: Final = "Resolved"
RESOLVER_ERROR: Final = "ResolverError"
RESOLVED_MESSAGE: Final = "inheritance chain resolved"
PROFILE_NOT_DISABLED: Final = (
    'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'
)


class InheritanceError(ResolutionError):
    """The chain does not resolve; `reason` is the InheritanceReady reason."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Link:
    kind: str
    obj: Obj

    @property
    def name(self) -> str:
        return str(_dict(self.obj.get("metadata")).get("name", ""))


class Reader(Protocol):
    def get_or_none(self, res: resources.Resource, name: str, namespace: str | None = None) -> Obj | None: ...


def parent_name(obj: Mapping[str, Any]) -> str:
    value = _dict(_dict(obj.get("metadata")).get("annotations")).get(INHERIT_FROM)
    return value.strip() if isinstance(value, str) else ""


def is_profile(obj: Mapping[str, Any]) -> bool:
    return _dict(_dict(obj.get("metadata")).get("annotations")).get(RUNTIME_PROFILE) == "true"


def profile_error(obj: Mapping[str, Any]) -> str | None:
    """A runtime marked as a profile must be disabled."""
    if is_profile(obj) and _dict(obj.get("spec")).get("disabled") is not True:
        return PROFILE_NOT_DISABLED
    return None


def chain(reader: Reader, kind: str, obj: Obj) -> list[Link]:
    """The runtime and its ancestors, root first; raises InheritanceError when the chain breaks."""
    links = [Link(kind, obj)]
    namespace = _dict(obj.get("metadata")).get("namespace")
    scope_ns = namespace if kind == SERVING_RUNTIME and isinstance(namespace, str) else None
    while parent := parent_name(links[-1].obj):
        names = [link.name for link in links]
        if parent in names:
            raise InheritanceError(
                f"inheritance cycle detected: [{' '.join([*names, parent])}]", INHERITANCE_CYCLE
            )
        if len(links) >= MAX_DEPTH:
            raise InheritanceError(
                f"inheritance chain exceeds max depth {MAX_DEPTH} (chain so far: [{' '.join(names)}])",
                MAX_DEPTH_EXCEEDED,
            )
        found = _lookup(reader, parent, scope_ns if links[-1].kind == SERVING_RUNTIME else None)
        if found is None:
            raise InheritanceError(
                f'inherit-from parent "{parent}" not found (chain so far: [{" ".join(names)}])',
                PARENT_NOT_FOUND,
            )
        links.append(found)
    return list(reversed(links))


def merged_spec(specs: list[Mapping[str, Any]]) -> Obj:
    """The specs (root first) laid over each other; empty values of a child count as unset."""
    result: Obj = {}
    for spec in specs:
        result = strategic_merge(result, _without_empty(_dict(spec)))
    return result


def resolve(reader: Reader, kind: str, obj: Obj) -> Obj:
    """The runtime with its merged spec (a copy); the runtime itself when it inherits from nothing."""
    if not parent_name(obj):
        return obj
    links = chain(reader, kind, obj)
    merged = {k: copy.deepcopy(v) for k, v in obj.items() if k != "spec"}
    merged["spec"] = merged_spec([_dict(link.obj.get("spec")) for link in links])
    return merged


def chain_names(links: list[Link]) -> list[str]:
    """status.inheritanceChain: the names, root first."""
    return [link.name for link in links]


def inheritance_status(obj: Mapping[str, Any], links: list[Link] | None, error: Exception | None,
                       now: str) -> Obj:
    """The status v1.3's inheritance controller writes: `inheritanceChain` (root first; the last chain that
    resolved is kept while the chain is broken) and the `InheritanceReady` condition, whose time moves only
    when it flips. Other conditions are kept as they are."""
    current = _dict(obj.get("status"))
    generation = _dict(obj.get("metadata")).get("generation", 0)
    if error is None:
        value, reason, message = "True", RESOLVED, RESOLVED_MESSAGE
    else:
        value, reason, message = "False", classify(error), str(error)
    conditions = [c for c in current.get("conditions") or [] if isinstance(c, dict)]
    old = next((c for c in conditions if c.get("type") == INHERITANCE_READY), None)
    moved = old is None or old.get("status") != value
    condition = {"type": INHERITANCE_READY, "status": value, "reason": reason, "message": message,
                 "lastTransitionTime": now if moved else old.get("lastTransitionTime", now),  # type: ignore[union-attr]
                 "observedGeneration": generation}
    out: Obj = {"conditions": [condition if c.get("type") == INHERITANCE_READY else c for c in conditions]}
    if old is None:
        out["conditions"].append(condition)
    chain_now = chain_names(links) if error is None and links is not None else current.get("inheritanceChain")
    if chain_now is not None:
        out["inheritanceChain"] = list(chain_now)
    return out


def classify(error: Exception) -> str:
    """The InheritanceReady reason of a resolution failure: the chain's own, else ResolverError."""
    return error.reason if isinstance(error, InheritanceError) else RESOLVER_ERROR


def descendants(runtimes: list[Link], kind: str, name: str, namespace: str | None) -> list[Link]:
    """Every runtime whose chain may pass through the runtime `kind`/`name`: the ones naming it in
    `ome.io/inherit-from` (ServingRuntimes of its namespace for a ServingRuntime; every ServingRuntime and
    ClusterServingRuntime for a ClusterServingRuntime), then theirs, and so on."""
    found: list[Link] = []
    seen: set[tuple[str, str | None, str]] = {(kind, namespace, name)}
    frontier = [(kind, namespace, name)]
    while frontier:
        p_kind, p_ns, p_name = frontier.pop()
        for link in runtimes:
            ns = _dict(link.obj.get("metadata")).get("namespace")
            key = (link.kind, ns, link.name)
            if key in seen or parent_name(link.obj) != p_name:
                continue
            # A ServingRuntime's parent is only ever in its own namespace or cluster-wide.
            if p_kind == SERVING_RUNTIME and (link.kind != SERVING_RUNTIME or ns != p_ns):
                continue
            seen.add(key)
            found.append(link)
            frontier.append(key)
    return found


def _lookup(reader: Reader, name: str, namespace: str | None) -> Link | None:
    if namespace:
        obj = reader.get_or_none(resources.SERVING_RUNTIMES, name, namespace)
        if obj is not None:
            return Link(SERVING_RUNTIME, obj)
    obj = reader.get_or_none(resources.CLUSTER_SERVING_RUNTIMES, name)
    return Link(CLUSTER_SERVING_RUNTIME, obj) if obj is not None else None


def _without_empty(value: Any) -> Any:
    """A copy without the `[]`, `{}` and `""` values of maps (at any depth), which count as unset."""
    if isinstance(value, Mapping):
        kept = {k: _without_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ([], {}, "")}
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}
