"""The fields a request body sets, as a tree, and whether one body sets every field another one set (pure).

post_creates.py asks this before the first apply of an object it created by POST: if the apply body sets
every field the POST body set, the apply drops nothing the POST's `Update` entry still owns, and the move
of that entry to the `Apply` entry (a read and a write before the apply) can wait for an apply that would
drop something. The POST's entry also owns the defaults the apiserver filled in; those are not in either
body and stay as they are, which is what the move followed by an apply would leave as well (a dropped
default is defaulted again).

The tree must never claim more coverage than server-side apply gives, so lists are read conservatively:

- a list of objects is keyed per item by the list's known merge key (`containers`, `initContainers`,
  `ephemeralContainers` and `env`: `name`, as Kubernetes declares them) or else by *all* the item's scalar
  fields. Server-side apply keys an associative list by some of an item's scalar fields, so keying by all
  of them can only tell two items apart that it would merge (a changed port name: not covered, the move is
  made), never merge two it keeps apart;
- a list of scalars is a set of its values (a set list owns each member; an atomic one is replaced whole,
  so the per-member check is only stricter), except `args` and `command`, atomic in every Kubernetes type,
  whose presence covers them;
- anything else in a list (a list of lists, mixed items) is a member by its whole value.

`metadata.ownerReferences` is left out of the tree: its items carry the owner's uid, so with it no two
objects would share a tree (post_creates.py checks the references against the cached object instead).
Trees are interned: the children of one kind and runtime have the same tree, so thousands of objects
hold a few.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

Tree = dict[str, Any]
"""`f:<field>` -> its tree, `k:<json>` -> a list item's tree, `v:<json>` -> {} (a set member); {} a leaf.
Treated as immutable once built: interned trees are shared."""

ATOMIC_LISTS: Final = frozenset({"args", "command"})
LIST_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
}
SKIPPED: Final = frozenset({"status"})
"""Top-level fields not compared: status is not applied."""
METADATA_SKIPPED: Final = frozenset(
    {"ownerReferences", "resourceVersion", "managedFields", "uid", "generation", "creationTimestamp"}
)
"""Metadata not compared: the owner references (above) and what the apiserver sets."""

_SCALARS: Final = (str, int, float, bool)


def tree(body: Mapping[str, Any]) -> Tree:
    """The fields `body` sets (None values set nothing)."""
    out: Tree = {}
    for key, value in body.items():
        if value is None or key in SKIPPED:
            continue
        metadata = key == "metadata" and isinstance(value, Mapping)
        out[f"f:{key}"] = _object(value, METADATA_SKIPPED) if metadata else _value(key, value)
    return out


def covers(have: Mapping[str, Any], need: Mapping[str, Any]) -> bool:
    """Every field in `need` is in `have` (a leaf in `need` is covered by anything at its place)."""
    if have is need:
        return True
    for key, sub in need.items():
        found = have.get(key)
        if found is None or (sub and not covers(found, sub)):
            return False
    return True


def _object(obj: Mapping[str, Any], skip: frozenset[str] = frozenset()) -> Tree:
    return {f"f:{key}": _value(key, value) for key, value in obj.items()
            if value is not None and key not in skip}


def _value(key: str, value: Any) -> Tree:
    if isinstance(value, Mapping):
        return _object(value)
    if isinstance(value, list):
        return {} if key in ATOMIC_LISTS else _list(key, value)
    return {}


def _list(key: str, items: list[Any]) -> Tree:
    out: Tree = {}
    keys = LIST_KEYS.get(key)
    for item in items:
        if isinstance(item, Mapping):
            fields = keys if keys is not None and all(isinstance(item.get(k), _SCALARS) for k in keys) else (
                sorted(k for k, v in item.items() if isinstance(v, _SCALARS)))
            identity = orjson.dumps([[k, item.get(k)] for k in fields]).decode()
            sub = _object(item)
            slot = f"k:{identity}"
            out[slot] = _merge(out[slot], sub) if slot in out else sub
        else:
            out["v:" + orjson.dumps(item, option=orjson.OPT_SORT_KEYS).decode()] = {}
    return out


def _merge(a: Tree, b: Tree) -> Tree:
    """Two items of one identity (a list the apiserver would refuse or merge): the fields of both."""
    out = dict(a)
    for key, sub in b.items():
        out[key] = _merge(out[key], sub) if key in out else sub
    return out


class Interned:
    """Equal trees as one object, up to `limit` distinct ones (past it, trees are kept as built)."""

    def __init__(self, limit: int = 512) -> None:
        self._limit = limit
        self._trees: dict[bytes, Tree] = {}

    def __len__(self) -> int:
        return len(self._trees)

    def __call__(self, built: Tree) -> Tree:
        key = orjson.dumps(built, option=orjson.OPT_SORT_KEYS)
        found = self._trees.get(key)
        if found is not None:
            return found
        if len(self._trees) < self._limit:
            self._trees[key] = built
        return built
