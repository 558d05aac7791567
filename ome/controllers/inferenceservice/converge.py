"""Converge children with server-side apply, writing only when the desired object changed or drifted.

Each desired object is stamped with a hash of itself (`ome.io/desired-hash`). A child is re-applied
when its hash differs (the desired object changed; a removed field changes the hash too, and
server-side apply then drops it) or when a field OME sets no longer holds OME's value on the cached
object: an out-of-band `kubectl edit` of the engine's image is repaired by the next reconcile
(`ome.controllers.drift` compares the fields OME sets, normalised the way the apiserver normalises
them, and ignores status and the fields others add). A settled child matches on both, so a no-op
reconcile makes zero API writes, also while kube-controller-manager keeps updating its status.

A field set only at create (`create_only`: an InferenceReplica's spec.replicas, which the autoscaler owns
afterwards) is left out of the hash and of the comparison. Once the object exists, a later apply states
the value the cached object holds, with the cached resourceVersion as a precondition: server-side apply
would otherwise drop a field this manager set at create and no longer sends, and the precondition keeps
a count someone changed meanwhile from being written back (409: requeued, decided again).

With `posts` (framework/post_creates.py) a child is created by POST, which costs the apiserver about
half a create by apply, and its fields are moved from the POST's `Update` entry to the `Apply` entry
before its first apply, so that apply still drops what the desired object no longer sets.

Should the apiserver still not hold a field as applied right after our own apply (a mutating webhook,
a normalisation drift.py does not know), that field is not compared again for this object and hash:
comparing it would re-apply on every reconcile. The fact is logged once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

import structlog

from ome.controllers import drift
from ome.framework import errors, resources
from ome.framework.own_applies import OwnApplies
from ome.framework.post_creates import PostCreates
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from ome.framework.write_behind import WriteBehind

Obj = dict[str, Any]

FIELD_MANAGER: Final = "ome-inferenceservice-controller"
HASH_ANNOTATION: Final = drift.HASH_ANNOTATION
digest = drift.digest
stamp = drift.stamp

log = structlog.get_logger("ome.controllers.inferenceservice")


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Any: ...


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


class Tolerated:
    """Per child and desired hash, the fields the apiserver did not keep as applied (bounded)."""

    def __init__(self, limit: int = 20000) -> None:
        self._limit = limit
        self._paths: dict[tuple[str, str, str], tuple[str, frozenset[drift.Path]]] = {}

    def get(self, stamped: Mapping[str, Any]) -> frozenset[drift.Path]:
        found = self._paths.get(_identity(stamped))
        return found[1] if found is not None and found[0] == drift.desired_hash(stamped) else frozenset()

    def learned(self, namespace: str) -> dict[tuple[str, str], frozenset[drift.Path]]:
        """(kind, name) -> tolerated fields of the children in `namespace`, for tests and debugging."""
        return {(k[0], k[2]): v[1] for k, v in self._paths.items() if k[1] == namespace}

    def record(self, stamped: Mapping[str, Any], applied: Mapping[str, Any]) -> None:
        """What the apply answered: fields that still differ are the apiserver's doing, not drift."""
        key = _identity(stamped)
        paths = frozenset(drift.drift(stamped, applied))
        if not paths:
            self._paths.pop(key, None)
            return
        if self._paths.get(key) != (drift.desired_hash(stamped), paths):
            log.warning("Fields not kept as applied; not compared for drift", kind=key[0], child=key[2],
                        fields=sorted(drift.render(p) for p in paths))
        if len(self._paths) >= self._limit:
            self._paths.clear()  # a relearn costs one extra apply per child; the memory stays bounded
        self._paths[key] = (drift.desired_hash(stamped), paths)


TOLERATED = Tolerated()
"""Process-wide: what the apiserver does to an object is a fact about it, whoever applies it."""


def up_to_date(
    stamped: Mapping[str, Any], cached: Mapping[str, Any] | None, tolerated: Tolerated | None = None
) -> bool:
    """The cached child carries `stamped`'s hash and every field `stamped` sets holds its value."""
    return not reasons(stamped, cached, tolerated)


def reasons(
    stamped: Mapping[str, Any], cached: Mapping[str, Any] | None, tolerated: Tolerated | None = None
) -> list[str]:
    """Why `cached` needs an apply (see drift.reasons), leaving out the fields `tolerated` holds
    (default: the process-wide TOLERATED)."""
    return drift.reasons(stamped, cached, ignore=(tolerated or TOLERATED).get(stamped))


def resource_of(obj: Mapping[str, Any]) -> Resource:
    return resources.resource_for(obj["apiVersion"], obj["kind"])


