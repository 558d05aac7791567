"""What a waiting replica leaves in the log at the default level.

An Instance operation (or the replica's pass, held on the cache or on expectations) that has waited
for a while is logged with what it waits on and since when, at most once per `WaitLog.every` per
Instance (`ome.omenative.waits`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from datetime import datetime
from typing import Any

import structlog

from ome.omenative import instance_names as names
from ome.omenative import instances, waits
from ome.omenative.pods_view import PodView, format_time

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.inferencereplica")


class WaitReport:
    def __init__(self, wait_log: waits.WaitLog, now: Callable[[], datetime]) -> None:
        self._waits = wait_log
        self._now = now

    def forget(self, key: tuple[str, str]) -> None:
        self._waits.forget(key)

    def instances(
        self, key: tuple[str, str], ctx: instances.Context, plan: instances.Plan, pods: list[PodView]
    ) -> float | None:
        """The planned Instances' waits; returns when the next line is due."""
        by_index: dict[int, list[PodView]] = {}
        for pod in pods:
            by_index.setdefault(pod.index, []).append(pod)
        found: dict[Hashable, str] = {}
        ops: dict[Hashable, Obj] = {}
        for row in plan.rows:
            data = ctx.revisions.get(names.hash_of_revision(row.get("runningRevision") or ""))
            reason = waits.waiting_on(row, by_index.get(int(row["index"]), []), data)
            if reason is not None:
                found[int(row["index"])] = reason
                ops[int(row["index"])] = row
        return self._report(key, *self._waits.update(key, found, self._now()), ops)

    def gate(self, key: tuple[str, str], gate: str, reason: str) -> float | None:
        """A pass held before planning: its wait joins the Instances' (`WaitLog.add`)."""
        return self._report(key, *self._waits.add(key, gate, reason, self._now()))

    def _report(
        self, key: tuple[str, str], due: list[waits.Due], wake: float | None,
        rows: Mapping[Hashable, Obj] | None = None,
    ) -> float | None:
        """Log the waits that are due (see `waits.WaitLog`); returns when the next line is due."""
        for wait in due:
            row = (rows or {}).get(wait.instance) or {}
            operation = row.get("operation") or {}
            log.info(
                "InferenceReplica waiting",
                key=f"{key[0]}/{key[1]}",
                instance=wait.instance,
                phase=row.get("phase"),
                operation=operation.get("type"),
                step=operation.get("step"),
                waiting_on=wait.reason,
                since=format_time(wait.since),
                operation_started=operation.get("startedAt"),
            )
        return wake
