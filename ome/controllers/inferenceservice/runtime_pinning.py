"""Runtime pinning for the InferenceService reconciler: the revisions it reads and creates, and the status.

The decision itself is pure (resolution/runtime_revisions.py). Here: the runtime revisions in OME's
namespace (the config namespace) as the cache holds them, the revisions this process created that the
cache has not delivered yet (so a reconcile right after a pin does not read the new pin as
RevisionMissing), the create (AlreadyExists is fine: services pinned to the same spec share a revision),
and the status pieces a decision adds: pinnedRevisionName, lastRuntimeSyncToken and RuntimeDrifted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.controllers.inferenceservice import status
from ome.framework import errors
from ome.framework.reconcile import Request, RetryError
from ome.resolution import runtime_revisions as rr

Obj = dict[str, Any]

REVISION_SELECTOR: Final = rr.RUNTIME_OF_LABEL
"""Label selector of the revision informer: every runtime revision carries the label (exists)."""

log = structlog.get_logger("ome.controllers.inferenceservice")


class Lister(Protocol):
    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: Mapping[str, str] | str | None = None,
        index: tuple[str, str] | None = None,
    ) -> list[Obj]: ...


class Creator(Protocol):
    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj: ...


class PinError(RetryError):
    """The service cannot pin its runtime at all; the workload is left as it is and the key retried."""


class Revisions:
    """Runtime revisions in the config namespace: the cache's, plus those created here and not yet cached."""

    def __init__(self, reader: Lister, config_namespace: str) -> None:
        self._reader = reader
        self.namespace = config_namespace
        self._created: dict[str, Obj] = {}

    def list(self) -> list[Obj]:
        cached = [
            rev
            for rev in self._reader.list(resources.CONTROLLER_REVISIONS, self.namespace,
                                         label_selector=REVISION_SELECTOR)
            if rr.RUNTIME_OF_LABEL in ((rev.get("metadata") or {}).get("labels") or {})
        ]
        names = {rev["metadata"]["name"] for rev in cached}
        for name in [n for n in self._created if n in names]:
            del self._created[name]  # the cache has it now
        return cached + list(self._created.values())

    async def create(self, writer: Creator, body: Obj) -> None:
        name = body["metadata"]["name"]
        try:
            created = await writer.create(resources.CONTROLLER_REVISIONS, body, self.namespace)
        except errors.AlreadyExists:
            log.info("Runtime revision exists", revision=name)
            created = body
        else:
            log.info("Created runtime revision", revision=name, runtime=body["metadata"]["labels"])
        self._created[name] = created


def observed_fields(decision: rr.Decision) -> dict[str, Any]:
    """Keyword arguments for status.Observed: the pin fields and the RuntimeDrifted condition."""
    extra: tuple[status.Cond, ...] = ()
    if decision.drift is not None:
        extra = (status.Cond(rr.RUNTIME_DRIFTED, "True", decision.drift.reason, decision.drift.message),)
    return {"pin_fields": dict(decision.status), "extra_conditions": extra}


def pinned_services(cache: Lister) -> Callable[[Obj], Iterable[Request]]:
    """Map a runtime revision to the services that pin a runtime of its name or name the revision."""

    def mapper(revision: Obj) -> Iterable[Request]:
        meta = revision["metadata"]
        runtime = (meta.get("labels") or {}).get(rr.RUNTIME_OF_LABEL)
        for isvc in cache.list(resources.INFERENCE_SERVICES):
            ref = (isvc.get("spec") or {}).get("runtime") or {}
            named = ref.get("revision") == meta["name"]
            pinned = (isvc.get("status") or {}).get(rr.PINNED_FIELD) == meta["name"]
            if named or pinned or (rr.pins(isvc) and ref.get("name") == runtime):
                yield Request(isvc["metadata"]["namespace"], isvc["metadata"]["name"])

    return mapper
