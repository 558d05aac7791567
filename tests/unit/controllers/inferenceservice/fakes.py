"""In-memory stand-ins for the cache and the API writer.

`FakeWorld` is both: applies land in its store (as the apiserver would keep them), reads come from it,
and every write is counted, so a test can assert that a second, no-op reconcile writes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ome.controllers.inferenceservice import controller, pod_index
from ome.controllers.inferenceservice.status import OWNED_FIELDS as OWNED_STATUS_FIELDS
from ome.framework import errors, store
from ome.framework.cache import matches_labels, requirements
from ome.framework.resources import Resource

Obj = dict[str, Any]
INDEXES: Mapping[str, Any] = {
    store.OWNER_INDEX: store.index_by_controller_uid,
    pod_index.INDEX: pod_index.index_by_service,
    controller.REPLICA_REF_INDEX: controller.index_by_replica_ref,
}
"""The cache's indexes these reads use, so an index read here returns what the real cache would."""


def _key(res: Resource, name: str, namespace: str | None) -> tuple[str, str, str]:
    return (res.name, namespace or "", name)


class FakeWorld:
    """A tiny apiserver + cache: objects by (resource, namespace, name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.writes: list[tuple[str, str, str]] = []
        self._rv = 100
        self.unshown: set[str] = set()
        """Resources whose applies the cache does not show yet: answered, but the store keeps the old copy
        until `deliver()`."""
        self._held: dict[tuple[str, str, str], Obj] = {}
        self._stale_once: dict[tuple[str, str, str], Obj] = {}
        self.preconditions: list[str | None] = []
        """Per apply, the resourceVersion it was sent with (None: unconditional)."""

    # cache side
    def put(self, res: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        self.objects[_key(res, meta["name"], meta.get("namespace"))] = obj
        return obj

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        key = _key(res, name, namespace if res.namespaced else None)
        if key in self._stale_once:
            return self._stale_once.pop(key)
        return self.objects.get(key)

    def read_once(self, res: Resource, obj: Obj) -> None:
        """The next read of `obj`'s key returns this older copy: a pass that read the cache just before
        a watch event."""
        meta = obj["metadata"]
        self._stale_once[_key(res, meta["name"], meta.get("namespace") if res.namespaced else None)] = obj

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: Mapping[str, str] | str | None = None,
        index: tuple[str, str] | None = None,
    ) -> list[Obj]:
        found = []
        keys = INDEXES[index[0]] if index is not None else None  # an unknown index fails, as in the cache
        for (kind, ns, _), obj in self.objects.items():
            if kind != res.name or (namespace and ns != namespace):
                continue
            if keys is not None and index is not None and index[1] not in keys(obj):
                continue
            if label_selector and not matches_labels(obj, requirements(label_selector) or []):
                continue
            found.append(obj)
        return found

    # writer side
    async def apply(
        self,
        res: Resource,
        obj: Obj,
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> Obj:
        meta = obj["metadata"]
        self.writes.append(("apply" + (f"/{subresource}" if subresource else ""), res.kind, meta["name"]))
        key = _key(res, meta["name"], meta.get("namespace"))
        self.preconditions.append(meta.get("resourceVersion"))
        server = self._held.get(key) or self.objects.get(key)
        if meta.get("resourceVersion") and meta["resourceVersion"] != (server or {}).get("metadata", {}).get(
            "resourceVersion"
        ):  # as the apiserver answers an apply whose resourceVersion is not the object's
            raise errors.Conflict(409, "Conflict", f"{meta['name']}: the object has been modified")
        self._rv += 1
        if subresource == "status":
            current = copy.deepcopy(self.objects[key])
            # As server-side apply does: the fields this manager owns and no longer sends are removed.
            kept = {k: v for k, v in (current.get("status") or {}).items() if k not in OWNED_STATUS_FIELDS}
            current["status"] = {**kept, **copy.deepcopy(obj["status"])}
        else:
            current = copy.deepcopy(obj)
            old = self.objects.get(key)
            current["metadata"]["uid"] = (old or {}).get("metadata", {}).get("uid") or f"uid-{meta['name']}"
            if old is not None and "status" in old:  # an apply of the object leaves its status alone
                current["status"] = old["status"]
        current["metadata"]["resourceVersion"] = str(self._rv)
        (self._held if res.name in self.unshown else self.objects)[key] = current
        return current

    def held(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        """The apiserver's answer to the last apply the cache does not show yet."""
        return self._held[_key(res, name, namespace if res.namespaced else None)]

    def written_elsewhere(self, res: Resource, obj: Obj) -> None:
        """Another writer's write the cache does not show yet: the apiserver has `obj`."""
        meta = obj["metadata"]
        self._held[_key(res, meta["name"], meta.get("namespace"))] = obj

    def deliver(self) -> None:
        """The watch catches up: the held-back applies reach the store."""
        self.objects.update(self._held)
        self._held.clear()
        self.unshown.clear()

    async def create(
        self, res: Resource, obj: Obj, namespace: str | None = None, *, field_manager: str | None = None
    ) -> Obj:
        meta = obj["metadata"]
        self.writes.append(("create", res.kind, meta["name"]))
        key = _key(res, meta["name"], namespace or meta.get("namespace"))
        if key in self.objects:
            raise errors.AlreadyExists(409, "AlreadyExists", f"{meta['name']} already exists")
        self._rv += 1
        current = copy.deepcopy(obj)
        current["metadata"].update(
            uid=f"uid-{meta['name']}", resourceVersion=str(self._rv), creationTimestamp="2026-01-01T00:00:00Z"
        )
        self.objects[key] = current
        return current

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, uid: str | None = None
    ) -> None:
        self.writes.append(("delete", res.kind, name))
        key = _key(res, name, namespace)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound(404, "NotFound", f"{name} not found")
        if uid and current["metadata"].get("uid") != uid:
            raise errors.Conflict(409, "Conflict", "uid precondition failed")
        del self.objects[key]


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def make_reconciler(
    world: FakeWorld, recorder: FakeRecorder, *, writer: Any = None, config: Any = None,
    now: datetime = datetime(2026, 1, 1, 0, 10, tzinfo=UTC), **options: Any,
) -> Any:
    """The InferenceService reconciler over `world` (reads and writes) with a fixed clock."""
    from ome.config.inferenceservice_config import InferenceServiceConfig
    from ome.controllers.inferenceservice.reconciler import InferenceServiceReconciler

    return InferenceServiceReconciler(
        reader=world, writer=writer or world, recorder=recorder,  # type: ignore[arg-type]
        config=config or InferenceServiceConfig(), clock=lambda: now, **options,
    )


