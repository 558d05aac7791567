"""OwnApplies: our last apply of an object stands in for the cache until the cache shows it."""

from __future__ import annotations

from ome.framework.own_applies import OwnApplies

KEY = ("services", "demo", "svc")


def at(version: int) -> dict[str, dict[str, str]]:
    return {"metadata": {"resourceVersion": str(version)}}


def test_a_cached_copy_older_than_the_apply_is_stood_in_for_until_it_catches_up() -> None:
    applies: OwnApplies[tuple[str, str, str]] = OwnApplies()
    applies.record(KEY, "h1", at(10))
    assert applies.pending(KEY, at(9)) == "h1"
    assert applies.pending(KEY, at(10)) is None, "the cache shows the apply: it decides"
    assert len(applies) == 0
    assert applies.pending(KEY, at(9)) is None, "and the entry is gone"


def test_an_absent_object_is_ours_in_flight_only_while_the_informers_have_not_reached_the_apply() -> None:
    applies: OwnApplies[tuple[str, str, str]] = OwnApplies()
    applies.record(KEY, "h1", at(10))
    assert applies.pending(KEY, None, seen=9) == "h1", "not shown yet"
    assert applies.pending(KEY, None, seen=10) is None, "shown, then deleted by someone: apply again"
    assert len(applies) == 0


def test_without_the_informers_progress_absence_is_never_held_back() -> None:
    applies: OwnApplies[tuple[str, str, str]] = OwnApplies()
    applies.record(KEY, "h1", at(10))
    assert applies.pending(KEY, None) is None


def test_an_answer_without_an_integer_version_keeps_nothing() -> None:
    applies: OwnApplies[tuple[str, str, str]] = OwnApplies()
    applies.record(KEY, "h1", at(10))
    applies.record(KEY, "h2", {"metadata": {"resourceVersion": "abc"}})
    assert applies.pending(KEY, None, seen=0) is None and len(applies) == 0


def test_entries_are_bounded_and_forgotten_on_request() -> None:
    applies: OwnApplies[tuple[str, str, str]] = OwnApplies(max_entries=2)
    for n in range(3):
        applies.record(("hpa", "demo", f"s{n}"), "h", at(10))
    assert len(applies) == 2
    assert applies.pending(("hpa", "demo", "s0"), at(1)) is None, "the least recently applied went first"
    assert applies.pending(("hpa", "demo", "s2"), at(9)) == "h"
    applies.forget(("hpa", "demo", "s2"))
    assert applies.pending(("hpa", "demo", "s2"), at(9)) is None
