"""`spec.ttlSecondsAfterCreation`: the deadline is creationTimestamp + TTL, recomputed on every reconcile.

Pure: the reconciler passes the current time. Changing or removing the field moves or cancels the
deadline; the clock always counts from creation, never from the edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ome.framework.timefmt import parse_time

EVENT_REASON: Final = "TTLExpired"


@dataclass(frozen=True, slots=True)
class TTLState:
    ttl: int
    expired: bool
    remaining: float
    """Seconds until the deadline (<= 0 once expired)."""


def message(ttl: int) -> str:
    return f"Deleted because ttlSecondsAfterCreation={ttl} has passed"


def check(isvc: Mapping[str, Any], now: datetime) -> TTLState | None:
    """None when the InferenceService has no TTL (or no creationTimestamp yet)."""
    ttl = (isvc.get("spec") or {}).get("ttlSecondsAfterCreation")
    created = (isvc.get("metadata") or {}).get("creationTimestamp")
    if ttl is None or not created:
        return None
    remaining = parse_time(created).timestamp() + int(ttl) - now.timestamp()
    return TTLState(ttl=int(ttl), expired=remaining <= 0, remaining=remaining)
