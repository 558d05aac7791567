"""The model status reconciler: node labels and node reports in, BaseModel/ClusterBaseModel status out.

I/O only; the decisions are in `ome.models.status`. One reconciler serves both kinds: a request with a
namespace is a BaseModel, one without is a ClusterBaseModel. Every read comes from the cache (Nodes are
metadata-only and keep only `models.ome.io/` labels); every write is a merge patch, and only when the
result differs from what is stored, so a reconcile with nothing new makes no API call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.framework import errors, timefmt
from ome.framework.reconcile import Request, Result
from ome.models import labels, status, storage
from ome.models.entries import Entry
from ome.models.status import NodeReport

Obj = dict[str, Any]
log = structlog.get_logger("nodeagent")

FINALIZERS: Final = {"BaseModel": "basemodels.ome.io/finalizer",
                     "ClusterBaseModel": "clusterbasemodels.ome.io/finalizer"}
DELETION_RECHECK_SECONDS: Final = 30.0
"""A deleting model whose nodes still report it is re-checked this often, besides on every node event."""


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(self, res: Resource, namespace: str | None = None, *,
             label_selector: Mapping[str, str] | None = None,
             index: tuple[str, str] | None = None) -> list[Obj]: ...


class Writer(Protocol):
    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj: ...


def resource_for(req: Request) -> Resource:
    return resources.BASE_MODELS if req.namespace else resources.CLUSTER_BASE_MODELS


def _now() -> str:
    return timefmt.now()


class ModelStatusReconciler:
    """Aggregates node reports into model status, fills empty spec fields, and holds deletion."""

    def __init__(self, reader: Reader, writer: Writer, *, config_namespace: str = "ome") -> None:
        self._reader = reader
        self._writer = writer
        self._config_namespace = config_namespace

    async def reconcile(self, req: Request) -> Result:
        res = resource_for(req)
        model = self._reader.get_or_none(res, req.name, req.namespace or None)
        if model is None:
            return Result()
        kind = labels.kind_of_namespace(req.namespace)
        if model["metadata"].get("deletionTimestamp"):
            return await self._finalize(res, kind, model)
        # A metadata or spec write ends the pass: its own watch event brings the next one, which then
        # reads the written object (writing status from this, now stale, copy would only be redone).
        if await self._ensure_finalizer(res, kind, model):
            return Result()
        if storage.is_pvc(model):
            return Result()  # its status is the metadata controller's (ome/controllers/modelmetadata)
        reports = self.reports(kind, model)
        if await self._fill_spec(res, model, reports):
            return Result()
        await self._write_status(res, model, status.from_nodes(reports))
        return Result()

    def reports(self, kind: str, model: Obj) -> list[NodeReport]:
        """What every existing node says about the model; nodes that say nothing are left out."""
        meta = model["metadata"]
        label_key = labels.model_label_key(kind, meta["name"], meta.get("namespace"))
        cm_key = labels.configmap_key(kind, meta["name"], meta.get("namespace"))
        found = []
        for node in self._reader.list(resources.NODES):
            name = node["metadata"]["name"]
            label = (node["metadata"].get("labels") or {}).get(label_key)
            entry = self._entry(name, cm_key)
            if label is not None or entry is not None:
                found.append(NodeReport(name, label, entry))
        return found

    def _entry(self, node: str, key: str) -> Entry | None:
        # A ConfigMap whose node is gone is never read: reports are keyed by the nodes that exist.
        cm = self._reader.get_or_none(resources.CONFIGMAPS, node, self._config_namespace)
        raw = ((cm or {}).get("data") or {}).get(key)
        return Entry.loads(raw) if raw else None

    async def _ensure_finalizer(self, res: Resource, kind: str, model: Obj) -> bool:
        meta = model["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZERS[kind] in finalizers:
            return False
        patch = {"metadata": {"finalizers": [*finalizers, FINALIZERS[kind]],
                              "resourceVersion": meta["resourceVersion"]}}
        await self._writer.patch(res, meta["name"], patch, meta.get("namespace"))
        return True

    async def _finalize(self, res: Resource, kind: str, model: Obj) -> Result:
        meta = model["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZERS[kind] not in finalizers:
            return Result()
        holding = [r.node for r in self.reports(kind, model) if r.holds_model]
        bound = log.bind(kind=kind, name=meta["name"], namespace=meta.get("namespace"))
        if holding:
            bound.info("model deletion waits for nodes", nodes=holding)
            return Result(requeue_after=DELETION_RECHECK_SECONDS)
        finalizers.remove(FINALIZERS[kind])
        # The resourceVersion makes this a conditional write: a node report racing in gets a 409 and a retry.
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        try:
            await self._writer.patch(res, meta["name"], patch, meta.get("namespace"))
        except errors.NotFound:
            return Result()
        bound.info("model released", finalizer=FINALIZERS[kind])
        return Result()

    async def _fill_spec(self, res: Resource, model: Obj, reports: list[NodeReport]) -> bool:
        """Copy the first Ready node's config into empty spec fields; True when it wrote."""
        meta = model["metadata"]
        if (meta.get("annotations") or {}).get(status.SKIP_CONFIG_PARSING) == "true":
            return False
        config = next((r.entry.config for r in sorted(reports, key=lambda r: r.node)
                       if r.label == labels.READY and r.entry and r.entry.config), None)
        fill = status.spec_fill(model.get("spec") or {}, config) if config else {}
        if not fill:
            return False
        await self._writer.patch(res, meta["name"], {"spec": fill}, meta.get("namespace"))
        log.info("model spec filled from its config", name=meta["name"], namespace=meta.get("namespace"),
                 fields=sorted(fill))
        return True

    async def _write_status(self, res: Resource, model: Obj, verdict: status.Verdict) -> None:
        desired = status.desired_status(model, verdict, _now())
        if not status.status_differs(model, desired):
            return
        meta = model["metadata"]
        await self._writer.patch(res, meta["name"], {"status": desired}, meta.get("namespace"),
                                 subresource="status")
        log.info("model status updated", name=meta["name"], namespace=meta.get("namespace"),
                 state=verdict.state, reason=verdict.reason, nodes_ready=len(verdict.nodes_ready),
                 nodes_failed=len(verdict.nodes_failed))
