"""Latest-object store with indexes: what an informer knows about one resource.

Only the newest version of each object is kept (not client-go's per-key delta history):
controllers enqueue keys and re-read the cache, so history is never needed (framework.md §3.4).
`replace()` computes the difference against a fresh list, which is how deletions missed while the
watch was down become tombstones carrying the last known object.

Everything here is synchronous and cheap; it runs on the event path for every watch event.
Stored dicts are shared with every reader and must be treated as immutable.

Invariant: for every index, `_indexed[index][key]` lists exactly the values `_index[index]` maps
to `key`, so an update or delete can unindex without calling the index function on the old object.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any, Final

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], list[str]]

NAMESPACE_INDEX: Final = "namespace"
OWNER_INDEX: Final = "owner"


def object_key(obj: Obj) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def resource_version(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def index_by_namespace(obj: Obj) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def index_by_controller_uid(obj: Obj) -> list[str]:
    """UID of the controlling owner (`controller: true`); other owner references are not indexed."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid"):
            return [str(ref["uid"])]
    return []


DEFAULT_INDEXERS: Final[dict[str, IndexFunc]] = {
    NAMESPACE_INDEX: index_by_namespace,
    OWNER_INDEX: index_by_controller_uid,
}


class Store:
    """Objects by key, plus named indexes from a value to the keys that produce it."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = dict(DEFAULT_INDEXERS if indexers is None else indexers)
        # index -> value -> keys (a dict as an insertion-ordered set, for stable list order).
        self._index: dict[str, dict[str, dict[str, None]]] = {name: {} for name in self._indexers}
        # index -> key -> values it was filed under.
        self._indexed: dict[str, dict[str, list[str]]] = {name: {} for name in self._indexers}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def list(self) -> builtins.list[Obj]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    @property
    def indexers(self) -> builtins.list[str]:
        return list(self._indexers)

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index; objects already stored are indexed at once."""
        if name in self._indexers:
            if self._indexers[name] is fn:
                return
            raise ValueError(f"index {name!r} already exists with another function")
        self._indexers[name] = fn
        self._index[name] = {}
        self._indexed[name] = {}
        for key, obj in self._items.items():
            self._index_one(name, key, obj)

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        try:
            keys = self._index[name].get(value, {})
        except KeyError:
            raise KeyError(f"no index {name!r}; known: {sorted(self._index)}") from None
        return [self._items[key] for key in keys]

    def upsert(self, obj: Obj) -> Obj | None:
        """Store `obj` under its key; returns the object it replaced, if any."""
        key = object_key(obj)
        old = self._items.get(key)
        self._items[key] = obj
        if old is not None:
            self._unindex(key)
        for name in self._indexers:
            self._index_one(name, key, obj)
        return old

    def delete(self, key: str) -> Obj | None:
        """Drop the object at `key`; returns it, or None when it was not stored."""
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key)
        return old

    def replace(
        self, objs: Iterable[Obj]
    ) -> tuple[builtins.list[Obj], builtins.list[tuple[Obj, Obj]], builtins.list[Obj]]:
        """Make the store hold exactly `objs`.

        Returns (added, updated as (old, new), deleted). Updated are objects whose resourceVersion
        changed (compared for equality only: RVs are opaque); deleted carry the last stored object.
        """
        added: builtins.list[Obj] = []
        updated: builtins.list[tuple[Obj, Obj]] = []
        seen: set[str] = set()
        for obj in objs:
            key = object_key(obj)
            seen.add(key)
            old = self._items.get(key)
            if old is None:
                added.append(obj)
            elif resource_version(old) != resource_version(obj):
                updated.append((old, obj))
            else:
                continue  # unchanged: keep the stored dict, which readers may already hold
            self.upsert(obj)
        gone = [key for key in self._items if key not in seen]
        deleted = [old for key in gone if (old := self.delete(key)) is not None]
        return added, updated, deleted

    def _index_one(self, name: str, key: str, obj: Obj) -> None:
        values = self._indexers[name](obj)
        if not values:
            return
        self._indexed[name][key] = values
        index = self._index[name]
        for value in values:
            index.setdefault(value, {})[key] = None

    def _unindex(self, key: str) -> None:
        for name, indexed in self._indexed.items():
            values = indexed.pop(key, None)
            if not values:
                continue
            index = self._index[name]
            for value in values:
                keys = index.get(value)
                if keys is not None:
                    keys.pop(key, None)
                    if not keys:
                        del index[value]
