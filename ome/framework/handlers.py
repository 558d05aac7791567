"""Event handlers: map an informer event to reconcile `Request`s and enqueue them.

After controller-runtime's `pkg/handler`. Handlers are plain `def`s that only compute
keys and call `queue.add`; they run on the informer's dispatch path and must never
await or do I/O, or they would stall every other watcher of that informer.

An informer delivers `(event_type, obj, old)`: `old` is the previous object for
MODIFIED and None otherwise; for DELETED, `obj` is the last state the cache knew.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol

from ome.framework.cache import NotSyncedError
from ome.framework.reconcile import Request

__all__ = [
    "EventType",
    "Enqueuer",
    "Handler",
    "Obj",
    "enqueue_for_object",
    "enqueue_for_owner",
    "enqueue_mapped",
    "request_for",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Obj = dict[str, Any]


class Enqueuer(Protocol):
    """The one queue method a handler may use."""

    def add(self, item: Request) -> None: ...


Handler = Callable[[EventType, Obj, "Obj | None", Enqueuer], None]
"""`(event_type, obj, old, queue)`: enqueue the requests this event implies; never await."""


def request_for(obj: Obj) -> Request:
    """The key of `obj` itself."""
    meta = obj["metadata"]
    return Request(meta.get("namespace") or "", meta["name"])


def enqueue_for_object(event_type: EventType, obj: Obj, old: Obj | None, queue: Enqueuer) -> None:
    """Reconcile the object the event is about (controller-runtime `EnqueueRequestForObject`)."""
    queue.add(request_for(obj))


def enqueue_for_owner(owner_group: str, owner_kind: str, *, owner_namespaced: bool = True) -> Handler:
    """Reconcile the controller owner of the object, when its group and kind match.

    Only the ownerReference with `controller: true` counts (`OnlyControllerOwner`). On
    MODIFIED the old object's owner is enqueued too, so a child moved from one owner to
    another wakes both. The owner shares the child's namespace, or has none when
    `owner_namespaced` is False.
    """

    def owner_of(obj: Obj) -> Request | None:
        meta = obj["metadata"]
        for ref in meta.get("ownerReferences") or ():
            if not ref.get("controller"):
                continue
            if ref.get("kind") != owner_kind or _group_of(ref.get("apiVersion", "")) != owner_group:
                return None  # there is at most one controller reference, and it is not ours
            namespace = (meta.get("namespace") or "") if owner_namespaced else ""
            return Request(namespace, ref["name"])
        return None

    def handle(event_type: EventType, obj: Obj, old: Obj | None, queue: Enqueuer) -> None:
        owner = owner_of(obj)
        if owner is not None:
            queue.add(owner)
        if old is not None and (previous := owner_of(old)) is not None and previous != owner:
            queue.add(previous)

    return handle


def enqueue_mapped(mapper: Callable[[Obj], Iterable[Request]]) -> Handler:
    """Reconcile whatever `mapper` names for the object (and, on MODIFIED, for the old object).

    `mapper` must be cheap and synchronous: read the cache, never the apiserver.
    """

    def handle(event_type: EventType, obj: Obj, old: Obj | None, queue: Enqueuer) -> None:
        try:
            requests = set(mapper(obj))
            if old is not None:
                requests.update(mapper(old))
        except NotSyncedError:
            # The mapped kind is still on its first list; once synced, its own events enqueue every
            # object, so skipping this event loses nothing.
            return
        for req in requests:
            queue.add(req)

    return handle


def _group_of(api_version: str) -> str:
    """The group of an apiVersion: "ome.io/v1beta1" -> "ome.io"; core "v1" -> ""."""
    group, _, _version = api_version.rpartition("/")
    return group
