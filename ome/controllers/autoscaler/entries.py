"""The autoscaler's part of an InferenceService status, `status.components.<c>.autoscaler`, handed from the
autoscaler reconciler to the InferenceService reconciler, the one writer of that status (in-process, plain
dicts, no I/O).

Two writers of one status (one field manager each) cost a new service two status writes; one writer
merging both parts costs one. The autoscaler reconciler publishes every component's entry after a pass that
reconciled them all (`AutoscalerEntries.publish`); when they differ from what the cached status shows, or
from what it published before (the cache may not show the InferenceService reconciler's last write yet),
the InferenceService controller's key is queued. The InferenceService reconciler merges them into every
status it writes (`merge`): a published component gets its entry, a component the autoscaler no longer
reports loses it, and a service with nothing published in this process yet (a new leader before the
autoscaler's first pass over it) keeps the entries its status has, so a restart neither drops nor
rewrites them.

Earlier versions had the autoscaler apply its entries itself, under `LEGACY_FIELD_MANAGER`: the
InferenceService reconciler's status apply (forced) takes the fields over, and when its answer shows that
manager still owning some, it releases them once (`legacy_owner`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ome.framework.reconcile import Request

Obj = dict[str, Any]

FIELD: Final = "autoscaler"
LEGACY_FIELD_MANAGER: Final = "ome-autoscaler-controller"
"""The field manager the autoscaler applied its status entries under before this merge."""
_RESOLVED: Final = "AutoscalerResolved"


class AutoscalerEntries:
    """(namespace, name) -> component -> `{"autoscaler": {...}}`, as the autoscaler last computed them."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], dict[str, Obj]] = {}
        self._listener: Callable[[Request], None] | None = None

    def subscribe(self, listener: Callable[[Request], None]) -> None:
        """`listener` (the InferenceService controller's queue) is called with the key of a service whose
        published entries its status does not show yet."""
        self._listener = listener

    @property
    def subscribed(self) -> bool:
        return self._listener is not None

    def publish(self, isvc: Mapping[str, Any], entries: Mapping[str, Obj]) -> None:
        meta = isvc["metadata"]
        key = (str(meta.get("namespace") or ""), str(meta["name"]))
        previous = self._by_key.get(key)
        self._by_key[key] = {component: dict(entry) for component, entry in entries.items()}
        cached = (isvc.get("status") or {}).get("components") or {}
        changed = previous is not None and previous != self._by_key[key]
        if (changed or _differs(cached, entries)) and self._listener is not None:
            self._listener(Request(*key))

    def published(self, namespace: str, name: str) -> Mapping[str, Obj] | None:
        """The service's entries, or None when the autoscaler has not reported on it in this process."""
        return self._by_key.get((namespace, name))

    def forget(self, namespace: str, name: str) -> None:
        self._by_key.pop((namespace, name), None)

    def __len__(self) -> int:
        return len(self._by_key)


def merge(status: Obj, old: Mapping[str, Any], published: Mapping[str, Obj] | None) -> Obj:
    """`status` (the InferenceService reconciler's computed one) with each component's autoscaler entry:
    the published ones, or with none published the ones `old` (the status as last written) has."""
    source = published if published is not None else _entries(old.get("components") or {})
    components: Obj = {name: {k: v for k, v in entry.items() if k != FIELD}
                       for name, entry in (status.get("components") or {}).items()}
    for name, entry in source.items():
        if FIELD in entry:
            components[name] = {**components.get(name, {}), FIELD: entry[FIELD]}
    components = {name: entry for name, entry in components.items() if entry}
    merged = {k: v for k, v in status.items() if k != "components"}
    if components:  # apply turns an empty map into null, which the schema rejects; absent prunes it
        merged["components"] = components
    return merged


def reports_problem(published: Mapping[str, Obj] | None) -> bool:
    """An entry says its autoscaler could not be resolved (AutoscalerResolved False): reported at once,
    not held back with a new service's first status."""
    for entry in (published or {}).values():
        for cond in (entry.get(FIELD) or {}).get("conditions") or ():
            if cond.get("type") == _RESOLVED and cond.get("status") == "False":
                return True
    return False


def legacy_owner(applied: Mapping[str, Any] | None) -> bool:
    """Whether the answer to a status apply shows `LEGACY_FIELD_MANAGER` still owning status fields: an
    object written before the merge. Fields that manager alone owns would stay when this controller
    drops them; the reconciler releases them once (an empty apply under that manager)."""
    for managed in ((applied or {}).get("metadata") or {}).get("managedFields") or ():
        if managed.get("manager") == LEGACY_FIELD_MANAGER and managed.get("subresource") == "status":
            return True
    return False


def _entries(components: Mapping[str, Any]) -> dict[str, Obj]:
    return {name: {FIELD: entry[FIELD]} for name, entry in components.items()
            if isinstance(entry, Mapping) and FIELD in entry}


def _differs(current: Mapping[str, Any], entries: Mapping[str, Any]) -> bool:
    for component in set(current) | set(entries):
        if (current.get(component) or {}).get(FIELD) != (entries.get(component) or {}).get(FIELD):
            return True
    return False
