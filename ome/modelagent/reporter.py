"""How the agent tells the cluster about a model on its node: the node label and the ConfigMap entry.

The label (`Updating`, `Ready`, `Failed`) is what serving pods select on, written as a JSON patch on just
that label so the agent never overwrites anyone else's labels. The entry in the node's status ConfigMap
carries the detail the reconciler shows: config, progress, failure message. Both writes are idempotent:
the reporter remembers what it last wrote and skips a write that would change nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import structlog

from ome.framework import errors, resources
from ome.framework.client import PatchType
from ome.framework.resources import Resource
from ome.models import labels
from ome.models.entries import Entry

Obj = dict[str, Any]
log = structlog.get_logger("modelagent.reporter")


class ApiClient(Protocol):
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj: ...

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj: ...

    async def patch(self, res: Resource, name: str, patch: Obj | list[Obj], namespace: str | None = None, *,
                    patch_type: PatchType = "merge", idempotent: bool = False) -> Obj: ...


class NodeReporter:
    """Writes one node's model labels and its status ConfigMap (named after the node)."""

    def __init__(self, client: ApiClient, node: str, namespace: str) -> None:
        self._client = client
        self.node = node
        self._namespace = namespace
        self._labels: dict[str, str | None] = {}
        self._entries: dict[str, str | None] = {}
        self._lock = asyncio.Lock()  # one ConfigMap: serialise its create-or-patch

    def seed_labels(self, node_labels: dict[str, str]) -> None:
        """Start from the node's labels as read at startup, so unchanged ones are not rewritten."""
        self._labels.update({k: v for k, v in node_labels.items() if k.startswith(labels.DOMAIN + "/")})

    @property
    def model_labels(self) -> dict[str, str]:
        return {k: v for k, v in self._labels.items() if v is not None}

    async def report(self, label_key: str, cm_key: str, entry: Entry) -> None:
        """The detail first, then the label: when the label (the authority) flips, the reason and config
        behind it are already readable, so the model status shows them in the same update."""
        await self.set_entry(cm_key, entry)
        await self.set_label(label_key, entry.status)

    async def forget(self, label_key: str, cm_key: str) -> None:
        await self.set_label(label_key, None)
        await self.set_entry(cm_key, None)

    async def set_label(self, key: str, value: str | None) -> None:
        if key in self._labels and self._labels[key] == value:
            return
        path = labels.json_pointer(key)
        # "add" sets or replaces; "remove" of an absent label fails with 422, which means done.
        ops: list[Obj] = [{"op": "add", "path": path, "value": value} if value is not None
                          else {"op": "remove", "path": path}]
        try:
            # Setting (or removing) one label twice is the same as once: the client's retry policy may
            # resend it after a dropped connection.
            await self._client.patch(resources.NODES, self.node, ops, patch_type="json", idempotent=True)
        except errors.ApiError as exc:
            if value is None and exc.status in (404, 422):
                pass  # already gone (or the node is): removing is done
            else:
                raise
        self._labels[key] = value
        log.info("node label set", node=self.node, label=key, value=value)

    async def set_entry(self, key: str, entry: Entry | None) -> None:
        raw = entry.dumps() if entry is not None else None
        if key in self._entries and self._entries[key] == raw:
            return
        async with self._lock:
            await self._write_entry(key, raw)
        self._entries[key] = raw

    async def _write_entry(self, key: str, raw: str | None) -> None:
        try:
            await self._client.patch(resources.CONFIGMAPS, self.node, {"data": {key: raw}}, self._namespace)
        except errors.NotFound:
            if raw is None:
                return
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": self.node, "namespace": self._namespace,
                                 "labels": {labels.STATUS_CONFIGMAP_LABEL: "true"}},
                    "data": {key: raw}}
            try:
                await self._client.create(resources.CONFIGMAPS, body, self._namespace)
            except errors.AlreadyExists:  # created between our patch and create: patch it now
                await self._client.patch(resources.CONFIGMAPS, self.node, {"data": {key: raw}},
                                         self._namespace)
