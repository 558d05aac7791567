"""The model agent's reconciler: one node, every model that selects it.

A reconcile never waits for a download. It decides, from the cache, whether this node should hold the
model, and starts, restarts, cancels or cleans up a per-model task; the tasks run under a semaphore (the
download workers). A task labels the node `Updating`, prepares the weights, then labels it `Ready` or
`Failed` with a reason. A cancelled task (the model was deleted or changed) reports nothing: it is not a
failure. A model is prepared again only when something that decides its files changes (its labels,
annotations, or storage other than the node selection), as the docs describe; descriptive edits do not.

The node's labels are read from the cache on every reconcile (the agent watches its own Node), so a
label change that makes a model select, or stop selecting, this node takes effect at once.

Nothing here blocks the event loop: deleting weights runs in a thread. A download slot (the semaphore)
is held until the download's thread has ended, even when its task was cancelled, so no more downloads
run at once than configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog

from ome.api.resources import BASE_MODELS, CLUSTER_BASE_MODELS, NODES, Resource
from ome.framework.reconcile import Request, Result
from ome.modelagent import prepare, staging
from ome.modelagent.prepare import PrepareError, PrepareSettings, SecretReader
from ome.modelagent.reporter import NodeReporter
from ome.models import labels, selection, storage
from ome.models.entries import Entry, Progress

Obj = dict[str, Any]
log = structlog.get_logger("modelagent")
RESERVE_ARTIFACT_LABEL = "models.ome/reserve-model-artifact"


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(self, res: Resource, namespace: str | None = None) -> list[Obj]: ...


@dataclass(frozen=True, slots=True)
class Keys:
    label: str
    entry: str

    @classmethod
    def of(cls, req: Request) -> Keys:
        kind = labels.kind_of_namespace(req.namespace)
        ns = req.namespace or None
        return cls(labels.model_label_key(kind, req.name, ns), labels.configmap_key(kind, req.name, ns))


def fingerprint(model: Obj) -> str:
    """What decides the model's files on a node; a change means the node prepares the model again."""
    meta = model["metadata"]
    spec = dict(storage.storage_of(model))
    for key in ("nodeSelector", "nodeAffinity"):
        spec.pop(key, None)
    if storage.scheme_of(spec.get("storageUri") or "") != "hf":
        spec.pop("downloadPolicy", None)  # documented: a downloadPolicy change matters only for hf://
    facts = {"labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {},
             "storage": spec}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def eligible(model: Obj, node: str, node_labels: dict[str, str]) -> bool:
    if model["metadata"].get("deletionTimestamp") or storage.is_pvc(model):
        return False
    return selection.node_matches(storage.storage_of(model), node, node_labels)


