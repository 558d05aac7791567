"""Budgets: whole numbers or percentages rounded up, default filling, surge slots held by extra pods."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ome.omenative import rollout_budget as budget
from ome.omenative import status
from ome.omenative.rollout_budget import ExtraPod, OperatorDefault

NOW = datetime(2026, 9, 27, 8, 14, 2, tzinfo=UTC)
CHART = OperatorDefault("SurgeThenDrain", "25%", "25%")


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        ("25%", 2, 1),
        ("25%", 4, 1),
        ("25%", 5, 2),
        ("10%", 100, 10),
        ("10%", 101, 11),
        ("0%", 9, 0),
        (1, 10, 1),
        ("3", 5, 3),
        (0, 4, 0),
        (None, 5, None),
    ],
)
def test_budget_is_a_whole_number_or_a_percentage_rounded_up(
    value: int | str | None, total: int, expected: int | None
) -> None:
    assert budget.resolve(value, total) == expected


def test_ready_minimum_rounds_the_percentage_up() -> None:
    replica = {"spec": {"lifecycle": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "25%"}}}}}
    assert status.minimum_available(replica, 2) == 1  # 25% of two Instances is one
    assert status.minimum_available(replica, 5) == 3


def test_type_only_in_place_gets_only_the_unavailability_budget_from_the_operator_default() -> None:
    lifecycle = {"updateStrategy": {"type": "InPlaceIfPossible"}}
    assert budget.filled(lifecycle, CHART) == {
        "type": "InPlaceIfPossible",
        "rollingUpdate": {"maxUnavailable": "25%"},
    }
    strategy = budget.effective(lifecycle, CHART, {})
    assert (strategy.type, strategy.max_surge, strategy.max_unavailable) == ("InPlaceIfPossible", None, "25%")
    assert strategy.budget_field() == "maxUnavailable" and strategy.budget(2) == 1


def test_surge_strategy_reads_only_max_surge_and_spec_fields_win() -> None:
    strategy = budget.effective({}, CHART, {})
    assert (strategy.type, strategy.max_surge, strategy.max_unavailable) == ("SurgeThenDrain", "25%", None)
    own = budget.effective({"updateStrategy": {"rollingUpdate": {"maxSurge": 2, "partition": 1}}}, CHART, {})
    assert own.max_surge == 2 and own.partition == 1 and own.budget(10) == 2


def test_no_operator_default_means_surge_then_drain_without_a_cap() -> None:
    strategy = budget.effective({}, None, {})
    assert strategy.type == "SurgeThenDrain" and strategy.budget(7) is None


def test_in_place_mark_not_ready_defaults_to_true() -> None:
    assert budget.effective({"updateStrategy": {"type": "InPlaceOnly"}}, None, {}).mark_not_ready
    off = {
        "updateStrategy": {
            "type": "InPlaceOnly",
            "inPlaceUpdateStrategy": {"markNotReadyDuringLifecycle": False},
        }
    }
    assert not budget.effective(off, None, {}).mark_not_ready


def test_terminating_pods_hold_a_slot_until_their_deletion_grace_elapses() -> None:
    ends = NOW + timedelta(seconds=30)
    pods = [
        ExtraPod("a-0", 0, True, ends),
        ExtraPod("a-1", 1, True, NOW - timedelta(seconds=1)),
        ExtraPod("b", 2, False),
    ]
    held = budget.holding(pods, NOW)
    assert [p.name for p in held] == ["a-0", "b"]
    assert budget.next_release(pods, NOW) == 30.0
    assert budget.holding(pods, ends) == [pods[2]]


def test_extra_pods_of_a_multi_pod_instance_count_in_whole_instances() -> None:
    eight = [ExtraPod(f"p{i}", 3, True, NOW) for i in range(8)]
    assert budget.extra_slots(eight, {3: 8}) == 1
    assert budget.extra_slots([*eight, ExtraPod("p9", 3, False)], {3: 8}) == 2
    assert budget.extra_slots([ExtraPod("x", 0, False), ExtraPod("y", 1, False)], {}) == 2


def test_budget_hold_reasons_are_the_documented_texts() -> None:
    assert (
        budget.unavailability_denied(0, 1)
        == "per-Component unavailability budget 0 exhausted (would become 1)"
    )
    terminating = ExtraPod("llama-3-2-3b-instruct-engine-0-default-0", 0, True, NOW)
    assert budget.surge_denied(1, 2, [terminating]) == (
        "per-Component surge budget 1 exhausted (would become 2); Terminating pod "
        "llama-3-2-3b-instruct-engine-0-default-0 still counts against the surge budget until its deletion "
        "grace elapses"
    )
    live = ExtraPod("llama-3-2-3b-instruct-engine-1-default-1", 1, False)
    assert budget.surge_denied(1, 2, [live]).endswith(
        "; extra pod llama-3-2-3b-instruct-engine-1-default-1 holds a surge slot until a start on its "
        "Instance replaces it"
    )
    assert budget.surge_denied(1, 2, []) == "per-Component surge budget 1 exhausted (would become 2)"


def test_deletion_grace_ends_at_the_deletion_timestamp() -> None:
    assert budget.deletion_grace_end({"deletionTimestamp": "2026-09-27T08:14:32Z"}) == NOW + timedelta(
        seconds=30
    )
    assert budget.deletion_grace_end({}) is None
