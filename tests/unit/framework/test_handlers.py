from __future__ import annotations

from typing import Any

import pytest

from ome.framework import handlers
from ome.framework.handlers import EventType, Obj
from ome.framework.reconcile import Request


class ListQueue:
    def __init__(self) -> None:
        self.items: list[Request] = []

    def add(self, item: Request) -> None:
        self.items.append(item)


def pod(name: str = "pod-1", namespace: str = "ns", owners: list[dict[str, Any]] | None = None) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def ref(name: str, *, kind: str = "InferenceService", api_version: str = "ome.io/v1beta1",
        controller: bool | None = True) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}
    if controller is not None:
        out["controller"] = controller
    return out


def run(handler: handlers.Handler, event: EventType, obj: Obj, old: Obj | None = None) -> list[Request]:
    queue = ListQueue()
    handler(event, obj, old, queue)
    return queue.items


@pytest.mark.parametrize("event", ["ADDED", "MODIFIED", "DELETED"])
def test_enqueue_for_object_uses_the_object_key(event: EventType) -> None:
    assert run(handlers.enqueue_for_object, event, pod(), pod()) == [Request("ns", "pod-1")]


def test_enqueue_for_object_cluster_scoped_has_empty_namespace() -> None:
    node = {"metadata": {"name": "node-a"}}
    assert run(handlers.enqueue_for_object, "ADDED", node) == [Request("", "node-a")]


OWNER = handlers.enqueue_for_owner("ome.io", "InferenceService")


@pytest.mark.parametrize(
    ("owners", "expected"),
    [
        ([ref("llm")], [Request("ns", "llm")]),
        ([ref("other", controller=False), ref("llm")], [Request("ns", "llm")]),
        ([ref("llm", controller=None)], []),
        ([ref("llm", controller=False)], []),
        ([ref("llm", kind="ServingRuntime")], []),
        ([ref("llm", api_version="other.io/v1beta1")], []),
        ([ref("llm", api_version="ome.io/v2")], [Request("ns", "llm")]),
        ([ref("rs", kind="ReplicaSet", api_version="apps/v1"), ref("llm", controller=False)], []),
        (None, []),
    ],
    ids=[
        "controller",
        "skips-non-controller",
        "no-flag",
        "not-controller",
        "kind-differs",
        "group-differs",
        "any-version",
        "controller-is-someone-else",
        "no-owners",
    ],
)
def test_enqueue_for_owner_uses_the_matching_controller_reference(
    owners: list[dict[str, Any]] | None, expected: list[Request]
) -> None:
    assert run(OWNER, "ADDED", pod(owners=owners)) == expected


def test_enqueue_for_owner_on_delete_uses_the_final_object() -> None:
    assert run(OWNER, "DELETED", pod(owners=[ref("llm")])) == [Request("ns", "llm")]


def test_enqueue_for_owner_on_update_wakes_old_and_new_owner_once_each() -> None:
    old, new = pod(owners=[ref("before")]), pod(owners=[ref("after")])
    assert run(OWNER, "MODIFIED", new, old) == [Request("ns", "after"), Request("ns", "before")]
    same = pod(owners=[ref("llm")])
    assert run(OWNER, "MODIFIED", same, same) == [Request("ns", "llm")]


def test_enqueue_for_owner_core_group_and_cluster_scoped_owner() -> None:
    handler = handlers.enqueue_for_owner("", "Node", owner_namespaced=False)
    child = pod(owners=[ref("node-a", kind="Node", api_version="v1")])
    assert run(handler, "ADDED", child) == [Request("", "node-a")]


def test_enqueue_mapped_maps_old_and_new_and_dedupes() -> None:
    def by_label(obj: Obj) -> list[Request]:
        model = obj["metadata"].get("labels", {}).get("model")
        return [Request("ns", model), Request("ns", "always")] if model else []

    old, new = pod(), pod()
    old["metadata"]["labels"] = {"model": "a"}
    new["metadata"]["labels"] = {"model": "b"}
    got = run(handlers.enqueue_mapped(by_label), "MODIFIED", new, old)
    assert sorted(got, key=str) == [Request("ns", "a"), Request("ns", "always"), Request("ns", "b")]
    assert run(handlers.enqueue_mapped(by_label), "ADDED", pod()) == []


def test_enqueue_mapped_skips_while_the_mapped_kind_is_still_syncing() -> None:
    from ome.framework.cache import NotSyncedError

    def not_synced(obj: Obj) -> list[Request]:
        raise NotSyncedError("informer for inferenceservices.ome.io has not synced yet")

    assert run(handlers.enqueue_mapped(not_synced), "ADDED", pod()) == []