class ModelAgent:
    """Reconciler over (Cluster)BaseModels for one node."""

    def __init__(self, reader: Reader, reporter: NodeReporter, secrets: SecretReader, *,
                 settings: PrepareSettings, workers: int = 2,
                 node_labels: dict[str, str] | None = None) -> None:
        """`node_labels` stand in for the node's until the cache holds it (tests pass them alone)."""
        self._reader = reader
        self._reporter = reporter
        self._secrets = secrets
        self._fallback_labels = dict(node_labels or {})
        self._seeded = False
        self._settings = settings
        self._slots = asyncio.Semaphore(workers)
        self._tasks: dict[Request, tuple[str, asyncio.Task[None]]] = {}
        self._prepared: dict[Request, str] = {}
        self._paths: dict[Request, str] = {}

    def node_labels(self) -> dict[str, str]:
        """This node's labels as cached now; the first read also tells the reporter which labels exist."""
        node = self._reader.get_or_none(NODES, self._reporter.node)
        if node is None:
            return self._fallback_labels
        found = dict(node["metadata"].get("labels") or {})
        if not self._seeded:
            self._reporter.seed_labels(found)
            self._seeded = True
        return found

    async def reconcile(self, req: Request) -> Result:
        res = BASE_MODELS if req.namespace else CLUSTER_BASE_MODELS
        model = self._reader.get_or_none(res, req.name, req.namespace or None)
        if model is None or not eligible(model, self._reporter.node, self.node_labels()):
            await self.release(req, model)
            return Result()
        fp = fingerprint(model)
        running = self._tasks.get(req)
        if self._prepared.get(req) == fp or (running is not None and running[0] == fp):
            return Result()
        await self._cancel(req)
        self._paths[req] = storage.target_dir(model, self._settings.models_root)
        task = asyncio.create_task(self._run(req, model, fp), name=f"model-agent:{req}")
        self._tasks[req] = (fp, task)
        return Result()

    async def release(self, req: Request, model: Obj | None) -> None:
        """This node no longer holds the model: stop its work, delete downloaded files, drop the reports."""
        keys = Keys.of(req)
        known = req in self._tasks or req in self._prepared or keys.label in self._reporter.model_labels
        if not known:
            return
        await self._cancel(req)
        self._prepared.pop(req, None)
        path = self._paths.pop(req, None)
        if model is not None and path is not None and self._may_delete_files(model, path):
            # Weights are gigabytes: deleting them takes seconds, never on the event loop.
            await asyncio.to_thread(staging.remove_tree, Path(path))
            await asyncio.to_thread(staging.remove_tree, staging.staging_dir(Path(path)))
            log.info("model files deleted", model=str(req), path=path)
        await self._reporter.forget(keys.label, keys.entry)
        log.info("model released on node", model=str(req), node=self._reporter.node)

    def _may_delete_files(self, model: Obj, path: str) -> bool:
        """Only downloaded (hf://) copies, not reserved ones, and not a path another model still uses."""
        if storage.scheme_of(storage.storage_of(model).get("storageUri") or "") != "hf":
            return False
        if (model["metadata"].get("labels") or {}).get(RESERVE_ARTIFACT_LABEL) == "true":
            return False
        me = model["metadata"].get("uid")
        for res in (BASE_MODELS, CLUSTER_BASE_MODELS):
            for other in self._reader.list(res):
                if other["metadata"].get("uid") != me and storage.storage_of(other).get("path") == path:
                    return False
        return True

    async def _cancel(self, req: Request) -> None:
        entry = self._tasks.pop(req, None)
        if entry is None:
            return
        entry[1].cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await entry[1]

    async def _run(self, req: Request, model: Obj, fp: str) -> None:
        keys, bound = Keys.of(req), log.bind(model=str(req), node=self._reporter.node)
        uri = storage.storage_of(model).get("storageUri")
        await self._reporter.report(keys.label, keys.entry, Entry(req.name, labels.UPDATING))
        try:
            async with self._slots:
                bound.info("status to Updating before download", storage_uri=uri)
                sink = self._progress(req, keys)
                config = await prepare.prepare(model, self._settings, self._secrets, sink)
        except PrepareError as exc:
            bound.error("model failed on node", reason=str(exc))
            await self._fail(req, keys, fp, str(exc))
            return
        except asyncio.CancelledError:
            bound.info("model work cancelled")
            raise
        except Exception as exc:  # a bug or an I/O surprise must still end in Failed, never a stuck Updating
            bound.exception("model preparation crashed")
            await self._fail(req, keys, fp, f"internal error: {type(exc).__name__}: {exc}")
            return
        config_json = config.to_json() if config else None
        await self._reporter.report(keys.label, keys.entry, Entry(req.name, labels.READY, config=config_json))
        self._prepared[req] = fp
        bound.info("model ready on node", architecture=config.architecture if config else None,
                   parameter_size=config.parameter_size if config else None)

    async def _fail(self, req: Request, keys: Keys, fp: str, message: str) -> None:
        await self._reporter.report(keys.label, keys.entry, Entry(req.name, labels.FAILED, message=message))
        self._prepared[req] = fp  # retried only when the model changes or the agent restarts (as documented)

    def _progress(self, req: Request, keys: Keys) -> prepare.ProgressSink:
        async def sink(progress: Progress) -> None:
            await self._reporter.set_entry(keys.entry, Entry(req.name, labels.UPDATING, progress=progress))

        return sink

    async def aclose(self) -> None:
        for req in list(self._tasks):
            await self._cancel(req)
