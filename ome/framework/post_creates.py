"""Children created by POST, and the one move of their fields to the creator's `Apply` entry.

Why POST: at the apiserver a server-side apply that creates an object costs about twice a POST of the
same object (it builds the object from the apply configuration, then merges managed fields; measured
with `bench_scale.py --apiserver-profile` at N=1000: 22.0 CPU s for the manager's creates by apply,
about 10.4 s for the floor's POSTs of the same objects), and a controller's children are mostly created
and seldom changed.

What a POST leaves: the fields sit in the creator's `Update` entry, where later applies would not drop
them (managed_fields.py). Before an apply that would drop one of them, the object's managed fields are
read (the cache drops them) and the `Update` entry is moved into the `Apply` entry by a merge patch of
`metadata.managedFields` alone, under the resourceVersion read (a Conflict, any write since the read,
reads again; `MOVE_ATTEMPTS` refusals fail the pass, which is retried).

An apply whose body sets every field the POST body set drops nothing of the POST's (body_fields.py), so
for an object this process POSTed the move waits until an apply would drop a field; until then the two
entries co-own the POSTed fields and an apply is one round trip, not three. Per uid:

    posted(tree) --apply body covers the tree (and the cached owner references)--> posted(tree)
    posted(tree) --apply body drops a posted field: read, managedFields moved--> clean
    unknown --read, no Update entry of ours-------------------> clean
    unknown --read, an Update entry of ours: managedFields moved--> clean
    clean   --an apply's answer shows an Update entry of ours--> unknown

A POST of this process enters `posted` with the tree of its body. Both maps are bounded (the least
recently learnt go first; a forgotten object costs one more read and the move), and a restarted manager
starts with neither: a read before its first apply of each object.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, Protocol

import structlog

from ome.framework import body_fields, errors, managed_fields
from ome.framework.resources import Resource
from ome.framework.transport import ClientSettings
from ome.framework.written import MAX_ENTRIES, put_last

Obj = dict[str, Any]

log = structlog.get_logger("ome.framework.post_creates")

MOVE_ATTEMPTS: Final = 5
"""Reads and moves tried before a Conflict fails the pass: each refusal is a write made since the read."""

USER_AGENT_MANAGER: Final = ClientSettings().user_agent.split("/")[0]
"""The manager the apiserver records for a write sent without one: the user agent up to its first `/`."""


class Client(Protocol):
    async def create(
        self, res: Resource, obj: Obj, namespace: str | None = None, *, field_manager: str | None = None
    ) -> Obj: ...

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj: ...

    async def patch(
        self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
        field_manager: str | None = None,
    ) -> Obj: ...

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True) -> Obj: ...


class PostCreates:
    """Creates by POST through `client`, and the move before a first apply, for a controller's field
    managers. `also`: names the same writer's `Update` entries may carry from before (a POST without a
    field manager is recorded under the client's user agent, `ome-py`)."""

    def __init__(self, client: Client, *, also: Collection[str] = (), max_entries: int = MAX_ENTRIES) -> None:
        self.client = client
        self._also = tuple(also)
        self._max = max_entries
        self._clean: dict[str, None] = {}  # uid -> None, in the order learnt
        self._posted: dict[str, body_fields.Tree] = {}  # uid -> the fields its POST set, in the order learnt
        self._trees = body_fields.Interned()

    def __len__(self) -> int:
        return len(self._clean)

    def is_clean(self, uid: str) -> bool:
        return uid in self._clean

    def is_posted(self, uid: str) -> bool:
        return uid in self._posted

    def drops_nothing(self, body: Mapping[str, Any], cached: Mapping[str, Any] | None) -> bool:
        """`body`, applied to `cached`, drops no field this process's POST of it set: it sets every field of
        the POST body, and every owner reference the object holds (the POST's among them)."""
        meta = (cached or {}).get("metadata") or {}
        posted = self._posted.get(str(meta.get("uid") or ""))
        if posted is None:
            return False
        sent = (body.get("metadata") or {}).get("ownerReferences") or []
        if any(ref not in sent for ref in meta.get("ownerReferences") or ()):
            return False
        return body_fields.covers(body_fields.tree(body), posted)

    async def create(self, res: Resource, body: Obj, field_manager: str) -> Obj | None:
        """POST `body`; None when an object of that name exists already (the cache had not shown it):
        the caller applies instead."""
        try:
            namespace = body["metadata"].get("namespace")
            created = await self.client.create(res, body, namespace, field_manager=field_manager)
        except errors.AlreadyExists:
            return None
        uid = str((created.get("metadata") or {}).get("uid") or "")
        if uid:
            put_last(self._posted, uid, self._trees(body_fields.tree(body)), self._max)
        return created

    async def before_apply(
        self, res: Resource, body: Obj, cached: Mapping[str, Any] | None, field_manager: str
    ) -> Obj:
        """`body`, once the object's fields are out of `field_manager`'s `Update` entry. A body sent with the
        resourceVersion the move was made over gets the version the move wrote (an older one is left to
        fail the apply, as it would have)."""
        uid = ((cached or {}).get("metadata") or {}).get("uid")
        if uid and (uid in self._clean or self.drops_nothing(body, cached)):
            return body  # no Update entry of ours, or nothing in it this apply would drop
        meta = body["metadata"]
        drop = () if "replicas" in (body.get("spec") or {}) else (managed_fields.REPLICAS,)
        for attempt in range(1, MOVE_ATTEMPTS + 1):
            try:
                live = await self.client.get(res, meta["name"], meta.get("namespace"))
            except errors.NotFound:
                return body  # gone: the apply creates it
            live_meta = live.get("metadata") or {}
            moved = managed_fields.upgraded(live_meta.get("managedFields") or [], field_manager,
                                            also=self._also, drop=drop)
            if moved is None:
                break
            read = live_meta.get("resourceVersion")
            patch = {"metadata": {"resourceVersion": read, "managedFields": moved}}
            try:
                patched = await self.client.patch(res, meta["name"], patch, meta.get("namespace"),
                                                   field_manager=field_manager)
            except errors.Conflict:
                # Any write since the read (a status update of the workload's controller) moved the
                # version: read again. The last refusal fails the pass, which is retried.
                if attempt == MOVE_ATTEMPTS:
                    raise
                continue
            log.info("Moved created fields to the apply entry", kind=res.kind, name=meta["name"],
                     manager=field_manager)
            if meta.get("resourceVersion") and meta["resourceVersion"] == read:
                written = (patched.get("metadata") or {}).get("resourceVersion")
                body = {**body, "metadata": {**meta, "resourceVersion": written}}
            break
        self._learn(str(live_meta.get("uid") or ""), True)
        return body

    async def apply(
        self, res: Resource, body: Obj, cached: Mapping[str, Any] | None, field_manager: str
    ) -> Obj:
        """Server-side apply `body` once its object's created fields are moved (`before_apply`), and learn
        from the answer (`applied`)."""
        sent = await self.before_apply(res, body, cached, field_manager)
        answer = await self.client.apply(res, sent, field_manager=field_manager, force=True)
        self.applied(answer, field_manager)
        return answer

    def applied(self, answer: Mapping[str, Any] | None, field_manager: str) -> None:
        """What an apply answered: clean unless an `Update` entry of ours is still there."""
        meta = (answer or {}).get("metadata") or {}
        movers = {field_manager, *self._also}
        left = any(managed_fields.is_update_of(e, movers) for e in meta.get("managedFields") or ())
        self._learn(str(meta.get("uid") or ""), not left)

    def _learn(self, uid: str, clean: bool) -> None:
        if not uid:
            return
        if clean:
            self._posted.pop(uid, None)
            put_last(self._clean, uid, None, self._max)
        else:
            self._clean.pop(uid, None)
