"""Pinned rollout plans: digests, composing inline and policy plans, parking, drift, repin, closing."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from ome.omenative import canary_run as run

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
CANARY = {"steps": [{"capacity": "10%", "traffic": 10}, {"capacity": "100%", "traffic": 100}]}


def test_blue_green_default_digest_matches_the_documented_value() -> None:
    assert run.body_digest({"blueGreen": {}}) == run.BLUE_GREEN_DEFAULT == "rp1:cca45ec1fb0f"


def test_plan_digest_hashes_the_joined_group_digests() -> None:
    # The repin guide's example: one group with digest rp1:bbbbbbbbbbbb has plan digest rp1:1d153db2a5df.
    assert run.plan_digest(["rp1:bbbbbbbbbbbb"]) == "rp1:1d153db2a5df"
    two = hashlib.sha256(b"rp1:cca45ec1fb0f|rp1:bbbbbbbbbbbb").hexdigest()[:12]
    assert run.plan_digest([None, "rp1:bbbbbbbbbbbb"]) == f"rp1:{two}"


def test_inline_progression_and_identical_policy_body_digest_equal_whatever_the_key_order() -> None:
    reordered = {"steps": [{"traffic": 10, "capacity": "10%"}, {"traffic": 100, "capacity": "100%"}]}
    assert run.body_digest({"canary": CANARY}) == run.body_digest({"canary": reordered})
    assert run.body_digest({"canary": CANARY}) != run.body_digest({"rollingUpdate": {"maxSurge": 1}})


def group(**extra: Any) -> dict[str, Any]:
    return {"components": ["engine"], **extra}


def test_compose_inline_pins_source_and_digest() -> None:
    composed = run.compose([group(canary=CANARY)], {}, feature_enabled=False, bound_providers=set())
    assert composed.park is None
    assert composed.groups[0]["source"] == "Inline"
    assert composed.groups[0]["portableDigest"] == run.body_digest({"canary": CANARY})


def ref(progression: str = "canary") -> dict[str, Any]:
    return {"name": "canary-strict", "progression": progression}


def test_compose_parks_with_each_documented_reason() -> None:
    def park(groups: list[dict[str, Any]], policies: dict[str, run.PolicyView | None], *, enabled: bool = True,
             bound: frozenset[str] = frozenset()) -> tuple[str, str] | None:
        return run.compose(groups, policies, feature_enabled=enabled, bound_providers=bound).park

    assert park([group(policyRef=ref())], {}) == (
        "PolicyNotFound", 'groups[0].policyRef "canary-strict": RolloutPolicy not found')
    assert park([group(policyRef=ref())], {}, enabled=False)[0] == "PlanInvalid"  # type: ignore[index]
    rolling = run.PolicyView({"rollingUpdate": {"maxSurge": "25%"}}, 1)
    assert park([group(policyRef=ref())], {"canary-strict": rolling})[0] == "ProgressionMismatch"  # type: ignore[index]
    bad = run.PolicyView({"canary": {"steps": [{"capacity": "10%", "traffic": 50}]}}, 1)
    assert park([group(policyRef=ref())], {"canary-strict": bad})[0] == "PolicyNotReady"  # type: ignore[index]
    unbound = {"steps": CANARY["steps"], "prometheus": {"providerRef": {"name": "cluster-prometheus"}}}
    assert park([group(canary=unbound)], {}) == (
        "ProviderUnbound",
        'groups[0]: metric provider "cluster-prometheus" is not bound in this cluster\'s metricProviders '
        "configuration",
    )
    assert park([group(canary=unbound)], {}, bound=frozenset({"cluster-prometheus"})) is None
    invalid = {"steps": [{"capacity": "10%", "traffic": 50}]}
    assert park([group(canary=invalid)], {})[0] == "PlanInvalid"  # type: ignore[index]


def test_compose_from_a_policy_records_the_policy_and_its_generation() -> None:
    policy = run.PolicyView({"canary": CANARY}, 3)
    composed = run.compose([group(policyRef=ref())], {"canary-strict": policy}, feature_enabled=True,
                           bound_providers=set())
    entry = composed.groups[0]
    assert entry["source"] == "Policy" and entry["policyGeneration"] == 3
    assert entry["group"]["canary"] == CANARY
    view = run.resolution_view([group(policyRef=ref())], {"canary-strict": policy})
    assert view == [{"index": 0, "source": "Policy", "policyRef": ref(), "observedDigest": entry["portableDigest"]}]
    # Inline wins, and the shadowed policy's would-pin digest is shown.
    shadow = run.resolution_view([group(policyRef=ref(), canary=CANARY)], {"canary-strict": policy})
    assert shadow[0]["source"] == "Inline"
    assert shadow[0]["shadowedPolicyRef"] == {"name": "canary-strict", "wouldPinDigest": entry["portableDigest"]}


def opened() -> dict[str, Any]:
    composed = run.compose([group(canary=CANARY)], {}, feature_enabled=False, bound_providers=set())
    targets = {"engine": run.Target("bbbbbbbb", "aaaaaaaa", 4, 0)}
    return run.open_run("chat", composed, targets, T0)


def test_open_run_pins_targets_and_plan() -> None:
    active = opened()
    assert active["runID"].startswith("chat-") and len(active["runID"]) == len("chat-") + 12
    assert active["targetRevisions"] == [{"component": "engine", "revision": "bbbbbbbb", "stableRevision": "aaaaaaaa"}]
    assert active["openedAt"] == active["pinnedAt"] == "2026-12-03T12:00:00Z"


def test_drift_reasons() -> None:
    active = opened()
    live = [group(canary=CANARY)]
    assert run.drift(live, active, run.resolution_view(live, {})) == {"status": "False", "reason": "InSync",
                                                                      "message": ""}
    edited = [group(canary={"steps": [{"capacity": "50%", "traffic": 50}, CANARY["steps"][1]]})]
    cond = run.drift(edited, active, run.resolution_view(edited, {}))
    assert cond["status"] == "True" and cond["reason"] == "SpecNewerThanRun"
    assert "differs from pinned" in cond["message"]
    policy = run.PolicyView({"canary": {"steps": [{"capacity": "50%", "traffic": 100}]}}, 2)
    by_ref = [group(policyRef=ref())]
    assert run.drift(by_ref, active, run.resolution_view(by_ref, {"canary-strict": policy}))["reason"] == (
        "PolicyNewerThanRun")
    assert run.drift(live + live, active, [])["reason"] == "SpecNewerThanRun"


def test_superseded_when_a_member_targets_a_third_revision_but_not_the_held_one() -> None:
    active = opened()
    assert not run.retargeted(active, {"engine": run.Target("bbbbbbbb", "aaaaaaaa")}, None)
    assert run.retargeted(active, {"engine": run.Target("cccccccc", "aaaaaaaa")}, None)
    assert not run.retargeted(active, {"engine": run.Target("cccccccc", "aaaaaaaa")}, "cccccccc")


def test_close_run_keeps_provenance() -> None:
    record = run.close_run(opened(), run.ROLLED_BACK, T0)
    assert record["outcome"] == "RolledBack" and record["closedAt"] == "2026-12-03T12:00:00Z"
    assert record["groups"] == [{"source": "Inline", "portableDigest": run.body_digest({"canary": CANARY})}]


def test_repin_checks_the_digest_keeps_progress_and_holds_before_a_higher_step() -> None:
    active = opened()
    edited = [group(canary={"steps": [{"capacity": "50%", "traffic": 50}, CANARY["steps"][1]]})]
    composed = run.compose(edited, {}, feature_enabled=False, bound_providers=set())
    canary = {"currentStep": 0, "observedTrafficWeight": 10, "canaryRevisionHash": "bbbbbbbb"}
    stale = run.repin(active, "rp1:000000000000", composed, canary, T0)
    assert stale.outcome == "rejected" and stale.run is None
    assert stale.event is not None and stale.event[1] == "RolloutRepinRejected"
    assert "a concurrent edit landed" in stale.event[2]
    fresh = run.plan_digest(composed.digests)
    done = run.repin(active, fresh, composed, canary, T0)
    assert done.outcome == "applied" and done.run is not None
    assert done.run["runID"] == active["runID"] and done.run["plan"]["groups"] == composed.groups
    assert done.canary == {**canary, "preStepHold": True}
    old = run.plan_digest([g.get("portableDigest") for g in active["plan"]["groups"]])
    assert done.event == ("Normal", "RolloutPlanRepinned", f"run {active['runID']} repinned: {old} -> {fresh}")
    assert run.repin(active, "now", composed, canary, T0).outcome == "applied"
    same = run.compose([group(canary=CANARY)], {}, feature_enabled=False, bound_providers=set())
    assert run.repin(active, "now", same, canary, T0).outcome is None  # already in force: cleanup only
    parked = run.Composed(park=("PolicyNotFound", "gone"))
    rejected = run.repin(active, "now", parked, canary, T0)
    assert rejected.event is not None
    assert rejected.event[2] == "repin rejected: the current source does not render (PolicyNotFound): gone"


def test_clamp_done_stays_done_and_shrinks_to_the_last_step() -> None:
    three = [{"traffic": 10}, {"traffic": 50}, {"traffic": 100}]
    one = [{"traffic": 100}]
    assert run.clamp({"currentStep": 3}, three, one)["currentStep"] == 1
    assert run.clamp({"currentStep": 2, "observedTrafficWeight": 50}, three, one) == {
        "currentStep": 0, "observedTrafficWeight": 50, "preStepHold": True}


def test_conditions_keep_their_transition_time_while_unchanged() -> None:
    first = run.set_condition([], run.PLAN_READY, "True", run.PINNED, "run x pinned", T0)
    later = datetime(2026, 12, 3, 13, 0, tzinfo=UTC)
    again = run.set_condition(first, run.PLAN_READY, "True", run.PINNED, "run x pinned", later)
    assert again[0]["lastTransitionTime"] == "2026-12-03T12:00:00Z"
    moved = run.set_condition(first, run.PLAN_READY, "True", run.NO_ACTIVE_RUN, "no rollout in progress", later)
    assert moved[0]["lastTransitionTime"] == "2026-12-03T13:00:00Z"
