"""The shared slim Node informer (ome/controllers/node_view.py): every controller that reads Nodes gets the
same informer, so the manager starts whatever the order of registration, and the slim node keeps what
relocation, force deletion, the rollout and AcceleratorClass status read."""

from __future__ import annotations

from typing import Any

from ome.controllers.node_view import node_informer, ready_changed, slim_node
from ome.framework.cache import SharedCache
from ome.framework.resources import NODES
from ome.omenative import force_delete, migration_relocate
from ome.omenative.rollout_pods import node_unknown
from tests.unit.omenative.test_migration_relocate import NOW

Obj = dict[str, Any]

NODE: Obj = {
    "metadata": {"name": "gpu-node-1", "uid": "u", "resourceVersion": "9", "labels": {"a": "1"},
                 "annotations": {"big": "x" * 100}, "managedFields": [{}]},
    "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                         "timeAdded": "2026-09-28T09:00:00Z"}], "podCIDR": "10.0.0.0/24"},
    "status": {"capacity": {"nvidia.com/gpu": "8"}, "images": [{"names": ["img"]}],
               "conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                               "lastTransitionTime": "2026-09-28T09:00:00Z",
                               "lastHeartbeatTime": "2026-09-28T09:59:00Z"}]},
}


def test_the_slim_node_keeps_what_each_reader_reads() -> None:
    slim = slim_node(NODE)
    assert slim["metadata"] == {"name": "gpu-node-1", "uid": "u", "resourceVersion": "9", "labels": {"a": "1"}}
    assert slim["status"]["capacity"] == {"nvidia.com/gpu": "8"} and "images" not in slim["status"]
    assert "lastHeartbeatTime" not in slim["status"]["conditions"][0]
    # the readers decide the same on the slim node as on the full one
    assert migration_relocate.dead(slim, NOW, 300) == migration_relocate.dead(NODE, NOW, 300) is True
    assert node_unknown(slim) == node_unknown(NODE) is True
    settings = force_delete.Settings(60.0, 300.0)
    assert force_delete.evidence(slim, NOW, settings.node_unreachable_threshold) == \
        force_delete.evidence(NODE, NOW, settings.node_unreachable_threshold)


def test_every_reader_shares_one_node_informer() -> None:
    from ome.controllers.acceleratorclass.setup import slim_node as acceleratorclass_slim

    cache = SharedCache.__new__(SharedCache)
    assert acceleratorclass_slim is slim_node
    calls: list[Any] = []

    def informer_for(res: Any, **kw: Any) -> str:
        calls.append((res, kw))
        return "informer"

    cache.informer_for = informer_for  # type: ignore[method-assign]
    assert node_informer(cache) == "informer"
    assert calls == [(NODES, {"transform": slim_node})]


def test_relocation_hears_of_a_node_when_its_ready_condition_changes_or_it_comes_and_goes() -> None:
    node = slim_node(NODE)
    relabelled = {**node, "metadata": {**node["metadata"], "labels": {"a": "2"}}}
    ready = {**node, "status": {"conditions": [{"type": "Ready", "status": "True",
                                                "lastTransitionTime": "2026-09-28T10:00:00Z"}]}}
    assert ready_changed("ADDED", node, None) and ready_changed("DELETED", node, None)
    assert ready_changed("MODIFIED", ready, node) and ready_changed("MODIFIED", node, ready)
    assert not ready_changed("MODIFIED", relabelled, node)
    assert not ready_changed("MODIFIED", node, node)  # a heartbeat, once slimmed
