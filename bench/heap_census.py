"""Where a Python process's memory sits, by what holds it: a census taken inside the manager.

bench_soak's `sitecustomize` hook runs it on SIGUSR1 when `<dump>.census` exists (`--census`). A count of
live objects by type says how many dicts there are, not whose they are; this says:

- stores: each informer's store (resource and label selector): its objects, their deep size and its
  indexes' deep size;
- holders: the container attributes (dicts, lists, sets, deques) of the manager's own objects (`ome.*`)
  with the largest deep sizes after the stores: caches, queues, held writes;
- buffers: `bytes`, `bytearray` and `str` of 4 KiB or more, summed by the type of what refers to them
  (TLS and stream buffers, kept bodies), which a census of gc-tracked objects does not see.

Deep sizes are `sys.getsizeof` summed over what a container reaches, each object counted once, in the
order above (an object two stores share is counted in the first). The manager's own objects are not
entered from a holder: their attributes are holders of their own.
"""

from __future__ import annotations

import collections
import gc
import sys
from collections.abc import Iterable
from typing import Any

Census = dict[str, Any]
BUFFER_MIN = 4096
_CONTAINERS = (dict, list, tuple, set, frozenset, collections.deque)


def _own(obj: object) -> bool:
    """One of the manager's objects (its class is defined under `ome.`), not a class itself."""
    return not isinstance(obj, type) and type(obj).__module__.startswith("ome.")


def deep_size(root: object, seen: set[int]) -> int:
    """Bytes `root` reaches through containers and plain objects' attributes, skipping what `seen` holds
    (and adding what it counts to `seen`). The manager's own objects other than `root` are not entered."""
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or (obj is not root and _own(obj)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, _CONTAINERS):
            stack.extend(obj)
        elif (attrs := getattr(obj, "__dict__", None)) is not None and not isinstance(obj, type):
            stack.append(attrs)
    return total


def _is_store_holder(obj: object) -> bool:
    """An informer: an object with a `store` (with `_items`) and a `resource` (with a `name`)."""
    if not _own(obj):  # getattr on anything else may run its code (proxies, lazy attributes)
        return False
    store = getattr(obj, "store", None)
    resource = getattr(obj, "resource", None)
    return isinstance(getattr(store, "_items", None), dict) and hasattr(resource, "name")


def census(objects: Iterable[Any], *, top: int = 30, min_bytes: int = 64 * 1024) -> Census:
    """The census of `objects` (`gc.get_objects()`): stores, the `top` holders of at least `min_bytes`,
    and the buffers by referrer type. Sizes in KiB."""
    objects = list(objects)
    # Buffers first: `vars()` below gives an instance a dict object of its own (3.11 keeps its attributes
    # inline until asked), and a buffer would then be referred to by that new dict, not in `objects`.
    held = buffers(objects)
    seen: set[int] = set()
    stores: list[dict[str, Any]] = []
    counted: set[int] = set()
    for informer in (o for o in objects if _is_store_holder(o)):
        store = informer.store
        counted.update((id(informer), id(store)))
        selector = getattr(informer, "label_selector", None) or ""
        label = f"{informer.resource.name} {selector}".strip()
        items = deep_size(store._items, seen)
        indexes = sum(deep_size(v, seen) for k, v in vars(store).items() if k != "_items")
        stores.append({"store": label, "objects": len(store._items), "kib": items // 1024,
                       "index_kib": indexes // 1024})
    stores.sort(key=lambda s: -(s["kib"] + s["index_kib"]))
    holders: list[dict[str, Any]] = []
    for obj in objects:
        if id(obj) in counted or not _own(obj) or not isinstance(getattr(obj, "__dict__", None), dict):
            continue
        for name, value in vars(obj).items():
            if isinstance(value, _CONTAINERS) and id(value) not in seen:
                size = deep_size(value, seen)
                if size >= min_bytes:
                    holders.append({"holder": f"{type(obj).__module__}.{type(obj).__qualname__}.{name}",
                                    "entries": len(value), "kib": size // 1024})
    holders.sort(key=lambda h: -h["kib"])
    return {"stores": stores, "holders": holders[:top], "buffers": held}


def buffers(objects: Iterable[object], minimum: int = BUFFER_MIN) -> list[dict[str, Any]]:
    """Large bytes, bytearrays and strs by the type of the object that refers to them (each buffer once,
    under its first referrer), largest first."""
    size: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    found: set[int] = set()
    for obj in objects:
        for ref in gc.get_referents(obj):
            if type(ref) in (bytes, bytearray, str) and id(ref) not in found:
                nbytes = sys.getsizeof(ref)
                if nbytes >= minimum:
                    found.add(id(ref))
                    holder = f"{type(obj).__module__}.{type(obj).__qualname__} > {type(ref).__name__}"
                    size[holder] += nbytes
                    count[holder] += 1
    return [{"holder": h, "buffers": count[h], "kib": n // 1024} for h, n in size.most_common(25)]


def format_census(result: Census) -> str:
    """The census as aligned text: stores, then holders, then buffers, with their totals."""
    lines = []
    stores = result.get("stores") or []
    total = sum(s["kib"] + s["index_kib"] for s in stores)
    lines.append(f"  informer stores: {total / 1024:.1f} MiB (objects + indexes)")
    lines += [f"    {s['kib'] / 1024:7.1f} + {s['index_kib'] / 1024:5.1f} MiB  {s['objects']:>7} objects  "
              f"{s['store']}" for s in stores if s["kib"] + s["index_kib"]]
    holders = result.get("holders") or []
    lines.append(f"  largest holders: {sum(h['kib'] for h in holders) / 1024:.1f} MiB")
    lines += [f"    {h['kib'] / 1024:7.1f} MiB  {h['entries']:>7} entries  {h['holder']}" for h in holders]
    held = result.get("buffers") or []
    total = sum(b["kib"] for b in held)
    lines.append(f"  buffers of {BUFFER_MIN // 1024} KiB or more: {total / 1024:.1f} MiB")
    lines += [f"    {b['kib'] / 1024:7.1f} MiB  {b['buffers']:>7} buffers  {b['holder']}" for b in held]
    return "\n".join(lines)
