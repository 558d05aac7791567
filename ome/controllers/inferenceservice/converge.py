"""Converge children with server-side apply, writing only when the desired object changed.

Each desired object is stamped with a hash of itself (`ome.io/desired-hash`). A cached child carrying
the same hash is up to date, so a no-op reconcile makes zero API writes. Comparing hashes rather than
fields matters: the apiserver normalises values (quantities, defaults), so a field-by-field comparison
against the cache can disagree forever and turn every reconcile into a write that triggers the next one.
A removed field changes the hash too, and server-side apply then drops it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final, Protocol

import orjson
import structlog

from ome.framework import resources
from ome.framework.resources import Resource

Obj = dict[str, Any]

FIELD_MANAGER: Final = "ome-inferenceservice-controller"
HASH_ANNOTATION: Final = "ome.io/desired-hash"

log = structlog.get_logger("ome.controllers.inferenceservice")


class Writer(Protocol):
    async def apply(
        self,
        res: Resource,
        obj: Obj,
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> Obj: ...

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, uid: str | None = None
    ) -> Obj | None: ...


def digest(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def stamp(desired: Obj) -> Obj:
    """`desired` with its hash annotation (computed before the annotation is added)."""
    value = digest(desired)
    meta = desired.setdefault("metadata", {})
    meta.setdefault("annotations", {})[HASH_ANNOTATION] = value
    return desired


def up_to_date(stamped: Mapping[str, Any], cached: Mapping[str, Any] | None) -> bool:
    if cached is None:
        return False
    cached_meta = cached.get("metadata") or {}
    if cached_meta.get("deletionTimestamp"):
        return False
    want = ((stamped.get("metadata") or {}).get("annotations") or {}).get(HASH_ANNOTATION)
    return bool(want) and (cached_meta.get("annotations") or {}).get(HASH_ANNOTATION) == want


def resource_of(obj: Mapping[str, Any]) -> Resource:
    return resources.resource_for(obj["apiVersion"], obj["kind"])


async def converge(writer: Writer, desired: Obj, cached: Mapping[str, Any] | None) -> bool:
    """Apply `desired` unless the cached copy already matches it; True when it wrote."""
    stamped = stamp(desired)
    if up_to_date(stamped, cached):
        return False
    meta = stamped["metadata"]
    log.info("Applying child", kind=stamped["kind"], child=meta["name"], created=cached is None)
    await writer.apply(resource_of(stamped), stamped, field_manager=FIELD_MANAGER, force=True)
    return True
