"""Retries: which failures count, backoff, holds, the RetryHeld and release messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ome.omenative import rollout_retry as retry
from ome.omenative.rollout_retry import RetryPolicy

NOW = datetime(2026, 9, 28, 14, 0, 0, tzinfo=UTC)
CHART = RetryPolicy(max_attempts=3, initial_delay=60.0, multiplier=2.0, max_delay=1800.0)
REV = "chat-engine-7f9c4d2b"


@pytest.mark.parametrize(
    "reason",
    ["ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError", "InvalidPodSpec"],
)
def test_revision_faults_count(reason: str) -> None:
    assert retry.counts_against_revision(reason)


@pytest.mark.parametrize("reason", ["CrashLoopBackOff", "DeadlineExceeded", "Unschedulable", None])
def test_faults_a_node_can_cause_never_count(reason: str | None) -> None:
    assert not retry.counts_against_revision(reason)


def test_chart_policy_gives_three_attempts_one_then_two_minutes_apart() -> None:
    first = retry.failed(None, REV, "ImagePullBackOff", CHART, NOW)
    assert first["state"] == "Backoff" and first["attemptsStarted"] == 1
    assert first["nextRetryAt"] == "2026-09-28T14:01:00Z"
    assert retry.start_allowed(first, NOW) == (False, "RetryBlock")
    assert retry.start_allowed(first, NOW + timedelta(minutes=1)) == (True, None)
    second = retry.started(first)
    assert second is not None and second["state"] == "RetryInProgress" and second["attemptsStarted"] == 2
    assert retry.start_allowed(second, NOW + timedelta(hours=1)) == (False, "RetryBlock")
    later = NOW + timedelta(minutes=2)
    backoff = retry.failed(second, REV, "ErrImagePull", CHART, later)
    assert (
        backoff["nextRetryAt"] == "2026-09-28T14:04:00Z"
        and backoff["firstFailureAt"] == "2026-09-28T14:00:00Z"
    )
    held = retry.failed(retry.started(backoff), REV, "ImagePullBackOff", CHART, later)
    assert held["state"] == "Held" and held["attemptsStarted"] == 3 and "nextRetryAt" not in held
    assert retry.start_allowed(held, NOW + timedelta(days=1)) == (False, "Held")


def test_without_update_retry_the_first_counted_failure_holds() -> None:
    assert retry.failed(None, REV, "InvalidImageName", RetryPolicy(), NOW)["state"] == "Held"


def test_a_failure_the_revision_did_not_cause_backs_off_but_never_holds() -> None:
    block = retry.failed(
        retry.started(retry.failed(None, REV, "DeadlineExceeded", CHART, NOW)),
        REV,
        "DeadlineExceeded",
        CHART,
        NOW,
    )
    block = retry.failed(retry.started(block), REV, "Unschedulable", CHART, NOW)
    assert block["attemptsStarted"] == 3 and block["state"] == "Backoff"


def test_backoff_is_capped_by_max_delay() -> None:
    assert RetryPolicy(max_attempts=9, initial_delay=60, multiplier=10, max_delay=300).delay(4) == 300


def test_retry_held_event_text() -> None:
    block = {"targetRevision": REV, "attemptsStarted": 3, "state": "Held", "reason": "ImagePullBackOff"}
    assert retry.held_message("prod", "chat-engine", "engine", block) == (
        "InferenceReplica prod/chat-engine component=engine update to revision chat-engine-7f9c4d2b held after "
        "3 failed attempt(s) (last failure: ImagePullBackOff); publish a corrected revision or raise "
        "lifecycle.updateRetry limits"
    )
    assert retry.hold_reason(block) == (
        "update to chat-engine-7f9c4d2b held after 3 failed attempt(s): ImagePullBackOff"
    )
    assert "in backoff" in retry.hold_reason({**block, "state": "Backoff"})


@pytest.mark.parametrize("value", [REV, "7f9c4d2b"])
def test_release_by_full_name_or_hash_removes_the_held_block(value: str) -> None:
    blocks = [{"targetRevision": REV, "state": "Held", "attemptsStarted": 3}]
    answer = retry.release({retry.RELEASE_ANNOTATION: value}, blocks, "prod", "chat-engine", "engine")
    assert answer is not None and answer.blocks == []
    assert answer.event == (
        "Normal",
        "RetryBlockReleased",
        "InferenceReplica prod/chat-engine component=engine: Held retryBlock for revision chat-engine-7f9c4d2b "
        "removed at operator request (ome.io/release-held-revision annotation)",
    )


def test_release_is_skipped_without_a_block_or_when_not_held() -> None:
    blocks = [{"targetRevision": REV, "state": "Backoff", "attemptsStarted": 1}]
    skipped = retry.release({retry.RELEASE_ANNOTATION: "deadbeef"}, blocks, "prod", "chat-engine", "engine")
    assert skipped is not None and skipped.blocks == blocks and skipped.event[1] == "RetryBlockReleaseSkipped"
    assert skipped.event[2].endswith(
        'release requested for revision "deadbeef" but no retryBlock exists for it; nothing to release'
    )
    busy = retry.release({retry.RELEASE_ANNOTATION: REV}, blocks, "prod", "chat-engine", "engine")
    assert busy is not None and busy.blocks == blocks
    assert busy.event[2].endswith(
        "retryBlock for revision chat-engine-7f9c4d2b is Backoff, not Held; nothing to release"
    )
    assert retry.release({}, blocks, "prod", "chat-engine", "engine") is None


def test_a_newer_revision_replaces_older_blocks() -> None:
    blocks = [
        {"targetRevision": REV, "state": "Held"},
        {"targetRevision": "chat-engine-11111111", "state": "Backoff"},
    ]
    assert retry.for_update_revision(blocks, "chat-engine-11111111") == [blocks[1]]