async def converge(
    writer: Writer,
    desired: Obj,
    cached: Mapping[str, Any] | None,
    tolerated: Tolerated | None = None,
    *,
    create_only: Mapping[str, Mapping[str, Any]] | None = None,
    applies: OwnApplies | None = None,
    field_manager: str = FIELD_MANAGER,
    behind: WriteBehind | None = None,
    owner: Request | None = None,
    posts: PostCreates | None = None,
    reader: Reader | None = None,
) -> bool:
    """Apply `desired` unless the cached copy already matches it; True when it wrote (or started the
    write). `create_only` ({section: {field: value}}) is sent with the create only (see the module
    docstring). With `applies`, a cache that does not show our last apply of the object yet is compared
    with that apply instead (framework/own_applies.py). With `behind` and the `owner` to requeue should
    it fail, a create runs beside the caller (framework/write_behind.py). With `posts`, a create is a POST
    and an apply of an object that may hold such a create's fields moves them first
    (framework/post_creates.py). With `reader`, an absent `cached` is read again as the write is decided,
    when `applies` reads the informers' progress: a create of an earlier pass shown since the caller read the
    cache would otherwise look deleted and be made again."""
    tolerated = tolerated or TOLERATED
    stamped = stamp(desired)
    res = resource_of(stamped)
    meta = stamped["metadata"]
    if cached is None and reader is not None:
        cached = reader.get_or_none(res, str(meta["name"]), meta.get("namespace"))
    key = (res.name, str(meta.get("namespace") or ""), str(meta["name"]))
    if behind is not None and (flying := behind.in_flight(key)) is not None:
        if flying == drift.desired_hash(stamped):
            return False  # on its way
        await behind.wait(key)  # another content: never two applies of one object at once
    ours = applies.pending(res, stamped, cached) if applies is not None else None
    if ours is not None and ours == drift.desired_hash(stamped):
        return False  # the cache has not shown our apply of this very content yet
    why = reasons(stamped, cached, tolerated) or (["changed"] if ours is not None else [])
    if not why:
        return False
    body = with_create_only(stamped, cached, create_only) if create_only else stamped

    created = cached is None and ours is None

    async def write() -> None:
        applied = None
        if posts is not None and created:
            applied = await posts.create(res, body, field_manager)
        if applied is None:
            applied = (await writer.apply(res, body, field_manager=field_manager, force=True) if posts is None
                       else await posts.apply(res, body, cached, field_manager))
        if isinstance(applied, Mapping):
            tolerated.record(stamped, applied)
        if applies is not None:
            applies.record(res, stamped, drift.desired_hash(stamped),
                           applied if isinstance(applied, Mapping) else None)

    if why[0] in ("created", "changed", "deleting"):
        log.info("Applying child", kind=stamped["kind"], child=meta["name"], created=cached is None)
    else:
        log.info("Repairing drifted child", kind=stamped["kind"], child=meta["name"], fields=why[:10])
    # A create (nothing cached, nothing of ours pending) runs beside the pass when there is room; updates,
    # a create with no room and one that failed there are made inline.
    if behind is not None and owner is not None and created:
        if behind.start(key, drift.desired_hash(stamped), owner, write):
            return True
    await write()
    if behind is not None:
        behind.clear(key)
    return True


async def delete(
    writer: Writer, res: Resource, obj: Mapping[str, Any], applies: OwnApplies | None = None
) -> None:
    """Delete a child (by uid, so a successor of the same name is spared) unless it is already going;
    gone or replaced meanwhile is fine. Our last apply of it is forgotten: absent from now on means gone."""
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        return
    log.info("Deleting child", kind=res.kind, child=meta["name"])
    if applies is not None:
        applies.forget(res, obj)
    try:
        await writer.delete(res, meta["name"], meta["namespace"], uid=meta.get("uid"))
    except (errors.NotFound, errors.Conflict):
        pass


def with_create_only(
    stamped: Obj, cached: Mapping[str, Any] | None, create_only: Mapping[str, Mapping[str, Any]]
) -> Obj:
    """The apply body: the create-only fields at create; later, the values the cached object holds
    for them (absent ones stay unsent) under a resourceVersion precondition."""
    body = {**stamped, "metadata": dict(stamped["metadata"])}
    kept = False
    for section, fields in create_only.items():
        merged = dict(body.get(section) or {})
        for name, value in fields.items():
            if cached is None:
                merged[name] = value
            elif (have := (cached.get(section) or {}).get(name)) is not None:
                merged[name], kept = have, True
        body[section] = merged
    if kept and cached is not None and (version := (cached.get("metadata") or {}).get("resourceVersion")):
        body["metadata"]["resourceVersion"] = version
    return body


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return (f"{obj.get('apiVersion')}/{obj.get('kind')}", str(meta.get("namespace") or ""), str(meta["name"]))
