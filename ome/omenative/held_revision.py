"""Which revision a newly started Instance runs while the update revision is held (pure).

A revision is held two ways: its updates used up their retries (a `Held` block in the InferenceReplica's
`status.retryBlocks`, `rollout_retry`), or a canary rollback rejected it (`rolledBackRevisionHash` in the
InferenceService's canary status, read by `ome.controllers.rolloutcanary.hold`). Either way OME stops
moving Instances to it and the replica's `currentRevision` keeps serving, until a newer revision replaces
it or, for a retry hold, a release. An Instance that starts meanwhile (a scale-up, a lost Instance rebuilt,
a failed Create tried again) starts on `currentRevision` too: on the held revision it would fail again, or
serve the revision the canary rejected.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ome.omenative import instance_names as names
from ome.omenative import rollout_retry as retry


def retry_held(blocks: Iterable[Mapping[str, Any]], update_revision: str) -> bool:
    return any(b.get("targetRevision") == update_revision and b.get("state") == retry.HELD for b in blocks)


def start_hash(
    status: Mapping[str, Any],
    update_revision: str,
    known: Collection[str],
    *,
    canary_revert: str | None = None,
) -> str:
    """The hash of the revision new Instances start on: the update revision's, or `currentRevision`'s while
    the update revision is held. `status` is the InferenceReplica's, `known` the hashes that have
    revision data, `canary_revert` the revision a canary hold moves Instances to (None without one)."""
    update_hash = names.hash_of_revision(update_revision)
    # A hold read from status applies to the revision that status names: right after a spec change the
    # status still names the older (held) revision, and the new one starts as usual.
    if (status.get("updateRevision") or "") != update_revision:
        return update_hash
    current = str(status.get("currentRevision") or "")
    if not current or current == update_revision or names.hash_of_revision(current) not in known:
        return update_hash
    held = canary_revert == current or retry_held(status.get("retryBlocks") or [], update_revision)
    return names.hash_of_revision(current) if held else update_hash
