"""The inheritance status reconciler of ServingRuntimes and ClusterServingRuntimes (runtime-inheritance.md,
"When a chain breaks"). I/O only; the chain and the status come from `ome.resolution.runtime_inheritance`.

A request with a namespace is a ServingRuntime, one without a ClusterServingRuntime. Every read is from
the cache; the status is merge-patched only when it differs from what is stored, and a broken chain's
warning event (reason: the InheritanceReady reason, message: the chain's error) goes with that write, so
a runtime whose chain stays as it was costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.framework import errors, timefmt
from ome.framework.reconcile import Request, Result
from ome.resolution import runtime_inheritance as inheritance

Obj = dict[str, Any]
log = structlog.get_logger("runtimeinheritance")


class Writer(Protocol):
    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj: ...


class Recorder(Protocol):
    def event(self, obj: Obj, type_: Any, reason: str, message: str) -> None: ...


class InheritanceStatusReconciler:
    def __init__(self, reader: inheritance.Reader, writer: Writer, recorder: Recorder, *,
                 clock: Callable[[], str] = timefmt.now) -> None:
        self._reader = reader
        self._writer = writer
        self._recorder = recorder
        self._clock = clock

    async def reconcile(self, req: Request) -> Result:
        if req.namespace:
            res, kind = resources.SERVING_RUNTIMES, inheritance.SERVING_RUNTIME
        else:
            res, kind = resources.CLUSTER_SERVING_RUNTIMES, inheritance.CLUSTER_SERVING_RUNTIME
        runtime = self._reader.get_or_none(res, req.name, req.namespace or None)
        if runtime is None or runtime["metadata"].get("deletionTimestamp"):
            return Result()
        links: list[inheritance.Link] | None = None
        error: Exception | None = None
        try:
            links = inheritance.chain(self._reader, kind, runtime)
        except inheritance.InheritanceError as exc:
            error = exc
        desired = inheritance.inheritance_status(runtime, links, error, self._clock())
        current = runtime.get("status") or {}
        if all(current.get(k) == v for k, v in desired.items()):
            return Result()
        bound = log.bind(kind=kind, name=req.name, namespace=req.namespace or None)
        try:
            await self._writer.patch(res, req.name, {"status": desired}, req.namespace or None,
                                     subresource="status")
        except errors.NotFound:
            return Result()
        if error is not None:
            reason = inheritance.classify(error)
            bound.info("inheritance resolution failed", reason=reason, error=str(error))
            self._recorder.event(runtime, "Warning", reason, str(error))
        else:
            bound.info("inheritance chain resolved", chain=desired.get("inheritanceChain"))
        return Result()


__all__ = ["InheritanceStatusReconciler"]
