"""A replica's ControllerRevisions: the revision data its Instances run, by hash.

The spec's revision is recorded before anything is planned from it; when another object holds its
name, status.collisionCount goes up instead and the next pass hashes again. Revisions no live Instance
runs or targets are pruned down to spec.revisionHistoryLimit (else the operator's limit).
"""

from __future__ import annotations

import contextlib
from typing import Any

import structlog

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_REPLICAS
from ome.controllers.inferencereplica.owned import owned_children, owned_revisions
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.omenative import revisions
from ome.omenative.revisions import RevisionData
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.inferencereplica")


class RevisionHistory:
    def __init__(self, client: Client, cache: SharedCache, settings: InferenceReplicaSettings) -> None:
        self._client = client
        self._cache = cache
        self._settings = settings
        self.writes = 0
        """API writes made, for the reconciler's count."""

    def known(self, replica: Obj) -> dict[str, RevisionData]:
        return owned_revisions(self._cache, replica)

    async def ensure(self, replica: Obj, data: RevisionData, digest: str) -> dict[str, RevisionData] | None:
        """Revision data by hash: every owned ControllerRevision plus the spec's (`digest`), created if
        new. None when another object holds the spec's revision name: status.collisionCount goes up
        instead."""
        known = self.known(replica)
        if digest in known:
            return known
        owned = owned_children(self._cache, CONTROLLER_REVISIONS, replica)
        body = revisions.controller_revision(replica, data, revisions.next_number(owned), digest)
        meta = body["metadata"]
        try:
            await self._client.create(CONTROLLER_REVISIONS, body, meta["namespace"])
            self.writes += 1
        except errors.AlreadyExists:
            existing = await self._client.get(CONTROLLER_REVISIONS, meta["name"], meta["namespace"])
            if not revisions.is_ours(existing, replica, data):
                await self._bump_collision_count(replica)
                return None
        known[digest] = data
        return known

    async def _bump_collision_count(self, replica: Obj) -> None:
        count = revisions.collision_count(replica) + 1
        body = {**replica, "status": {**(replica.get("status") or {}), "collisionCount": count}}
        await self._client.update_status(INFERENCE_REPLICAS, body)
        self.writes += 1
        log.info("controllerrevision name collision", name=replica["metadata"]["name"], collision_count=count)

    async def prune(self, replica: Obj, rows: list[Obj], update: str) -> None:
        live = {update, (replica.get("status") or {}).get("currentRevision") or update}
        live |= {r.get("runningRevision") or "" for r in rows} | {r.get("targetRevision") or "" for r in rows}
        limit = (replica.get("spec") or {}).get(
            "revisionHistoryLimit"
        ) or self._settings.revision_history_limit
        ns = replica["metadata"]["namespace"]
        owned = owned_children(self._cache, CONTROLLER_REVISIONS, replica)
        for name in revisions.prunable(owned, live, limit):
            with contextlib.suppress(errors.NotFound):
                await self._client.delete(CONTROLLER_REVISIONS, name, ns)
                self.writes += 1
