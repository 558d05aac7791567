"""Event filters applied before a handler, after controller-runtime's `pkg/predicate`.

A predicate is any `(event_type, obj, old) -> bool`; the event reaches the handler
only if every predicate of the watch returns True. The `*_changed` predicates judge
only MODIFIED events and let ADDED and DELETED through, as controller-runtime's do.
`generation_changed` is the usual one for a primary resource: it drops status-only
updates and resyncs (which deliver old == new).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ome.framework.handlers import EventType, Obj

__all__ = [
    "Predicate",
    "and_",
    "annotations_changed",
    "generation_changed",
    "labels_changed",
    "not_",
    "or_",
    "resource_version_changed",
]

Predicate = Callable[[EventType, Obj, "Obj | None"], bool]


def _modified_field_changed(event_type: EventType, obj: Obj, old: Obj | None, field: str) -> bool:
    if event_type != "MODIFIED":
        return True
    if old is None:
        return False  # controller-runtime: an update without its old object is dropped
    empty: dict[str, Any] = {}
    return bool(old.get("metadata", empty).get(field) != obj.get("metadata", empty).get(field))


def generation_changed(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
    """MODIFIED only when `metadata.generation` changed, i.e. the spec did."""
    return _modified_field_changed(event_type, obj, old, "generation")


def labels_changed(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
    """MODIFIED only when `metadata.labels` changed."""
    return _modified_field_changed(event_type, obj, old, "labels")


def annotations_changed(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
    """MODIFIED only when `metadata.annotations` changed."""
    return _modified_field_changed(event_type, obj, old, "annotations")


def resource_version_changed(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
    """MODIFIED only when `metadata.resourceVersion` changed: drops resync re-deliveries."""
    return _modified_field_changed(event_type, obj, old, "resourceVersion")


def and_(*predicates: Predicate) -> Predicate:
    """True when every predicate is (no predicates: True)."""

    def check(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
        return all(p(event_type, obj, old) for p in predicates)

    return check


def or_(*predicates: Predicate) -> Predicate:
    """True when any predicate is (no predicates: False)."""

    def check(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
        return any(p(event_type, obj, old) for p in predicates)

    return check


def not_(predicate: Predicate) -> Predicate:
    def check(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
        return not predicate(event_type, obj, old)

    return check
