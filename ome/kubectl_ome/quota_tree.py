"""The AcceleratorQuota tree as its specs declare it (pure): each node's place under `root`, and the
problems `quota tree` and `quota validate` report.

Nodes print in the order of their path from `root` compared as text, so with siblings `ml` and
`ml-ops` the children of `ml` print after `ml-ops`'s subtree (`-` sorts before `/`): the documented
known bug, kept so the output matches v1.3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from ome.resolution.accelerators import quantity

Obj = dict[str, Any]

ROOT: Final = "root"
COHORT: Final = "Cohort"
CLUSTER_QUEUE: Final = "ClusterQueue"
NOT_CONFIGURED: Final = "Unavailable/NotConfigured"


@dataclass(slots=True)
class Node:
    name: str
    role: str
    parent: str | None
    generation: int
    budgets: list[Obj]
    priority_tier: str | None = None
    distribution: str | None = None
    path: str | None = None
    depth: int = -1

    @property
    def resolved(self) -> bool:
        return self.path is not None


@dataclass(slots=True)
class Tree:
    nodes: dict[str, Node] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(node, reason), in the order they were found, each pair once."""

    def problem(self, node: str, reason: str) -> None:
        if (node, reason) not in self.problems:
            self.problems.append((node, reason))

    def ordered(self) -> list[Node]:
        """Resolved nodes by path (as text), then the unresolved ones by name."""
        resolved = sorted((n for n in self.nodes.values() if n.resolved), key=lambda n: str(n.path))
        return resolved + sorted((n for n in self.nodes.values() if not n.resolved), key=lambda n: n.name)


def node_of(obj: Mapping[str, Any]) -> Node:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    parent = (spec.get("parentRef") or {}).get("name")
    return Node(
        name=str(meta.get("name") or ""),
        role=str(spec.get("role") or ""),
        parent=str(parent) if parent else None,
        generation=int(meta.get("generation") or 0),
        budgets=[b for b in spec.get("budgets") or [] if isinstance(b, dict)],
        priority_tier=spec.get("priorityTier"),
        distribution=(spec.get("distribution") or {}).get("policy"),
    )


def _amount(value: object) -> Decimal | None:
    got = quantity(value)
    return got if got is not None and got >= 0 else None


def build(objects: Sequence[Mapping[str, Any]]) -> Tree:
    tree = Tree({n.name: n for n in (node_of(o) for o in objects)})
    root = tree.nodes.get(ROOT)
    if root is None:
        tree.problem(ROOT, "RootMissing")
    else:
        if root.parent:
            tree.problem(ROOT, "RootHasParent")
        if root.role != COHORT:
            tree.problem(ROOT, "RootRoleInvalid")
        root.path, root.depth = "/root", 0
    for node in sorted(tree.nodes.values(), key=lambda n: n.name):
        if node.name != ROOT:
            _place(tree, node)
    for node in tree.nodes.values():
        parent = tree.nodes.get(node.parent or "")
        if node.name != ROOT and parent is not None and parent.role == CLUSTER_QUEUE:
            tree.problem(node.name, "NodeKindInvalid")
        for budget in node.budgets:
            for key in ("nominal", "borrowingLimit", "lendingLimit"):
                if (key == "nominal" or key in budget) and _amount(budget.get(key)) is None:
                    tree.problem(node.name, "BudgetInvalid")
    _containment(tree)
    return tree


def _place(tree: Tree, node: Node) -> None:
    """Walks up from `node` to `root`, recording its path, or why it can't be placed."""
    chain, seen, current = [node], {node.name}, node
    while True:
        if current.resolved:
            break
        if not current.parent or current.parent not in tree.nodes:
            tree.problem(current.name, "ParentMissing")
            _unreachable(tree, chain[:-1])
            return
        if current.parent in seen:
            for member in chain[chain.index(tree.nodes[current.parent]) :]:
                tree.problem(member.name, "ParentCycle")
            _unreachable(tree, chain[: chain.index(tree.nodes[current.parent])])
            return
        current = tree.nodes[current.parent]
        if current.name == ROOT and not current.resolved:
            _unreachable(tree, chain)
            return
        seen.add(current.name)
        chain.append(current)
    for below in reversed(chain[:-1]):
        parent = tree.nodes[str(below.parent)]
        below.path, below.depth = f"{parent.path}/{below.name}", parent.depth + 1


