"""Wiring of the AcceleratorClass status controller.

Nodes are cached slim (ome/controllers/node_view.py: labels and capacity here), so heartbeats cost little, and
a node event wakes a class only when its labels or capacity changed; it then wakes every class (a cluster
has a handful). The node informer is a full one: the model status controller reads its labels as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ome.api.resources import ACCELERATOR_CLASSES
from ome.controllers.acceleratorclass.reconciler import AcceleratorClassStatusReconciler
from ome.controllers.node_view import node_informer, slim_node
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request

Obj = dict[str, Any]
NAME: Final = "acceleratorclass"


def _matching_fields(node: Obj) -> Any:
    return (node["metadata"].get("labels"), node["status"].get("capacity"))


def _labels_or_capacity_changed(event_type: str, obj: Obj, old: Obj | None) -> bool:
    return old is None or _matching_fields(obj) != _matching_fields(old)


def add_to_manager(manager: Manager) -> Controller:
    cache = manager.cache
    classes = cache.informer_for(ACCELERATOR_CLASSES)
    nodes = node_informer(cache)  # shared with relocation, force deletion and the rollout (one transform)
    controller = Controller(NAME, AcceleratorClassStatusReconciler(cache, manager.client, nodes.list))

    def every_class(_node: Obj) -> Iterable[Request]:
        return [Request("", c["metadata"]["name"]) for c in classes.list()]

    controller.for_(classes)
    controller.watches(nodes, every_class, _labels_or_capacity_changed)
    manager.add_controller(controller)
    return controller


__all__ = ["NAME", "add_to_manager", "slim_node"]
