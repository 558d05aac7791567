"""What an Instance's operation waits on, and when a wait is worth a log line (pure).

`waiting_on(row, pods, data)` names what holds an Instance that is not Ready (its old pods leaving,
its pods being created, running, their containers, the serving gate, minReadySeconds, a retry).
`WaitLog` decides when a wait is logged: once it has lasted `after` seconds, and again every `every`
seconds while it lasts, per Instance. A wait that ends within `after` (a normal create or restart on a
healthy cluster) is never logged; the reconciler asks `WaitLog.wake` for the moment the next line is
due, so a stall that brings no events still produces its line.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ome.omenative.pods_view import PodView
from ome.omenative.revisions import RevisionData

Row = Mapping[str, Any]

_NOT_WAITING = ("Ready",)


def _names(pods: Iterable[PodView]) -> str:
    return ", ".join(sorted(p.name for p in pods))


def waiting_on(row: Row, pods: list[PodView], data: RevisionData | None) -> str | None:
    """What the Instance of `row` waits on, given its pods (every pod labelled with its index);
    None when it waits on nothing (Ready)."""
    phase = row.get("phase")
    if phase in _NOT_WAITING:
        return None
    if phase == "Deleting":
        serving = [p for p in pods if not p.terminating and not p.drained]
        if serving:
            return f"pods to leave rotation: {_names(serving)}"
        return f"pods to terminate: {_names(pods)}" if pods else None
    if phase == "Failed":
        return "the retry of its failed operation (or a spec change)"
    incarnation = row.get("incarnation")
    old = [p for p in pods if p.incarnation != incarnation]
    if old:
        leaving = [p for p in old if not p.terminating and not p.drained]
        if leaving:
            return f"pods of the previous incarnation to leave rotation: {_names(leaving)}"
        return f"pods of the previous incarnation to terminate: {_names(old)}"
    current = [p for p in pods if not p.terminating]
    expected = data.pod_count if data is not None else len(current)
    if len(current) < expected:
        return f"pod creations to be observed ({len(current)}/{expected} pods exist)"
    for what, stuck in (
        ("pods to run", [p for p in current if p.phase != "Running"]),
        ("containers to be ready", [p for p in current if not p.containers_ready]),
        ("Ready to follow the serving gate", [p for p in current if not p.serving]),
    ):
        if stuck:
            return f"{what}: {_names(stuck)}"
    return "minReadySeconds of its pods"


@dataclass(slots=True)
class _Seen:
    reason: str
    since: datetime
    logged: datetime | None = None


@dataclass(frozen=True, slots=True)
class Due:
    instance: Hashable
    reason: str
    since: datetime


class WaitLog:
    """Per-Instance wait tracking for rate-limited log lines; one reconciler's memory."""

    def __init__(self, *, after: float = 10.0, every: float = 300.0) -> None:
        self._after = timedelta(seconds=after)
        self._every = timedelta(seconds=every)
        self._seen: dict[Hashable, dict[Hashable, _Seen]] = {}

    def update(
        self, owner: Hashable, waits: Mapping[Hashable, str], now: datetime
    ) -> tuple[list[Due], float | None]:
        """Record `owner`'s current waits (Instance -> reason); returns the waits to log now and the
        seconds until the next line is due (None: nothing waits)."""
        before = self._seen.get(owner, {})
        after: dict[Hashable, _Seen] = {}
        for instance, reason in waits.items():
            seen = before.get(instance)
            after[instance] = seen if seen is not None and seen.reason == reason else _Seen(reason, now)
        if after:
            self._seen[owner] = after
        else:
            self._seen.pop(owner, None)
        due: list[Due] = []
        wake: timedelta | None = None
        for instance, seen in after.items():
            at = seen.since + self._after if seen.logged is None else seen.logged + self._every
            if now >= at:
                seen.logged = now
                due.append(Due(instance, seen.reason, seen.since))
                at = now + self._every
            wake = at - now if wake is None else min(wake, at - now)
        return due, (wake.total_seconds() if wake is not None else None)

    def add(
        self, owner: Hashable, instance: Hashable, reason: str, now: datetime
    ) -> tuple[list[Due], float | None]:
        """Record one more wait for `owner` and keep the others as they are: a pass that stops before
        it plans the Instances (the cache behind, expectations pending) knows nothing new about theirs,
        and replacing them would restart their clocks at every such pass."""
        waits = {key: seen.reason for key, seen in self._seen.get(owner, {}).items()}
        waits[instance] = reason
        return self.update(owner, waits, now)

    def forget(self, owner: Hashable) -> None:
        self._seen.pop(owner, None)
