"""Update retries (pure): which failures count against a revision, retry blocks, holds and releases.

Only failures the revision itself causes count as attempts (`REVISION_FAULTS`): an image that cannot be
pulled or is invalid, a missing Secret/ConfigMap, a pod spec the API server rejects. Failures a node or
its GPUs can cause too (a crash loop, a missed deadline, no room to schedule) back off but never hold.

A retry block per target revision (`status.retryBlocks`):

    (none) --failure--> Backoff --nextRetryAt passed, one start--> RetryInProgress --failure--> Backoff
    Backoff/RetryInProgress --revision fault, attempts >= maxAttempts--> Held
    Held --release annotation--> (none);  any block --newer update revision--> (none)
    RetryInProgress --the attempt succeeds--> (none)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from ome.omenative.pods_view import format_time, parse_time

Block = dict[str, Any]

REVISION_FAULTS: Final = frozenset(
    {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError", "InvalidPodSpec"}
)
RELEASE_ANNOTATION: Final = "ome.io/release-held-revision"
BACKOFF: Final = "Backoff"
IN_PROGRESS: Final = "RetryInProgress"
HELD: Final = "Held"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """lifecycle.updateRetry. None of it configured (a manifest install): the first counted failure holds."""

    max_attempts: int = 1
    initial_delay: float = 60.0
    multiplier: float = 2.0
    max_delay: float = 1800.0

    def delay(self, attempts: int) -> float:
        """Wait after the `attempts`-th failure: 1m after the first, 2m after the second (chart)."""
        return min(self.initial_delay * self.multiplier ** max(attempts - 1, 0), self.max_delay)


def counts_against_revision(reason: str | None) -> bool:
    return reason in REVISION_FAULTS


def find(blocks: Iterable[Block], revision: str) -> Block | None:
    return next((b for b in blocks if b.get("targetRevision") == revision), None)


def replace(blocks: Iterable[Block], new: Block | None, revision: str) -> list[Block]:
    kept = [b for b in blocks if b.get("targetRevision") != revision]
    if new is not None:
        kept.append(new)
    return sorted(kept, key=lambda b: str(b.get("targetRevision")))


def for_update_revision(blocks: Iterable[Block], update_revision: str) -> list[Block]:
    """A newer revision replaces every block of an older one."""
    return [b for b in blocks if b.get("targetRevision") == update_revision]


def start_allowed(block: Block | None, now: datetime) -> tuple[bool, str | None]:
    """(may a fresh start toward the block's revision begin, the hold gate when not)."""
    if block is None:
        return True, None
    state = block.get("state")
    if state == HELD:
        return False, "Held"
    if state == IN_PROGRESS:
        return False, "RetryBlock"  # one attempt at a time
    due = parse_time(block.get("nextRetryAt"))
    if due is not None and now < due:
        return False, "RetryBlock"
    return True, None


def started(block: Block | None) -> Block | None:
    """An attempt starts under a block: it is RetryInProgress and counts one more attempt."""
    if block is None:
        return None
    out = {k: v for k, v in block.items() if k != "nextRetryAt"}
    out.update(state=IN_PROGRESS, attemptsStarted=int(block.get("attemptsStarted") or 0) + 1)
    return out


def failed(block: Block | None, revision: str, reason: str, policy: RetryPolicy, now: datetime) -> Block:
    """The block after an attempt failed for `reason`."""
    attempts = int((block or {}).get("attemptsStarted") or 1)
    out: Block = {
        "targetRevision": revision,
        "attemptsStarted": attempts,
        "firstFailureAt": (block or {}).get("firstFailureAt") or format_time(now),
        "lastFailureAt": format_time(now),
        "reason": reason,
    }
    if counts_against_revision(reason) and attempts >= policy.max_attempts:
        out["state"] = HELD
        return out
    out["state"] = BACKOFF
    out["nextRetryAt"] = format_time(now + timedelta(seconds=policy.delay(attempts)))
    return out


def wake_after(block: Block | None, now: datetime) -> float | None:
    due = parse_time((block or {}).get("nextRetryAt"))
    if block is None or block.get("state") != BACKOFF or due is None:
        return None
    return max((due - now).total_seconds(), 0.0)


def hold_reason(block: Block) -> str:
    state = {HELD: "held", IN_PROGRESS: "retrying one attempt at a time", BACKOFF: "in backoff"}.get(
        str(block.get("state")), "in backoff"
    )
    return (
        f"update to {block.get('targetRevision')} {state} after {block.get('attemptsStarted')} failed "
        f"attempt(s): {block.get('reason') or ''}"
    )


def held_message(namespace: str, replica: str, component: str, block: Block) -> str:
    """The RetryHeld warning on the InferenceService."""
    return (
        f"InferenceReplica {namespace}/{replica} component={component} update to revision "
        f"{block['targetRevision']} held after {block['attemptsStarted']} failed attempt(s) (last failure: "
        f"{block.get('reason')}); publish a corrected revision or raise lifecycle.updateRetry limits"
    )


# -- release ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Release:
    blocks: list[Block]
    event: tuple[str, str, str]
    """(type, reason, message) recorded on the InferenceService."""


def matches(value: str, revision: str) -> bool:
    """The annotation names a revision by its full name or its 8-hex hash."""
    return value == revision or (len(value) == 8 and revision.endswith("-" + value))


def release(
    annotations: Mapping[str, str], blocks: list[Block], namespace: str, replica: str, component: str
) -> Release | None:
    """Answer an `ome.io/release-held-revision` request (None when there is none)."""
    value = (annotations.get(RELEASE_ANNOTATION) or "").strip()
    if RELEASE_ANNOTATION not in annotations:
        return None
    prefix = f"InferenceReplica {namespace}/{replica} component={component}: "
    block = next((b for b in blocks if value and matches(value, str(b.get("targetRevision")))), None)
    if block is None:
        return Release(
            blocks,
            (
                "Normal",
                "RetryBlockReleaseSkipped",
                prefix + f'release requested for revision "{value}" but no retryBlock exists for it; '
                "nothing to release",
            ),
        )
    name = str(block["targetRevision"])
    if block.get("state") != HELD:
        return Release(
            blocks,
            (
                "Normal",
                "RetryBlockReleaseSkipped",
                prefix
                + f"retryBlock for revision {name} is {block.get('state')}, not Held; nothing to release",
            ),
        )
    return Release(
        [b for b in blocks if b is not block],
        (
            "Normal",
            "RetryBlockReleased",
            prefix + f"Held retryBlock for revision {name} removed at operator request "
            "(ome.io/release-held-revision annotation)",
        ),
    )
