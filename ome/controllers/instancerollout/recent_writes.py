"""The Instance rollout's memory of its own recent pod writes.

The pod cache lags our writes: a pass planned from it would make a create, delete, gate write or image
patch again. A write is remembered for `RECENT` seconds, or until the cache shows it, and skipped while
remembered. Pod names repeat across incarnations, so a skipped write may be one no event retries: the
pass asks to run again by the time the memory ends (`ends`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from ome.omenative import instance_names as names

Obj = dict[str, Any]
WriteKey = tuple[str, str, str]
"""(verb, namespace, pod name); the verb is create, delete, gate-True, gate-False or patch-<hash>."""

RECENT: Final = 30.0
"""Seconds a pod write is remembered, so a pass on a cache that lags our writes does not repeat it."""


class RecentWrites:
    def __init__(self) -> None:
        self._at: dict[WriteKey, float] = {}

    def skip(self, verb: str, ns: str, name: str) -> bool:
        """Whether this write was made recently (the cache has not caught up): skip it then. Otherwise
        it is remembered as made now."""
        now = time.monotonic()
        for key in [k for k, at in self._at.items() if now - at > RECENT]:
            del self._at[key]
        key = (verb, ns, name)
        if key in self._at:
            return True
        self._at[key] = now
        return False

    def forget(self, key: WriteKey) -> None:
        """A write that failed: made again by the work queue's retry, not skipped as remembered."""
        self._at.pop(key, None)

    def forget_observed(self, pods: list[Obj]) -> None:
        """Drop remembered writes the cache now shows, so a pod can be deleted or made again at once."""
        by_name = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
        for key in list(self._at):
            verb, ns, name = key
            pod = by_name.get((ns, name))
            meta = (pod or {}).get("metadata") or {}
            conditions = {
                c.get("type"): c.get("status") for c in (pod or {}).get("status", {}).get("conditions") or []
            }
            seen = {
                "create": pod is not None,
                "delete": pod is None or bool(meta.get("deletionTimestamp")),
                "gate-True": pod is None or conditions.get(names.SERVING_GATE) == "True",
                "gate-False": pod is None or conditions.get(names.SERVING_GATE) == "False",
            }.get(verb)
            if verb.startswith("patch-"):
                seen = pod is None or (meta.get("labels") or {}).get(names.REVISION_HASH_LABEL) == verb[6:]
            if seen:
                del self._at[key]

    def ends(self, replica: Mapping[str, Any]) -> float | None:
        """Seconds until the first remembered write of this replica's pods is forgotten. A write skipped
        because of it (a pod deleted and made again under the same name looks like a delete the cache
        has not shown) is then made on a pass no event may bring, so the pass asks for one."""
        ns = replica["metadata"]["namespace"]
        prefix = names.component_name(names.base_name(replica), replica["spec"]["component"]) + "-"
        now = time.monotonic()
        left = [RECENT - (now - at) for (_, key_ns, name), at in self._at.items()
                if key_ns == ns and name.startswith(prefix)]
        return max(min(left), 0.1) if left else None
