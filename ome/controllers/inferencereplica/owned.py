"""A replica's children of one kind, from the cache's owner index (the InferenceReplica and Instance
rollout reconcilers read them the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ome.framework.cache import SharedCache
from ome.framework.resources import Resource
from ome.framework.store import OWNER_INDEX

Obj = dict[str, Any]


def owned_children(cache: SharedCache, res: Resource, replica: Mapping[str, Any]) -> list[Obj]:
    meta = replica["metadata"]
    return cache.list(res, meta["namespace"], index=(OWNER_INDEX, meta["uid"]))
