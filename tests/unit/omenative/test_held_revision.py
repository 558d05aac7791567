"""held_revision (which revision a starting Instance runs while the update revision is held) and its use
in the Instance planner: a retried Create and a rebuild leave the held revision, running Instances stay."""

from __future__ import annotations

from datetime import UTC, datetime

from ome.omenative import held_revision, instances, revisions
from tests.unit.omenative.builders import pod, replica

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
OLD, NEW = "chat-engine-aaaaaaaa", "chat-engine-bbbbbbbb"
KNOWN = {"aaaaaaaa", "bbbbbbbb"}
HELD = {"targetRevision": NEW, "state": "Held", "attemptsStarted": 3, "reason": "ImagePullBackOff"}


def status(**kw: object) -> dict[str, object]:
    return {"updateRevision": NEW, "currentRevision": OLD, **kw}


def test_start_hash_is_the_current_revision_only_while_the_update_revision_is_held() -> None:
    assert held_revision.start_hash(status(), NEW, KNOWN) == "bbbbbbbb"
    assert held_revision.start_hash(status(retryBlocks=[HELD]), NEW, KNOWN) == "aaaaaaaa"
    assert held_revision.start_hash(status(), NEW, KNOWN, canary_revert=OLD) == "aaaaaaaa"
    backoff = {**HELD, "state": "Backoff"}  # attempts remain: OME still tries the revision
    assert held_revision.start_hash(status(retryBlocks=[backoff]), NEW, KNOWN) == "bbbbbbbb"
    # The status names an older revision (the spec just moved on): its hold is not the new revision's.
    newest = "chat-engine-cccccccc"
    assert held_revision.start_hash(status(retryBlocks=[HELD]), newest, KNOWN | {"cccccccc"}) == "cccccccc"
    # No revision data for currentRevision (pruned): nothing to start from but the update revision.
    assert held_revision.start_hash(status(retryBlocks=[HELD]), NEW, {"bbbbbbbb"}) == "bbbbbbbb"


def ctx(**kw: object) -> instances.Context:
    data = revisions.from_spec(replica()["spec"])
    assert data is not None
    params = dict(
        base="chat", component="engine", desired=2, update_revision=NEW, update_hash="bbbbbbbb",
        revisions={"aaaaaaaa": data, "bbbbbbbb": data}, now=NOW, ready_timeout=1800.0, drain_timeout=600.0,
        start_hash="aaaaaaaa",
    )
    params.update(kw)
    return instances.Context(**params)  # type: ignore[arg-type]


def row(index: int, revision: str, phase: str, **kw: object) -> dict[str, object]:
    return {"index": index, "incarnation": 1, "phase": phase, "runningRevision": revision,
            "targetRevision": revision, **kw}


def test_a_failed_create_on_the_held_revision_is_retried_on_the_current_one() -> None:
    failed = row(1, NEW, "Failed", operation={"type": "Create", "step": "CreatePods", "retryCount": 0},
                 lastFailure={"reason": "ImagePullBackOff", "time": "2026-01-01T00:00:00Z"})
    live = pod("chat-engine-0-default-0", index=0, digest="aaaaaaaa")
    plan = instances.plan(ctx(), [row(0, OLD, "Ready", readySince="2026-01-01T00:00:00Z"), failed], [live])
    assert [(c.index, c.revision_hash) for c in plan.creates] == [(1, "aaaaaaaa")]
    assert plan.rows[1]["runningRevision"] == OLD and plan.rows[1]["phase"] == "Creating"


def test_an_instance_with_live_pods_keeps_its_revision_and_no_hold_keeps_the_update_revision() -> None:
    running = pod("chat-engine-1-default-0", index=1, digest="bbbbbbbb")
    live = pod("chat-engine-0-default-0", index=0, digest="aaaaaaaa")
    rows = [row(0, OLD, "Ready", readySince="2026-01-01T00:00:00Z"),
            row(1, NEW, "Ready", readySince="2026-01-01T00:00:00Z")]
    plan = instances.plan(ctx(), rows, [live, running])
    assert plan.rows[1]["runningRevision"] == NEW and not plan.creates  # the rollout moves it, not this
    plan = instances.plan(ctx(start_hash=None, desired=3), rows, [live, running])
    assert [(c.index, c.revision_hash) for c in plan.creates] == [(2, "bbbbbbbb")]