def fix_resolution(monkeypatch: Any) -> None:
    """The reconciler resolves the builders' ready ClusterBaseModel and an auto-selected runtime, so a test
    is about what the reconciler does with them, not about resolution."""
    from ome.resolution import models, runtimes  # noqa: PLC0415 - keep fakes' imports light
    from tests.unit.resolution import builders  # noqa: PLC0415

    def resolve_model(reader: Any, isvc: Obj) -> Any:
        obj = builders.model()
        return models.ResolvedModel(kind="ClusterBaseModel", name=obj["metadata"]["name"], namespace=None,
                                    obj=obj, ready=True)

    def resolve_runtime(reader: Any, isvc: Obj, model: Any) -> Any:
        obj = builders.runtime()
        return runtimes.ResolvedRuntime(kind=obj["kind"], name=obj["metadata"]["name"], obj=obj,
                                        auto_selected=True, warnings=[])

    # The reconciler calls them through these modules, so patching the modules reaches it.
    monkeypatch.setattr(models, "resolve_model", resolve_model)
    monkeypatch.setattr(runtimes, "resolve_runtime", resolve_runtime)


def established(isvc: Obj) -> Obj:
    """`isvc` created long before the reconciler's clock: past the first-status hold
    (status.FIRST_STATUS_GRACE), so its status is written from the first reconcile on."""
    isvc["metadata"]["creationTimestamp"] = "2025-12-01T00:00:00Z"
    return isvc
