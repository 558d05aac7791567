"""OwnApplies: our last apply of an object stands in for the cache until the cache shows it."""

from __future__ import annotations

from typing import Any

from ome.framework import resources
from ome.framework.own_applies import OwnApplies

RES = resources.SERVICES
OBJ = {"metadata": {"name": "svc", "namespace": "demo", "labels": {"app": "x"}}}


def at(version: int) -> dict[str, dict[str, str]]:
    return {"metadata": {"resourceVersion": str(version)}}


def seen_at(version: int, asked: list[Any] | None = None) -> Any:
    def seen(res: Any, namespace: str | None, labels: Any) -> int:
        if asked is not None:
            asked.append((res, namespace, dict(labels)))
        return version
    return seen


def test_a_cached_copy_older_than_the_apply_is_stood_in_for_until_it_catches_up() -> None:
    applies = OwnApplies()
    applies.record(RES, OBJ, "h1", at(10))
    assert applies.pending(RES, OBJ, at(9)) == "h1"
    assert applies.pending(RES, OBJ, at(10)) is None, "the cache shows the apply: it decides"
    assert len(applies) == 0
    assert applies.pending(RES, OBJ, at(9)) is None, "and the entry is gone"


def test_an_absent_object_is_ours_in_flight_only_while_the_informers_have_not_reached_the_apply() -> None:
    asked: list[Any] = []
    behind = OwnApplies(seen_at(9, asked))
    behind.record(RES, OBJ, "h1", at(10))
    assert behind.pending(RES, OBJ, None) == "h1", "not shown yet"
    assert asked == [(RES, "demo", {"app": "x"})], "asked about the object's kind, namespace and labels"
    caught_up = OwnApplies(seen_at(10))
    caught_up.record(RES, OBJ, "h1", at(10))
    assert caught_up.pending(RES, OBJ, None) is None, "shown, then deleted by someone: apply again"
    assert len(caught_up) == 0


def test_the_informers_are_asked_only_about_an_absent_object_with_an_entry() -> None:
    asked: list[Any] = []
    applies = OwnApplies(seen_at(0, asked))
    assert applies.pending(RES, OBJ, None) is None
    applies.record(RES, OBJ, "h1", at(10))
    applies.pending(RES, OBJ, at(9))
    assert asked == []


def test_without_the_informers_progress_absence_is_never_held_back() -> None:
    applies = OwnApplies()
    applies.record(RES, OBJ, "h1", at(10))
    assert applies.pending(RES, OBJ, None) is None


def test_an_answer_without_an_integer_version_keeps_nothing() -> None:
    applies = OwnApplies(seen_at(0))
    applies.record(RES, OBJ, "h1", at(10))
    applies.record(RES, OBJ, "h2", {"metadata": {"resourceVersion": "abc"}})
    assert applies.pending(RES, OBJ, None) is None and len(applies) == 0


def test_entries_are_bounded_and_forgotten_on_request() -> None:
    applies = OwnApplies(max_entries=2)
    objs = [{"metadata": {"name": f"s{n}", "namespace": "demo"}} for n in range(3)]
    for obj in objs:
        applies.record(resources.HPAS, obj, "h", at(10))
    assert len(applies) == 2
    assert applies.pending(resources.HPAS, objs[0], at(1)) is None, "the least recently applied went first"
    assert applies.pending(resources.HPAS, objs[2], at(9)) == "h"
    applies.forget(resources.HPAS, objs[2])
    assert applies.pending(resources.HPAS, objs[2], at(9)) is None