def _unreachable(tree: Tree, nodes: Sequence[Node]) -> None:
    for node in nodes:
        tree.problem(node.name, "Unreachable")


def _containment(tree: Tree) -> None:
    children: dict[str, list[Node]] = {}
    for node in tree.nodes.values():
        if node.parent:
            children.setdefault(node.parent, []).append(node)
    for name, kids in sorted(children.items()):
        owner = tree.nodes.get(name)
        if owner is None:
            continue
        for budget in owner.budgets:
            own = _amount(budget.get("nominal"))
            key = (budget.get("resourceName"), budget.get("resourceFlavor"))
            total = sum(
                (
                    _amount(b.get("nominal")) or Decimal(0)
                    for kid in kids
                    for b in kid.budgets
                    if (b.get("resourceName"), b.get("resourceFlavor")) == key
                ),
                Decimal(0),
            )
            if own is not None and total > own:
                tree.problem(name, "ContainmentViolated")


def selection(tree: Tree, target: str) -> set[str]:
    """`target`, its ancestors and its descendants."""
    keep = {target}
    current = tree.nodes.get(target)
    while current is not None and current.parent and current.parent not in keep:
        keep.add(current.parent)
        current = tree.nodes.get(current.parent)
    keep |= {n.name for n in tree.nodes.values() if _below(tree, n, target)}
    return keep


def _below(tree: Tree, node: Node, target: str) -> bool:
    seen: set[str] = set()
    current: Node | None = node
    while current is not None and current.name not in seen:
        if current.parent == target:
            return True
        seen.add(current.name)
        current = tree.nodes.get(current.parent or "")
    return False


def budget_entry(budget: Mapping[str, Any], node: Node) -> Obj:
    entry: Obj = {
        "resourceName": budget.get("resourceName"),
        "resourceFlavor": budget.get("resourceFlavor"),
        "nominal": str(budget.get("nominal")),
    }
    for key in ("borrowingLimit", "lendingLimit"):
        if key in budget:
            entry[key] = str(budget[key])
    policy = budget.get("policy") or node.distribution
    entry["policy"] = policy or NOT_CONFIGURED
    entry["policySource"] = (
        "Budget" if budget.get("policy") else "Distribution" if node.distribution else NOT_CONFIGURED
    )
    entry["perCluster"] = [
        {"cluster": s.get("cluster"), "nominal": str(s.get("nominal"))}
        for s in budget.get("perCluster") or []
        if isinstance(s, Mapping)
    ]
    entry["evidence"] = "Declared"
    return entry


def node_entry(node: Node, selected: bool) -> Obj:
    entry: Obj = {"name": node.name, "role": node.role}
    if node.role == CLUSTER_QUEUE:
        entry["tenant"] = node.name
    if node.parent:
        entry["parentName"] = node.parent
    if node.path:
        entry["computedPath"] = node.path
    entry.update(
        {
            "depth": node.depth,
            "selected": selected,
            "position": "Resolved" if node.resolved else "Unresolved",
            "topologyEvidence": "Declared",
            "positionEvidence": "Computed",
            "distribution": node.distribution or NOT_CONFIGURED,
        }
    )
    if node.priority_tier:
        entry["priorityTier"] = node.priority_tier
    entry["budgets"] = [budget_entry(b, node) for b in node.budgets]
    return entry


def node_lines(tree: Tree, keep: set[str] | None) -> list[str]:
    lines = []
    for node in tree.ordered():
        if keep is not None and node.name not in keep:
            continue
        indent = "  " * max(node.depth, 0)
        head = f"{indent}{node.name} [{node.role}]"
        if node.role == CLUSTER_QUEUE:
            head += f" tenant={node.name}"
        if not node.resolved:
            head += " (unresolved)"
        lines.append(head)
        for budget in node.budgets:
            lines.append(
                f"{indent}  budget {budget.get('resourceName')}/{budget.get('resourceFlavor')}="
                f"{budget.get('nominal')} (Declared)"
            )
    lines += [f"! {node}: {reason} (Computed; whole snapshot)" for node, reason in tree.problems]
    return lines
