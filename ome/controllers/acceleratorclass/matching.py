"""Which nodes match an AcceleratorClass, and the status that follows (pure: no I/O).

As documented for v1.3 (accelerator-classes.md, "How OME finds matching nodes"): a node matches when it
carries every `discovery.nodeSelector` label with the same value and its capacity lists every resource of
`resources` above zero; a class that sets neither matches every node. `discovery.affinity` and the
resource quantity play no part, and nor do the node's readiness, cordon or free GPUs.

The status holds `nodes` (sorted names), `availableNodes` (their count, the NODES column) and
`lastUpdated` (when the list last changed). With no matching node the first two are left unset, so the
column is blank; `totalAccelerators`, `availableAccelerators` and `conditions` are never written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ome.resolution.accelerators import quantity

Obj = dict[str, Any]


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def node_matches(spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    labels = _dict(_dict(node.get("metadata")).get("labels"))
    selector = _dict(_dict(spec.get("discovery")).get("nodeSelector"))
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    capacity = _dict(_dict(node.get("status")).get("capacity"))
    for resource in spec.get("resources") or []:
        name = _dict(resource).get("name")
        amount = quantity(capacity.get(name)) if name else None
        if amount is None or amount <= 0:
            return False
    return True


def matching_nodes(accelerator_class: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    spec = _dict(accelerator_class.get("spec"))
    return sorted(_dict(n.get("metadata")).get("name", "") for n in nodes if node_matches(spec, n))


def status_patch(old_status: Mapping[str, Any] | None, names: list[str], now: str) -> Obj | None:
    """The merge patch of `status`, or None when the stored status already says this (no write)."""
    old = _dict(old_status)
    count = len(names) or None
    if (old.get("nodes") or []) == names and old.get("availableNodes") == count:
        return None
    # null removes a key in a merge patch: zero nodes leave both fields unset (a blank NODES column).
    return {"nodes": names or None, "availableNodes": count, "lastUpdated": now}


__all__ = ["matching_nodes", "node_matches", "status_patch"]
