"""Garbage collection of runtime revisions: one whole-namespace pass per key, every event and every 5 min.

Per runtime name (label `ome.io/runtime-of`, across namespaces and scopes) the ten newest revisions and
every revision an InferenceService names in spec.runtime.revision or status.pinnedRevisionName are kept.
Each other revision OME created is marked with `ome.io/gc-eligible-since` (the time, RFC 3339) and deleted
once 24 hours have passed since; a marked revision that is kept again loses the mark. The plan is pure
(resolution/runtime_revisions.gc_plan); marks are server-side applies of that one annotation under their
own field manager, so removing the mark is applying without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Final

import structlog

from ome.api import resources
from ome.controllers.inferenceservice import converge
from ome.controllers.inferenceservice.runtime_pinning import REVISION_SELECTOR, Lister, Revisions
from ome.framework import errors, predicates
from ome.framework.cache import SharedCache
from ome.framework.controller import Controller
from ome.framework.handlers import EventType, Obj
from ome.framework.manager import Manager
from ome.framework.reconcile import Request, Result
from ome.framework.timefmt import format_time
from ome.resolution import runtime_revisions as rr

NAME: Final = "runtime-revision-gc"
FIELD_MANAGER: Final = "ome-runtime-revision-gc"
RESYNC_SECONDS: Final = 300.0
DEFAULT_RETENTION: Final = 10
DEFAULT_GRACE: Final = timedelta(hours=24)

log = structlog.get_logger("ome.controllers.runtimerevisiongc")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class RevisionGC:
    def __init__(
        self,
        *,
        reader: Lister,
        writer: converge.Writer,
        config_namespace: str,
        retention: int = DEFAULT_RETENTION,
        grace: timedelta = DEFAULT_GRACE,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._revisions = Revisions(reader, config_namespace)
        self._retention = retention
        self._grace = grace
        self._clock = clock

    @property
    def request(self) -> Request:
        return Request(self._revisions.namespace, NAME)

    async def reconcile(self, req: Request) -> Result:
        now = self._clock()
        referenced = rr.referenced_revisions(self._reader.list(resources.INFERENCE_SERVICES))
        plan = rr.gc_plan(
            self._revisions.list(), referenced, now, retention=self._retention, grace=self._grace
        )
        for step in plan:
            try:
                await self._apply(step, now)
            except (errors.NotFound, errors.Conflict, errors.Invalid):
                pass  # gone meanwhile, or changed: the next pass sees the new state
        return Result(requeue_after=RESYNC_SECONDS)

    async def _apply(self, step: rr.GCAction, now: datetime) -> None:
        meta = step.revision["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        if step.action == rr.DELETE:
            log.info("Deleting unused runtime revision", revision=name)
            await self._writer.delete(resources.CONTROLLER_REVISIONS, name, namespace, uid=meta.get("uid"))
        elif step.action == rr.MARK:
            log.info("Marking unused runtime revision", revision=name)
            stamp = format_time(now)
            await self._mark(name, namespace, {rr.GC_ELIGIBLE_SINCE_ANNOTATION: stamp})
        elif step.action == rr.KEEP and step.marked:
            log.info("Runtime revision in use again", revision=name)
            await self._mark(name, namespace, {})

    async def _mark(self, name: str, namespace: str, annotations: dict[str, str]) -> None:
        body: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        }
        await self._writer.apply(resources.CONTROLLER_REVISIONS, body, field_manager=FIELD_MANAGER)


def _references_changed(event_type: EventType, obj: Obj, old: Obj | None) -> bool:
    """A service came, went, or names other revisions (spec.runtime.revision, status.pinnedRevisionName)."""
    if event_type != "MODIFIED" or old is None:
        return True
    return rr.referenced_revisions([obj]) != rr.referenced_revisions([old])


def add_to_manager(
    manager: Manager,
    cache: SharedCache,
    writer: converge.Writer,
    *,
    config_namespace: str,
    retention: int = DEFAULT_RETENTION,
    grace: timedelta = DEFAULT_GRACE,
) -> Controller:
    gc = RevisionGC(
        reader=cache, writer=writer, config_namespace=config_namespace, retention=retention, grace=grace
    )
    controller = Controller(NAME, gc)

    def singleton(_: Obj) -> Iterable[Request]:
        return [gc.request]

    revisions = cache.informer_for(
        resources.CONTROLLER_REVISIONS, namespace=config_namespace, label_selector=REVISION_SELECTOR
    )
    controller.watches(revisions, singleton, predicates.resource_version_changed)
    controller.watches(cache.informer_for(resources.INFERENCE_SERVICES), singleton, _references_changed)
    manager.add_controller(controller)
    return controller
