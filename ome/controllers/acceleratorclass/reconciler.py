"""The AcceleratorClass status reconciler: reads the class and the cached nodes, patches status.

One merge patch of the status subresource, only when the node list changed; everything else is in
`matching`. A class being deleted is left alone (there is no finalizer: deleting a class is immediate).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.controllers.acceleratorclass import matching
from ome.framework import timefmt
from ome.framework.reconcile import Request, Result

Obj = dict[str, Any]
log = structlog.get_logger("acceleratorclass")


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...


class Writer(Protocol):
    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj: ...


class AcceleratorClassStatusReconciler:
    def __init__(self, reader: Reader, writer: Writer, nodes: Callable[[], Iterable[Obj]], *,
                 clock: Callable[[], str] = timefmt.now) -> None:
        self._reader = reader
        self._writer = writer
        self._nodes = nodes
        self._clock = clock

    async def reconcile(self, req: Request) -> Result:
        found = self._reader.get_or_none(resources.ACCELERATOR_CLASSES, req.name)
        if found is None or (found.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        names = matching.matching_nodes(found, self._nodes())
        patch = matching.status_patch(found.get("status"), names, self._clock())
        if patch is None:
            return Result()
        await self._writer.patch(resources.ACCELERATOR_CLASSES, req.name, {"status": patch},
                                 subresource="status")
        log.info("accelerator class nodes changed", acceleratorclass=req.name, nodes=names)
        return Result()
