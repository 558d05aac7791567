"""The Node informer the controllers share, and the one transform it caches nodes with.

The shared cache keeps one informer per (kind, namespace, selectors): every controller that reads full
Nodes must ask with the same transform, or the second one to ask fails at start. The slim node keeps what
any of them reads and drops the rest (images, addresses, heartbeat times), so heartbeats cost little:

- AcceleratorClass status: labels and `status.capacity`;
- automatic relocation and the Instance rollout (`NodeUnknown`): the `Ready` condition and its
  `lastTransitionTime`;
- the force-delete escalation: the `Ready` condition and `spec.taints` (`node.kubernetes.io/unreachable`
  with its `timeAdded`).
"""

from __future__ import annotations

from typing import Any, Final

from ome.framework.cache import SharedCache
from ome.framework.informer import Informer
from ome.framework.resources import NODES
from ome.omenative.migration_relocate import ready_condition

Obj = dict[str, Any]
_META: Final = ("name", "uid", "resourceVersion", "labels", "deletionTimestamp")
_CONDITION: Final = ("type", "status", "reason", "lastTransitionTime")


def slim_node(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out: Obj = {"metadata": {k: meta[k] for k in _META if k in meta},
                "status": {"capacity": status.get("capacity") or {}}}
    conditions = [{k: c[k] for k in _CONDITION if k in c} for c in status.get("conditions") or []]
    if conditions:
        out["status"]["conditions"] = conditions
    if spec.get("taints"):
        out["spec"] = {"taints": spec["taints"]}
    return out


def node_informer(cache: SharedCache) -> Informer:
    return cache.informer_for(NODES, transform=slim_node)


def ready_changed(event_type: str, obj: Obj, old: Obj | None) -> bool:
    """A predicate: adds and deletes, and updates that change the `Ready` condition (relocation's evidence);
    label and capacity updates pass over."""
    return event_type != "MODIFIED" or old is None or ready_condition(old) != ready_condition(obj)
