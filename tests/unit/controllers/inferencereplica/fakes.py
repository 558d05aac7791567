"""An in-memory apiserver that is also the cache, for InferenceReplica reconciler tests.

Writes land in the store at once (the cache never lags unless a test says so), each counted in
`writes`. Deletes honour finalizers; merge patches honour a metadata.resourceVersion precondition.
`listeners` get the pod informer's events (ADDED on a create, DELETED once an object is gone), at once or,
with `deliver_later`, only when the test calls `deliver()`. `fail` makes chosen writes raise, after
`yields` trips through the event loop (a real create is in flight that long).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from typing import Any

from ome.framework import errors
from ome.framework.resources import Resource
from ome.framework.written import WrittenVersions

Obj = dict[str, Any]
NOW = "2026-01-01T00:10:00Z"


def _merge(into: Obj, patch: Mapping[str, Any]) -> Obj:
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


class FakeApi:
    def __init__(self, *, served: tuple[str, ...] = ()) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.writes: list[tuple[str, str, str]] = []
        self.hidden: set[tuple[str, str, str]] = set()
        """Objects the apiserver has but the cache does not show yet."""
        self.served = set(served)
        self.listeners: list[Callable[[Any, Obj, Obj | None], None]] = []
        self.deliver_later = False
        self.pending_events: list[tuple[str, Obj]] = []
        self.fail: dict[tuple[str, str], Exception] = {}
        """(verb, name) -> the error that write raises."""
        self.yields: dict[str, int] = {}
        """name -> event-loop trips its create, delete or status update takes before it answers."""
        self.graces: dict[str, int | None] = {}
        """name -> the grace period its last delete asked for (None: the pod's own)."""
        self.attempts: list[tuple[str, str]] = []
        """Every create, delete and status update asked for, answered or not."""
        self._rv = 100
        self._uid = 0
        self.created_by: dict[str, str | None] = {}
        """name -> the field manager its create was sent with."""

    # -- test steering --------------------------------------------------------------------------

    def put(self, res: Resource, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        self._uid += 1
        meta.setdefault("uid", f"uid-{self._uid}")
        meta["resourceVersion"] = self._next_rv()
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
        self.objects[self._key(res, meta["name"], meta.get("namespace"))] = obj
        return obj

    def get(self, res: Resource, name: str, namespace: str | None = "ns") -> Obj | None:
        return self.objects.get(self._key(res, name, namespace))

    def of(self, res: Resource) -> list[Obj]:
        return [o for (plural, _, _), o in self.objects.items() if plural == res.plural]

    def writes_of(self, verb: str) -> list[tuple[str, str, str]]:
        return [w for w in self.writes if w[0] == verb]

    def deliver(self) -> None:
        """The informer catches up: every held event reaches the listeners."""
        events, self.pending_events = self.pending_events, []
        for event_type, obj in events:
            for listener in self.listeners:
                listener(event_type, obj, None)

    def _event(self, res: Resource, event_type: str, obj: Obj) -> None:
        if res.plural != "pods":
            return  # the listeners are the pod informer's handlers
        self.pending_events.append((event_type, copy.deepcopy(obj)))
        if not self.deliver_later:
            self.deliver()

    async def _in_flight(self, verb: str, name: str) -> None:
        self.attempts.append((verb, name))
        for _ in range(self.yields.get(name, 0)):
            await asyncio.sleep(0)
        error = self.fail.get((verb, name))
        if error is not None:
            raise error

    # -- cache ----------------------------------------------------------------------------------

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        key = self._key(res, name, namespace)
        return None if key in self.hidden else self.objects.get(key)

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: Mapping[str, str] | None = None,
        index: tuple[str, str] | None = None,
    ) -> list[Obj]:
        found = []
        for key, obj in self.objects.items():
            if key in self.hidden or key[0] != res.plural or (namespace and key[1] != namespace):
                continue
            labels = obj["metadata"].get("labels") or {}
            if label_selector and any(labels.get(k) != v for k, v in label_selector.items()):
                continue
            if index is not None:
                owners = obj["metadata"].get("ownerReferences") or []
                if not any(r.get("controller") and r.get("uid") == index[1] for r in owners):
                    continue
            found.append(obj)
        return found

    # -- client ---------------------------------------------------------------------------------

    async def is_served(self, res: Resource, *, timeout: float | None = None) -> bool:
        return res.plural in self.served

    async def create(
        self, res: Resource, obj: Obj, namespace: str | None = None, *, field_manager: str | None = None
    ) -> Obj:
        meta = obj["metadata"]
        await self._in_flight("create", meta["name"])
        key = self._key(res, meta["name"], namespace or meta.get("namespace"))
        if key in self.objects:
            raise errors.AlreadyExists(409, "AlreadyExists", f"{meta['name']} exists")
        self.writes.append(("create", res.kind, meta["name"]))
        self.created_by[meta["name"]] = field_manager
        created = self.put(res, obj)
        self._event(res, "ADDED", created)
        return created

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True) -> Obj:
        meta = obj["metadata"]
        self.writes.append(("apply", res.kind, meta["name"]))
        key = self._key(res, meta["name"], meta.get("namespace"))
        current = self.objects.get(key)
        merged = _merge(copy.deepcopy(current or {}), obj)
        merged["metadata"]["resourceVersion"] = self._next_rv()
        self.objects[key] = merged
        return merged

    async def update_status(self, res: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        await self._in_flight("update_status", meta["name"])
        current = self._existing(res, meta["name"], meta.get("namespace"))
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise errors.Conflict(409, "Conflict", "stale resourceVersion")
        self.writes.append(("update_status", res.kind, meta["name"]))
        current["status"] = copy.deepcopy(obj.get("status"))
        current["metadata"]["resourceVersion"] = self._next_rv()
        return current

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Obj,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> Obj:
        await self._in_flight("patch", name)
        current = self._existing(res, name, namespace)
        self.writes.append(("patch" + (f"/{subresource}" if subresource else ""), res.kind, name))
        if subresource == "status" and patch_type == "strategic":
            by_type = {c["type"]: c for c in (current.get("status") or {}).get("conditions") or []}
            for condition in patch["status"]["conditions"]:
                by_type[condition["type"]] = {**by_type.get(condition["type"], {}), **condition}
            current.setdefault("status", {})["conditions"] = list(by_type.values())
        else:
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                raise errors.Conflict(409, "Conflict", "stale resourceVersion")
            _merge(current, patch)
        current["metadata"]["resourceVersion"] = self._next_rv()
        self._gc(res, current)
        return current

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        await self._in_flight("delete", name)
        self.graces[name] = grace_period_seconds
        current = self._existing(res, name, namespace)
        if uid is not None and current["metadata"].get("uid") != uid:
            raise errors.Conflict(409, "Conflict", "Precondition failed: UID in precondition")
        self.writes.append(("delete", res.kind, name))
        if current["metadata"].get("finalizers"):
            current["metadata"]["deletionTimestamp"] = NOW
        else:
            del self.objects[self._key(res, name, namespace)]
            self._event(res, "DELETED", current)

    # -- helpers --------------------------------------------------------------------------------

    def _gc(self, res: Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            gone = self.objects.pop(self._key(res, meta["name"], meta.get("namespace")), None)
            if gone is not None:
                self._event(res, "DELETED", gone)

    def _existing(self, res: Resource, name: str, namespace: str | None) -> Obj:
        obj = self.objects.get(self._key(res, name, namespace))
        if obj is None:
            raise errors.NotFound(404, "NotFound", f"{name} not found")
        return obj

    def _key(self, res: Resource, name: str, namespace: str | None) -> tuple[str, str, str]:
        return (res.plural, (namespace or "") if res.namespaced else "", name)

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)


class FakeClient:
    """The client side of a FakeApi: its writes, and `list` as an uncached read (what the apiserver
    has, whatever the cache shows)."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.lists = 0
        self.create, self.apply, self.patch = api.create, api.apply, api.patch
        self.delete, self.update_status, self.is_served = api.delete, api.update_status, api.is_served
        self.written = WrittenVersions()  # Client.written: a test records a write the cache has not shown

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        obj = self.api.objects.get(self.api._key(res, name, namespace))  # noqa: SLF001
        if obj is None:
            raise errors.NotFound(404, "NotFound", f"{name} not found")
        return copy.deepcopy(obj)

    async def list(
        self, res: Resource, namespace: str | None = None, *, label_selector: Mapping[str, str] | None = None
    ) -> tuple[list[Obj], str]:
        self.lists += 1
        items = []
        for (plural, ns, _), obj in self.api.objects.items():
            labels = obj["metadata"].get("labels") or {}
            if plural != res.plural or ns != (namespace or ""):
                continue
            if label_selector and any(labels.get(k) != v for k, v in label_selector.items()):
                continue
            items.append(copy.deepcopy(obj))
        return items, "1"


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))
