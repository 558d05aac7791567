"""bench/heap_census.py: the census names what holds the memory: each informer store (objects and
indexes), the manager's largest containers, and large buffers by the type of what refers to them."""

from __future__ import annotations

import gc
from types import ModuleType
from typing import Any

from ome.api import resources
from ome.framework.store import Store


class FakeInformer:
    """An informer as the census finds it: a store and a resource (a class under `ome.`)."""

    def __init__(self, store: Store, selector: str) -> None:
        self.store = store
        self.resource = resources.PODS
        self.label_selector = selector


class FakeQueue:
    def __init__(self) -> None:
        self.waiting: dict[str, Any] = {f"key-{i}": {"payload": "x" * 200} for i in range(2000)}
        self.small: list[int] = [1, 2, 3]


class FakeTransport:
    def __init__(self) -> None:
        self.buffer = bytearray(256 * 1024)


for cls in (FakeInformer, FakeQueue, FakeTransport):
    cls.__module__ = "ome.fake"  # the manager's own objects are the classes defined under ome.


def _pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns",
                                                             "labels": {"app": "x" * 100}}}


def test_stores_holders_and_buffers_are_named_and_sized(census: ModuleType) -> None:
    store = Store()
    for i in range(500):
        store.upsert(_pod(i))
    informer, queue, transport = FakeInformer(store, "ome.io/x"), FakeQueue(), FakeTransport()
    result = census.census(gc.get_objects(), min_bytes=16 * 1024)
    stores = [s for s in result["stores"] if s["store"] == "pods ome.io/x"]
    assert len(stores) == 1 and stores[0]["objects"] == 500
    assert stores[0]["kib"] >= 500 * 0.5  # each pod is well over half a KiB deep
    assert stores[0]["index_kib"] > 0  # the namespace index
    holders = {h["holder"]: h for h in result["holders"]}
    waiting = holders["ome.fake.FakeQueue.waiting"]
    assert waiting["entries"] == 2000 and waiting["kib"] >= 2000 * 200 // 1024
    assert "ome.fake.FakeQueue.small" not in holders  # under min_bytes
    # A store's items are counted once: in the store, not again as its informer's or store's holder.
    assert not any(h.startswith(("ome.fake.FakeInformer", "ome.framework.store.Store")) for h in holders)
    buffers = {b["holder"]: b for b in result["buffers"]}
    assert buffers["ome.fake.FakeTransport > bytearray"]["kib"] >= 256
    text = census.format_census(result)
    assert "pods ome.io/x" in text and "ome.fake.FakeQueue.waiting" in text
    assert "ome.fake.FakeTransport > bytearray" in text
    del informer, queue, transport


def test_deep_size_counts_each_object_once_and_stops_at_the_managers_own(census: ModuleType) -> None:
    shared = ["y" * 1000]
    seen: set[int] = set()
    first = census.deep_size({"a": shared}, seen)
    assert first >= 1000
    assert census.deep_size({"b": shared}, seen) < 1000  # the shared list is counted already
    queue = FakeQueue()
    assert census.deep_size({"q": queue}, set()) < 1000  # not entered: its attributes are its own
    assert census.deep_size(queue, set()) >= 2000 * 200  # entered as the root
