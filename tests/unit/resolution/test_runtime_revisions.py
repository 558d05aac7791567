"""Runtime revisions: names, hashes, the body, every row of the pin decision, and the GC plan."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.resolution import runtime_revisions as rr
from tests.unit.resolution import builders

Obj = dict[str, Any]
NS = "ome"


def _live(args: list[str] | None = None) -> Obj:
    obj = builders.runtime("vllm")
    if args is not None:
        obj["spec"]["engineConfig"]["runner"]["args"] = args
    return obj


def _isvc(
    *,
    auto_sync: bool | None = False,
    revision: str | None = None,
    kind: str | None = None,
    token: str | None = None,
    status: Obj | None = None,
    runtime: str | None = "vllm",
) -> Obj:
    obj = builders.isvc(annotations={rr.SYNC_ANNOTATION: token} if token else None)
    if runtime is not None:
        ref: Obj = {"name": runtime}
        if auto_sync is not None:
            ref["autoSync"] = auto_sync
        if revision is not None:
            ref["revision"] = revision
        if kind is not None:
            ref["kind"] = kind
        obj["spec"]["runtime"] = ref
    if status is not None:
        obj["status"] = status
    return obj


def _revision_of(live: Obj, *, runtime: str = "vllm", number: int = 1) -> Obj:
    body = rr.revision_body(
        kind=rr.CLUSTER_SERVING_RUNTIME,
        namespace="",
        runtime=runtime,
        spec=live["spec"],
        config_namespace=NS,
        number=number,
    )
    body["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return body


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


# -- names and hashes -------------------------------------------------------------------------------------


def test_cluster_runtime_revision_name() -> None:
    assert rr.revision_name(rr.CLUSTER_SERVING_RUNTIME, "", "vllm", "0123abcd") == "cr-vllm-0123abcd"


def test_namespaced_runtime_revision_name() -> None:
    assert (
        rr.revision_name(rr.SERVING_RUNTIME, "llama-demo", "sglang-llama-3-2-3b", "590753e8")
        == "r-llama-demo-sglang-llama-3-2-3b-590753e8"
    )


def test_kind_decides_the_form_and_defaults_to_cluster() -> None:
    assert rr.source_kind(_isvc()) == rr.CLUSTER_SERVING_RUNTIME
    assert rr.source_namespace(_isvc()) == ""
    namespaced = _isvc(kind="ServingRuntime")
    assert rr.source_kind(namespaced) == rr.SERVING_RUNTIME
    assert rr.source_namespace(namespaced) == "demo"


def test_hash_is_8_hex_and_ignores_key_order() -> None:
    spec = {"b": [1, {"y": 2, "x": 1}], "a": "z"}
    reordered = {"a": "z", "b": [1, {"x": 1, "y": 2}]}
    assert rr.spec_hash(spec) == rr.spec_hash(reordered)
    assert len(rr.spec_hash(spec)) == 8 and int(rr.spec_hash(spec), 16) >= 0
    assert rr.spec_hash(spec) != rr.spec_hash({**spec, "a": "y"})
    assert rr.spec_hash(spec) == "8f32be11"  # sha256 of {"a":"z","b":[1,{"x":1,"y":2}]}


def test_hash_changes_with_the_args() -> None:
    assert rr.spec_hash(_live(["--mem-frac=0.9"])["spec"]) != rr.spec_hash(_live(["--mem-frac=0.85"])["spec"])


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("cr-vllm-0123abcd", True),
        ("cr-vllm-0123ABCD", False),
        ("cr-vllm-0123abc", False),
        ("cr-vllm-0123abcde", False),
        ("cr-other-0123abcd", False),
        ("r-demo-vllm-0123abcd", False),
    ],
)
def test_matches_runtime(name: str, ok: bool) -> None:
    assert rr.matches_runtime(name, rr.CLUSTER_SERVING_RUNTIME, "", "vllm") is ok


def test_revision_body() -> None:
    live = _live()
    body = rr.revision_body(
        kind=rr.SERVING_RUNTIME,
        namespace="demo",
        runtime="vllm",
        spec=live["spec"],
        config_namespace=NS,
        number=3,
    )
    short = rr.spec_hash(live["spec"])
    assert body["apiVersion"] == "apps/v1" and body["kind"] == "ControllerRevision"
    assert body["metadata"]["name"] == f"r-demo-vllm-{short}"
    assert body["metadata"]["namespace"] == NS
    assert body["metadata"]["labels"] == {
        "ome.io/runtime-of": "vllm",
        "ome.io/runtime-of-kind": "ServingRuntime",
        "ome.io/runtime-of-namespace": "demo",
        "ome.io/revision-hash": short,
    }
    assert body["metadata"]["annotations"] == {"ome.io/created-by": "ome-controller"}
    assert body["data"] == live["spec"] and body["data"] is not live["spec"]
    assert body["revision"] == 3


def test_next_number_counts_per_runtime() -> None:
    revisions = [_revision_of(_live(), number=4), _revision_of(_live(), runtime="other", number=9)]
    assert rr.next_number(revisions, "vllm") == 5
    assert rr.next_number(revisions, "new") == 1


# -- the decision, row by row --------------------------------------------------------------------------------


def test_pins_only_with_a_named_runtime_and_autosync_false_or_a_revision() -> None:
    assert rr.pins(_isvc())
    assert rr.pins(_isvc(auto_sync=None, revision="cr-vllm-0123abcd"))
    assert not rr.pins(_isvc(auto_sync=None))
    assert not rr.pins(_isvc(auto_sync=True))
    assert not rr.pins(_isvc(runtime=None))


def test_live_follow() -> None:
    live = _live()
    decision = rr.decide(_isvc(auto_sync=True), live, [], config_namespace=NS)
    assert not decision.pinning and decision.spec == live["spec"]
    assert (
        decision.status == {} and decision.drift is None and not decision.paused and decision.create is None
    )


def test_first_pin_creates_a_revision_of_the_live_spec() -> None:
    live = _live()
    decision = rr.decide(_isvc(), live, [], config_namespace=NS)
    assert decision.pinning and decision.spec == live["spec"] and decision.from_revision is None
    assert decision.create is not None
    name = _name(decision.create)
    assert name == f"cr-vllm-{rr.spec_hash(live['spec'])}"
    assert decision.status == {"pinnedRevisionName": name}
    assert decision.drift is None and not decision.paused


def test_first_pin_reuses_a_revision_with_the_same_runtime_and_hash() -> None:
    live = _live()
    shared = _revision_of(live)
    shared["metadata"]["name"] = "cr-vllm-elsewhere"  # found by its labels, not by its name
    decision = rr.decide(_isvc(), live, [shared], config_namespace=NS)
    assert decision.create is None
    assert decision.status == {"pinnedRevisionName": "cr-vllm-elsewhere"}


def test_first_pin_of_a_namespaced_runtime() -> None:
    live = _live()
    decision = rr.decide(_isvc(kind="ServingRuntime"), live, [], config_namespace=NS)
    assert decision.create is not None
    assert _name(decision.create) == f"r-demo-vllm-{rr.spec_hash(live['spec'])}"
    assert decision.create["metadata"]["labels"]["ome.io/runtime-of-namespace"] == "demo"


def test_first_pin_spends_the_token_already_there() -> None:
    decision = rr.decide(_isvc(token="t1"), _live(), [], config_namespace=NS)
    assert decision.status["lastRuntimeSyncToken"] == "t1"


def test_first_pin_without_a_runtime_is_a_pin_error() -> None:
    decision = rr.decide(_isvc(), None, [], config_namespace=NS, live_problem="runtime vllm not found")
    assert decision.pinning and decision.paused and decision.spec is None and decision.create is None
    assert decision.pin_error == "cannot pin runtime vllm: runtime vllm not found"
    assert decision.drift is None and decision.status == {}


def test_pinned_and_unchanged_serves_the_revision() -> None:
    live = _live()
    revision = _revision_of(live)
    isvc = _isvc(status={"pinnedRevisionName": _name(revision)})
    decision = rr.decide(isvc, live, [revision], config_namespace=NS)
    assert decision.spec == revision["data"] and decision.from_revision == _name(revision)
    assert decision.status == {"pinnedRevisionName": _name(revision)}
    assert decision.drift is None and not decision.paused and decision.create is None


def test_drift_revision_mismatch_pauses() -> None:
    revision = _revision_of(_live(["--mem-frac=0.9"]))
    isvc = _isvc(status={"pinnedRevisionName": _name(revision)})
    decision = rr.decide(isvc, _live(["--mem-frac=0.85"]), [revision], config_namespace=NS)
    assert decision.paused and decision.spec is None and decision.create is None
    assert decision.drift == rr.Drift(
        "RevisionMismatch",
        f"pinned {_name(revision)}, live spec differs; bump ome.io/runtime-sync annotation to advance",
    )
    assert decision.status == {"pinnedRevisionName": _name(revision)}


def test_new_token_rolls_forward_once() -> None:
    old = _revision_of(_live(["--mem-frac=0.9"]))
    live = _live(["--mem-frac=0.85"])
    isvc = _isvc(token="mem-frac-0-85", status={"pinnedRevisionName": _name(old)})
    decision = rr.decide(isvc, live, [old], config_namespace=NS)
    assert decision.create is not None and not decision.paused and decision.drift is None
    new = _name(decision.create)
    assert new == f"cr-vllm-{rr.spec_hash(live['spec'])}" and new != _name(old)
    assert decision.create["revision"] == 2
    assert decision.spec == live["spec"]
    assert decision.status == {"pinnedRevisionName": new, "lastRuntimeSyncToken": "mem-frac-0-85"}

    # The same token again, after the next runtime change: spent, so the service drifts.
    created = copy.deepcopy(decision.create)
    after = _isvc(token="mem-frac-0-85", status=decision.status)
    again = rr.decide(after, _live(["--mem-frac=0.8"]), [old, created], config_namespace=NS)
    assert again.paused and again.drift is not None and again.drift.reason == "RevisionMismatch"


def test_token_set_before_the_change_waits_without_drift() -> None:
    live = _live()
    revision = _revision_of(live)
    isvc = _isvc(token="early", status={"pinnedRevisionName": _name(revision)})
    waiting = rr.decide(isvc, live, [revision], config_namespace=NS)
    assert waiting.drift is None and waiting.status == {"pinnedRevisionName": _name(revision)}
    changed = rr.decide(isvc, _live(["--changed"]), [revision], config_namespace=NS)
    assert changed.drift is None and changed.status["lastRuntimeSyncToken"] == "early"
    assert changed.status["pinnedRevisionName"] != _name(revision)


def test_pinned_revision_missing_pauses_and_a_token_does_not_help() -> None:
    isvc = _isvc(token="t2", status={"pinnedRevisionName": "cr-vllm-deadbeef", "lastRuntimeSyncToken": "t1"})
    decision = rr.decide(isvc, _live(), [], config_namespace=NS)
    assert decision.paused and decision.create is None
    assert decision.drift == rr.Drift("RevisionMissing", "pinned revision cr-vllm-deadbeef missing from ome")
    assert decision.status == {"pinnedRevisionName": "cr-vllm-deadbeef", "lastRuntimeSyncToken": "t1"}


def test_revision_pin_serves_the_named_revision_and_ignores_drift_and_tokens() -> None:
    first = _revision_of(_live(["--mem-frac=0.9"]))
    second = _revision_of(_live(["--mem-frac=0.85"]), number=2)
    isvc = _isvc(
        revision=_name(first),
        token="t9",
        status={"pinnedRevisionName": _name(second), "lastRuntimeSyncToken": "t1"},
    )
    decision = rr.decide(isvc, _live(["--mem-frac=0.85"]), [first, second], config_namespace=NS)
    assert decision.spec == first["data"] and decision.from_revision == _name(first)
    assert decision.status == {"pinnedRevisionName": _name(first), "lastRuntimeSyncToken": "t1"}
    assert decision.drift is None and not decision.paused and decision.create is None


def test_revision_pin_missing_is_revision_missing() -> None:
    decision = rr.decide(_isvc(revision="cr-vllm-0000aaaa"), _live(), [], config_namespace=NS)
    assert decision.paused and decision.spec is None
    assert decision.drift == rr.Drift(
        "RevisionMissing", "explicit pin cr-vllm-0000aaaa not found in namespace ome"
    )


def test_revision_of_another_runtime_is_runtime_mismatch() -> None:
    other = _revision_of(_live(), runtime="other")
    decision = rr.decide(_isvc(revision=_name(other)), _live(), [other], config_namespace=NS)
    assert decision.paused and decision.spec is None
    assert decision.drift is not None and decision.drift.reason == "RuntimeMismatch"
    assert decision.drift.message == (
        f'revision {_name(other)} belongs to runtime "other" but the InferenceService references "vllm"'
    )


def test_source_runtime_missing_keeps_serving_from_the_revision() -> None:
    revision = _revision_of(_live())
    isvc = _isvc(token="t2", status={"pinnedRevisionName": _name(revision)})
    decision = rr.decide(isvc, None, [revision], config_namespace=NS, live_problem="runtime vllm not found")
    assert decision.spec == revision["data"] and not decision.paused and decision.create is None
    assert decision.drift == rr.Drift(
        "SourceRuntimeMissing", f"runtime vllm not found; serving pinned revision {_name(revision)}"
    )
    assert decision.status == {"pinnedRevisionName": _name(revision)}  # the token waits


def test_source_runtime_missing_with_a_revision_pin() -> None:
    revision = _revision_of(_live())
    decision = rr.decide(_isvc(revision=_name(revision)), None, [revision], config_namespace=NS)
    assert decision.spec == revision["data"] and not decision.paused
    assert decision.drift is not None and decision.drift.reason == "SourceRuntimeMissing"


def test_stop_pinning_keeps_the_last_status_and_condition() -> None:
    live = _live(["--new"])
    status = {
        "pinnedRevisionName": "cr-vllm-0123abcd",
        "lastRuntimeSyncToken": "t1",
        "conditions": [
            {"type": "RuntimeDrifted", "status": "True", "reason": "RevisionMismatch", "message": "pinned x"},
            {"type": "Ready", "status": "True"},
        ],
    }
    decision = rr.decide(_isvc(auto_sync=True, status=status), live, [], config_namespace=NS)
    assert not decision.pinning and not decision.paused and decision.spec == live["spec"]
    assert decision.status == {"pinnedRevisionName": "cr-vllm-0123abcd", "lastRuntimeSyncToken": "t1"}
    assert decision.drift == rr.Drift("RevisionMismatch", "pinned x")


def test_pinning_again_resumes_from_the_kept_revision() -> None:
    old = _revision_of(_live(["--old"]))
    isvc = _isvc(status={"pinnedRevisionName": _name(old)})
    decision = rr.decide(isvc, _live(["--new"]), [old], config_namespace=NS)
    assert decision.paused and decision.drift is not None and decision.drift.reason == "RevisionMismatch"


def test_removing_the_revision_compares_it_with_the_live_runtime_again() -> None:
    pinned = _revision_of(_live(["--old"]))
    isvc = _isvc(status={"pinnedRevisionName": _name(pinned)})  # revision removed, autoSync still false
    decision = rr.decide(isvc, _live(["--new"]), [pinned], config_namespace=NS)
    assert decision.drift is not None and decision.drift.reason == "RevisionMismatch"


def test_auto_selected_runtime_never_pins() -> None:
    isvc = _isvc(runtime=None)
    assert not rr.decide(isvc, _live(), [], config_namespace=NS).pinning


@pytest.mark.parametrize(
    ("reason", "pauses"),
    [
        ("RevisionMismatch", True),
        ("RevisionMissing", True),
        ("RuntimeMismatch", True),
        ("SourceRuntimeMissing", False),
    ],
)
def test_which_reasons_pause(reason: str, pauses: bool) -> None:
    assert rr.Drift(reason, "").pauses is pauses


# -- garbage collection ------------------------------------------------------------------------------------

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _aged(name: str, runtime: str, minutes: int, *, marked: datetime | None = None, ours: bool = True) -> Obj:
    created = (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {rr.CREATED_BY_ANNOTATION: rr.CREATED_BY} if ours else {}
    if marked is not None:
        annotations[rr.GC_ELIGIBLE_SINCE_ANNOTATION] = marked.strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"name": name, "labels": {rr.RUNTIME_OF_LABEL: runtime}, "annotations": annotations}
    return {"metadata": {**meta, "namespace": NS, "creationTimestamp": created}}


def _actions(plan: list[rr.GCAction]) -> dict[str, str]:
    return {step.revision["metadata"]["name"]: step.action for step in plan}


def test_gc_keeps_the_newest_per_runtime_and_the_referenced() -> None:
    revisions = [_aged(f"a{i}", "rt-a", minutes=i) for i in range(12)] + [_aged("b0", "rt-b", minutes=99)]
    plan = rr.gc_plan(revisions, {"a11"}, NOW)
    actions = _actions(plan)
    assert {n for n, a in actions.items() if a == "keep"} == {f"a{i}" for i in range(10)} | {"a11", "b0"}
    assert actions["a10"] == "mark"


def test_gc_deletes_24_hours_after_the_mark() -> None:
    revisions = [_aged(f"a{i}", "rt-a", minutes=i) for i in range(10)]
    revisions += [
        _aged("old", "rt-a", minutes=5000, marked=NOW - timedelta(hours=24)),
        _aged("young", "rt-a", minutes=5001, marked=NOW - timedelta(hours=23)),
    ]
    actions = _actions(rr.gc_plan(revisions, set(), NOW))
    assert (actions["old"], actions["young"]) == ("delete", "wait")


def test_gc_unmarks_a_revision_in_use_again_and_skips_foreign_ones() -> None:
    marked = _aged("back", "rt-a", minutes=1, marked=NOW - timedelta(hours=30))
    foreign = _aged("sts", "rt-a", minutes=2, ours=False)
    [step] = rr.gc_plan([marked, foreign], set(), NOW)
    assert (step.action, step.marked) == ("keep", True)


def test_referenced_revisions() -> None:
    spec_pin = _isvc(revision="cr-vllm-0000aaaa")
    status_pin = _isvc(status={"pinnedRevisionName": "cr-vllm-1111bbbb"})
    assert rr.referenced_revisions([spec_pin, status_pin, _isvc(auto_sync=True)]) == {
        "cr-vllm-0000aaaa",
        "cr-vllm-1111bbbb",
    }
