"""A replica's children of one kind, and its revisions by hash, from the cache's owner index (the
InferenceReplica, Instance rollout, migration and reset reconcilers read them the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ome.api.resources import CONTROLLER_REVISIONS
from ome.framework.cache import SharedCache
from ome.framework.resources import Resource
from ome.framework.store import OWNER_INDEX
from ome.omenative import instance_names as names
from ome.omenative import revisions
from ome.omenative.revisions import RevisionData

Obj = dict[str, Any]


def owned_children(cache: SharedCache, res: Resource, replica: Mapping[str, Any]) -> list[Obj]:
    meta = replica["metadata"]
    return cache.list(res, meta["namespace"], index=(OWNER_INDEX, meta["uid"]))


def owned_revisions(cache: SharedCache, replica: Mapping[str, Any]) -> dict[str, RevisionData]:
    """The replica's ControllerRevisions' data by revision hash."""
    return {
        (r["metadata"].get("labels") or {}).get(names.REVISION_HASH_LABEL, ""): revisions.from_json(r["data"])
        for r in owned_children(cache, CONTROLLER_REVISIONS, replica)
        if r.get("data")
    }
