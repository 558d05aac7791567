"""Applying a coordination Limit to a rollout pass, the peer variables, and what coordination reports."""

from __future__ import annotations

from datetime import UTC, datetime

from ome.omenative import coordination_enforce as enforce
from ome.omenative import coordination_pairing as pairing
from ome.omenative import coordination_plan as cplan
from ome.omenative import coordination_status as cstatus
from ome.omenative.coordination_types import Limit, Member
from ome.omenative.rollout_budget import Strategy

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
SURGE = Strategy("SurgeThenDrain", 1, None, 0)


def rows(on_new: int, old: int, moving: int = 0) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for _ in range(on_new):
        out.append({"index": len(out), "phase": "Ready", "runningRevision": "r-new"})
    for _ in range(moving):
        out.append({"index": len(out), "phase": "Updating", "runningRevision": "r-old", "targetRevision": "r-new",
                    "operation": {"type": "Update"}})
    for _ in range(old):
        out.append({"index": len(out), "phase": "Ready", "runningRevision": "r-old"})
    return out


def test_no_limit_leaves_the_strategy() -> None:
    assert enforce.constrain(SURGE, None, rows(0, 3), "r-new", 3) == (SURGE, None)


def test_total_becomes_a_partition_with_the_groups_hold() -> None:
    limit = Limit(total=1, gate="Sequential", reason="Sequential waiting on decoder")
    strategy, held = enforce.constrain(SURGE, limit, rows(0, 4), "r-new", 4)
    assert strategy.partition == 3 and held == ("Sequential", "Sequential waiting on decoder")
    # One already on the new revision: nothing more may start.
    strategy, held = enforce.constrain(SURGE, limit, rows(1, 3), "r-new", 4)
    assert strategy.partition == 3 and held is not None
    # Room for all: nothing held.
    strategy, held = enforce.constrain(SURGE, Limit(total=4), rows(1, 3), "r-new", 4)
    assert strategy.partition == 0 and held is None


def test_moving_narrows_the_budget_and_reports_its_own_gate() -> None:
    wide = Strategy("SurgeThenDrain", 4, None, 0)
    limit = Limit(moving=1, gate="Ratio", reason="r", moving_gate="Budget", moving_reason="b")
    strategy, held = enforce.constrain(wide, limit, rows(0, 3, moving=1), "r-new", 4)
    assert strategy.max_surge == 1 and held == ("Budget", "b")
    recreate = Strategy("RecreatePod", None, 2, 0)
    strategy, _ = enforce.constrain(recreate, limit, rows(0, 4), "r-new", 4)
    assert strategy.max_unavailable == 1


def test_hold_keeps_since_while_unchanged() -> None:
    first = enforce.hold(("Pairing", "x"), None, NOW, "r-new")
    assert first == {"gate": "Pairing", "reason": "x", "since": "2026-12-03T12:00:00Z", "target": "r-new"}
    later = datetime(2026, 12, 3, 12, 5, tzinfo=UTC)
    assert enforce.hold(("Pairing", "x"), first, later, "r-new")["since"] == "2026-12-03T12:00:00Z"
    assert enforce.hold(("Pairing", "y"), first, later, "r-new")["since"] == "2026-12-03T12:05:00Z"


def test_peer_env() -> None:
    revisions = {"decoder": ("dnew", "dold")}
    new_pod = pairing.peer_env("pd", "demo", ["decoder", "router"], revisions, "enew", "enew")
    assert new_pod == [
        ("OME_DECODER_ENDPOINT", "pd-decoder.demo.svc.cluster.local"),
        ("OME_DECODER_REVISION_ENDPOINT", "pd-decoder-rev-dnew.demo.svc.cluster.local"),
        ("OME_ROUTER_ENDPOINT", "pd-router.demo.svc.cluster.local"),
    ]
    # A pod made for another revision than the component's update one pairs with the peer's current.
    old_pod = dict(pairing.peer_env("pd", "demo", ["decoder"], revisions, "enew", "eold"))
    assert old_pod["OME_DECODER_REVISION_ENDPOINT"] == "pd-decoder-rev-dold.demo.svc.cluster.local"
    first = dict(pairing.peer_env("pd", "demo", ["decoder"], {"decoder": ("dnew", "")}, "enew", "eold"))
    assert first["OME_DECODER_REVISION_ENDPOINT"] == "pd-decoder-rev-dnew.demo.svc.cluster.local"


def member(component: str, desired: int, new: int, **kw: object) -> Member:
    current = "new" if new == desired else "old"
    return Member(component, desired, "new", current, on_target=new, ready_target=new, serving_target=new,
                  old=desired - new, serving_old=desired - new, **kw)  # type: ignore[arg-type]


def spec(groups: list[dict[str, object]]) -> dict[str, object]:
    return {"metadata": {"name": "pd", "generation": 1}, "spec": {"rollout": {"groups": groups}}}


def test_group_status_condition_and_transitions() -> None:
    isvc = spec([{"components": ["engine", "decoder"]}])
    rolling = cplan.plan(isvc, {"engine": member("engine", 2, 1), "decoder": member("decoder", 2, 1)}, NOW)
    groups = cstatus.groups_status(rolling, None, NOW)
    assert groups == [{"name": "0", "components": ["engine", "decoder"], "policy": "BlueGreen", "phase": "Shifting",
                       "message": "shifting traffic; old-revision pods still serving",
                       "lastTransitionTime": "2026-12-03T12:00:00Z"}]
    assert cstatus.ready_condition(groups) == ("False", "InProgress", "rollout coordination in flight: 0:Shifting")
    assert cstatus.transitions(None, groups) == [("0", "", "Shifting")]
    # Same phase later: lastTransitionTime kept, no transition.
    later = datetime(2026, 12, 3, 12, 1, tzinfo=UTC)
    again = cstatus.groups_status(rolling, {"groups": groups}, later)
    assert again == groups and cstatus.transitions({"groups": groups}, again) == []
    failed = cplan.plan(isvc, {"engine": member("engine", 2, 1, failed=True), "decoder": member("decoder", 2, 1)}, later)
    bad = cstatus.groups_status(failed, {"groups": groups}, later)
    assert cstatus.transitions({"groups": groups}, bad) == [("0", "Shifting", "Failed")]
    assert cstatus.ready_condition(bad) == ("False", "Failed", "rollout coordination failed in groups: 0")
    assert cstatus.failed_message(bad[0]) == (
        "rollout group 0 (engine, decoder) failed: one or more Components in the BlueGreen group failed")
    idle = cplan.plan(isvc, {"engine": member("engine", 2, 2), "decoder": member("decoder", 2, 2)}, later)
    assert cstatus.ready_condition(cstatus.groups_status(idle, None, later)) == ("True", "Idle", "")
    assert cstatus.ready_condition([]) is None


def test_sequence_status_names_the_order_and_current_component() -> None:
    isvc = spec([{"components": ["decoder"]}, {"components": ["engine"]}])
    moving = Member("decoder", 1, "new", "old", on_target=1, moving=1, serving_old=1)
    out = cplan.plan(isvc, {"decoder": moving, "engine": member("engine", 1, 0)}, NOW)
    (entry,) = cstatus.groups_status(out, None, NOW)
    assert entry["policy"] == "Sequential" and entry["order"] == ["decoder", "engine"]
    assert entry["currentComponent"] == "decoder" and entry["compositePhase"] == "decoder.Waiting"
