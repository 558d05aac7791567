"""`runtime tree` (pure): a runtime's inheritance chain, the runtimes that inherit from it, and the
InferenceServices that name them, projected from complete runtime lists.

Each path ends at a head (the target or a runtime inheriting from it) and prints root first, each
runtime under its parent after `` `-- `` and four more spaces; the head's users follow one level
deeper. Heads group into contexts: `Cluster` for ClusterServingRuntimes, `Namespaced/<ns>` for the
ServingRuntimes of one namespace (whose lines leave out the namespace).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.api import resources
from ome.kubectl_ome import snapshot
from ome.resolution import runtime_inheritance as ri
from ome.resolution.runtime_inheritance import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, Link

Obj = dict[str, Any]

WIDTH: Final = 80
ISSUE_CODES: Final = {
    ri.PARENT_NOT_FOUND: "ParentMissing",
    ri.INHERITANCE_CYCLE: "CycleDetected",
    ri.MAX_DEPTH_EXCEEDED: "MaxDepthExceeded",
}


class SnapshotReader:
    """runtime_inheritance.Reader over listed runtimes."""

    def __init__(self, cluster: Sequence[Obj], local: Sequence[Obj]) -> None:
        self.cluster = {str((o.get("metadata") or {}).get("name")): o for o in cluster}
        self.local = {
            (str((o.get("metadata") or {}).get("namespace")), str((o.get("metadata") or {}).get("name"))): o
            for o in local
        }

    def get_or_none(self, res: resources.Resource, name: str, namespace: str | None = None) -> Obj | None:
        if res.namespaced:
            return self.local.get((str(namespace), name))
        return self.cluster.get(name)


@dataclass(frozen=True, slots=True)
class Collection:
    kind: str
    scope: str
    status: str
    pages: int
    items: int

    def line(self) -> str:
        return (
            f"Collection: {self.kind} scope={self.scope} status={self.status} pages={self.pages} "
            f"items={self.items}"
        )


@dataclass(slots=True)
class Head:
    link: Link
    chain: list[Link]
    users: list[str]
    issue: tuple[str, str, str, list[str]] | None = None
    """(code, subject, parent, path)."""


@dataclass(slots=True)
class Tree:
    target: Link
    contexts: list[tuple[str, list[Head]]] = field(default_factory=list)
    unattributed: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    """(namespace/name, state, reason, declared runtime)."""


def _ns(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def ref(link: Link, namespaced_context: bool) -> str:
    if link.kind == SERVING_RUNTIME and not namespaced_context:
        return f"ServingRuntime/{_ns(link.obj)}/{link.name}"
    return f"{link.kind}/{link.name}"


def resolves_to(isvc: Mapping[str, Any], link: Link, reader: SnapshotReader) -> bool:
    """Whether spec.runtime names this runtime, in the documented lookup order."""
    declared = (isvc.get("spec") or {}).get("runtime") or {}
    if declared.get("name") != link.name:
        return False
    ns = _ns(isvc)
    local = reader.get_or_none(resources.SERVING_RUNTIMES, link.name, ns)
    kind = declared.get("kind")
    if link.kind == SERVING_RUNTIME:
        if ns != _ns(link.obj):
            return False
        if kind == SERVING_RUNTIME or kind is None:
            return True
        return kind == CLUSTER_SERVING_RUNTIME and link.name not in reader.cluster
    if kind == SERVING_RUNTIME:
        return False
    if kind == CLUSTER_SERVING_RUNTIME:
        return True
    return local is None


def _head(link: Link, reader: SnapshotReader, isvcs: Sequence[Mapping[str, Any]], namespaced: bool) -> Head:
    users = sorted(
        (f"{_ns(i)}/{_name(i)}" for i in isvcs if resolves_to(i, link, reader)),
    )
    if namespaced:
        users = [u.split("/", 1)[1] for u in users]
    try:
        chain = ri.chain(reader, link.kind, link.obj)
    except ri.InheritanceError as exc:
        return Head(link, [link], users, _issue(link, reader, exc.reason))
    return Head(link, chain, users)


def _issue(link: Link, reader: SnapshotReader, reason: str) -> tuple[str, str, str, list[str]]:
    """Walks the chain to the runtime whose parent breaks it."""
    path = [link]
    scope = _ns(link.obj) if link.kind == SERVING_RUNTIME else None
    while True:
        current = path[-1]
        parent = ri.parent_name(current.obj)
        names = [p.name for p in path]
        found = ri._lookup(reader, parent, scope if current.kind == SERVING_RUNTIME else None)
        if found is None or parent in names or len(path) >= ri.MAX_DEPTH:
            shown = [f"{p.kind}/{p.name}" for p in path] + [parent]
            return ISSUE_CODES.get(reason, reason), f"{current.kind}/{current.name}", parent, shown
        path.append(found)


def build(
    target: Link, cluster: Sequence[Obj], local: Sequence[Obj], isvcs: Sequence[Mapping[str, Any]]
) -> Tree:
    reader = SnapshotReader(cluster, local)
    links = [Link(CLUSTER_SERVING_RUNTIME, o) for o in cluster] + [Link(SERVING_RUNTIME, o) for o in local]
    target_ns = _ns(target.obj) if target.kind == SERVING_RUNTIME else None
    below = ri.descendants(links, target.kind, target.name, target_ns)
    tree = Tree(target)
    heads = [target, *below]
    cluster_heads = [h for h in heads if h.kind == CLUSTER_SERVING_RUNTIME]
    if cluster_heads:
        tree.contexts.append(
            ("Cluster", [_head(h, reader, isvcs, False) for h in sorted(cluster_heads, key=lambda h: h.name)])
        )
    namespaces = sorted({_ns(h.obj) for h in heads if h.kind == SERVING_RUNTIME})
    for ns in namespaces:
        ns_heads = sorted(
            (h for h in heads if h.kind == SERVING_RUNTIME and _ns(h.obj) == ns), key=lambda h: h.name
        )
        tree.contexts.append((f"Namespaced/{ns}", [_head(h, reader, isvcs, True) for h in ns_heads]))
    seen: set[str] = set()
    for isvc in sorted(isvcs, key=lambda i: (_ns(i), _name(i))):
        key = f"{_ns(isvc)}/{_name(isvc)}"
        if key in seen:
            tree.unattributed.append((key, "Ambiguous", "DuplicateInferenceService", None))
            continue
        seen.add(key)
        declared = ((isvc.get("spec") or {}).get("runtime") or {}).get("name")
        if not declared:
            tree.unattributed.append((key, "Unresolved", "AutomaticSelection", None))
        elif not snapshot.valid_name(declared):
            tree.unattributed.append((key, "Invalid", "InvalidRuntimeName", None))
        elif reader.get_or_none(resources.SERVING_RUNTIMES, declared, _ns(isvc)) is None and (
            declared not in reader.cluster
        ):
            tree.unattributed.append((key, "Unresolved", "RuntimeNotFound", str(declared)))
    return tree


def _wrap(line: str) -> list[str]:
    """A Collection: or Issue: line over 80 columns continues on an indented line."""
    if len(line) <= WIDTH:
        return [line]
    for marker in (" status=", " parent=", " -> "):
        at = line.find(marker)
        if 0 < at:
            return [line[:at], "  " + line[at + 1 :]]
    return [line]


def lines(
    tree: Tree,
    collections: Sequence[Collection],
    complete_users: bool,
    *,
    show_unattributed: bool,
    wrap: bool = True,
) -> list[str]:
    target_ref = ref(tree.target, False)
    out = ["RUNTIME TREE", f"Target: {target_ref}"]
    for context, heads in tree.contexts:
        namespaced = context.startswith("Namespaced/")
        out.append(f"Context: {context} (resolution: Complete)")
        for head in heads:
            out.append(f"Head: {ref(head.link, namespaced)}")
            if head.issue is not None:
                code, subject, parent, path = head.issue
                out += (
                    _wrap(f"Issue: {code} subject={subject} parent={parent}")
                    if wrap
                    else [f"Issue: {code} subject={subject} parent={parent}"]
                )
                out.append("Issue path: " + " -> ".join(path))
            for depth, link in enumerate(head.chain):
                text = ref(link, namespaced)
                if (
                    link.kind == tree.target.kind
                    and link.name == tree.target.name
                    and (link.kind == CLUSTER_SERVING_RUNTIME or _ns(link.obj) == _ns(tree.target.obj))
                ):
                    text += " [selected]"
                out.append(text if depth == 0 else " " * (4 * (depth - 1)) + "`-- " + text)
            indent = " " * (4 * (len(head.chain) - 1))
            for i, user in enumerate(head.users):
                out.append(
                    indent + ("`-- " if i == len(head.users) - 1 else "|-- ") + f"InferenceService/{user}"
                )
    if show_unattributed:
        out.append("Unattributed users (not attributed to runtime tree):")
        if not tree.unattributed:
            out.append("  none observed")
        for key, state, reason, declared in tree.unattributed:
            out += [f"  [not attributed] InferenceService/{key}", f"  state={state} reason={reason}"]
            if declared:
                out.append(f"  declared runtime={declared}")
    out.append(f"Snapshot: {'Complete' if complete_users else 'Partial'}")
    for collection in collections:
        out += _wrap(collection.line()) if wrap else [collection.line()]
    if not complete_users:
        out += ["Warning: PartialData", "Warning: SourceUnavailable"]
    return out


def document_content(tree: Tree, collections: Sequence[Collection], complete_users: bool) -> Obj:
    return {
        "target": ref(tree.target, False),
        "contexts": [
            {
                "context": context,
                "resolution": "Complete",
                "heads": [
                    {
                        "head": ref(h.link, False),
                        "chain": [ref(link, False) for link in h.chain],
                        "users": list(h.users),
                        **(
                            {
                                "issue": {
                                    "code": h.issue[0],
                                    "subject": h.issue[1],
                                    "parent": h.issue[2],
                                    "path": h.issue[3],
                                }
                            }
                            if h.issue
                            else {}
                        ),
                    }
                    for h in heads
                ],
            }
            for context, heads in tree.contexts
        ],
        "unattributed": [
            {"inferenceService": k, "state": s, "reason": r, **({"declaredRuntime": d} if d else {})}
            for k, s, r, d in tree.unattributed
        ],
        "snapshot": "Complete" if complete_users else "Partial",
        "collections": [
            {"kind": c.kind, "scope": c.scope, "status": c.status, "pages": c.pages, "items": c.items}
            for c in collections
        ],
    }
