"""store.Store: latest object per key, indexes kept in step, replace() computes tombstones."""

from __future__ import annotations

from typing import Any

import pytest

from ome.framework.store import NAMESPACE_INDEX, OWNER_INDEX, Store, object_key

Obj = dict[str, Any]


def pod(name: str, ns: str = "a", rv: str = "1", owner: str | None = None, **labels: str) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [
            {"uid": "not-controller", "controller": False},
            {"uid": owner, "controller": True},
        ]
    return {"metadata": meta}


def names(objs: list[Obj]) -> list[str]:
    return [object_key(o) for o in objs]


def test_key_is_namespace_slash_name_or_name() -> None:
    assert object_key(pod("p", "ns")) == "ns/p"
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"


def test_upsert_returns_the_replaced_object() -> None:
    store = Store()
    first, second = pod("p", rv="1"), pod("p", rv="2")
    assert store.upsert(first) is None
    assert store.upsert(second) is first
    assert store.get("a/p") is second
    assert len(store) == 1


def test_namespace_and_controller_owner_indexes() -> None:
    store = Store()
    store.upsert(pod("p1", "a", owner="u1"))
    store.upsert(pod("p2", "b", owner="u1"))
    store.upsert(pod("p3", "a"))
    assert names(store.by_index(NAMESPACE_INDEX, "a")) == ["a/p1", "a/p3"]
    assert names(store.by_index(OWNER_INDEX, "u1")) == ["a/p1", "b/p2"]
    assert store.by_index(OWNER_INDEX, "not-controller") == []


def test_update_moves_the_object_between_index_values() -> None:
    store = Store()
    store.upsert(pod("p", owner="u1"))
    store.upsert(pod("p", rv="2", owner="u2"))
    assert store.by_index(OWNER_INDEX, "u1") == []
    assert names(store.by_index(OWNER_INDEX, "u2")) == ["a/p"]


def test_delete_unindexes() -> None:
    store = Store()
    obj = pod("p", owner="u1")
    store.upsert(obj)
    assert store.delete("a/p") is obj
    assert store.delete("a/p") is None
    assert store.by_index(OWNER_INDEX, "u1") == []
    assert store.by_index(NAMESPACE_INDEX, "a") == []


def test_custom_indexer_covers_objects_added_before_and_after() -> None:
    store = Store()
    store.upsert(pod("p1", app="x"))
    store.add_indexer(
        "app", lambda o: [o["metadata"]["labels"]["app"]] if "app" in o["metadata"]["labels"] else []
    )
    store.upsert(pod("p2", app="x"))
    store.upsert(pod("p3", app="y"))
    assert names(store.by_index("app", "x")) == ["a/p1", "a/p2"]


def test_add_indexer_twice_with_another_function_fails() -> None:
    store = Store()

    def fn(o: Obj) -> list[str]:
        return []

    store.add_indexer("i", fn)
    store.add_indexer("i", fn)
    with pytest.raises(ValueError, match="already exists"):
        store.add_indexer("i", lambda o: [])


def test_unknown_index_fails_loudly() -> None:
    with pytest.raises(KeyError, match="no index 'nope'"):
        Store().by_index("nope", "x")


def test_replace_reports_added_updated_and_tombstones() -> None:
    store = Store()
    kept, changed, gone = pod("kept", rv="1"), pod("changed", rv="1"), pod("gone", rv="1", owner="u")
    for obj in (kept, changed, gone):
        store.upsert(obj)
    new_changed, new = pod("changed", rv="5"), pod("new", rv="6")

    added, updated, deleted = store.replace([pod("kept", rv="1"), new_changed, new])

    assert added == [new]
    assert updated == [(changed, new_changed)]
    assert deleted == [gone]  # the tombstone carries the last known object
    assert sorted(store.keys()) == ["a/changed", "a/kept", "a/new"]
    assert store.get("a/kept") is kept  # unchanged RV: readers keep seeing the same dict
    assert store.by_index(OWNER_INDEX, "u") == []


def test_replace_with_nothing_empties_the_store() -> None:
    store = Store()
    store.upsert(pod("p"))
    assert store.replace([]) == ([], [], [pod("p")])
    assert len(store) == 0
