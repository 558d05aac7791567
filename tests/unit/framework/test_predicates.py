from __future__ import annotations

from typing import Any

import pytest

from ome.framework import predicates
from ome.framework.handlers import Obj


def obj(**meta: Any) -> Obj:
    return {"metadata": {"name": "a", "namespace": "ns", **meta}}


CASES = [
    (predicates.generation_changed, {"generation": 1}, {"generation": 2}),
    (predicates.labels_changed, {"labels": {"a": "1"}}, {"labels": {"a": "2"}}),
    (predicates.annotations_changed, {"annotations": {}}, {"annotations": {"x": "y"}}),
    (predicates.resource_version_changed, {"resourceVersion": "1"}, {"resourceVersion": "2"}),
]
IDS = ["generation", "labels", "annotations", "resourceVersion"]


@pytest.mark.parametrize(("predicate", "before", "after"), CASES, ids=IDS)
def test_changed_predicates_pass_a_modification_of_their_field(
    predicate: predicates.Predicate, before: dict[str, Any], after: dict[str, Any]
) -> None:
    assert predicate("MODIFIED", obj(**after), obj(**before))
    assert not predicate("MODIFIED", obj(**before), obj(**before)), "unchanged: dropped (e.g. resync)"
    assert not predicate("MODIFIED", obj(**after), None), "update without old object is dropped"


@pytest.mark.parametrize(("predicate", "before", "after"), CASES, ids=IDS)
def test_changed_predicates_let_adds_and_deletes_through(
    predicate: predicates.Predicate, before: dict[str, Any], after: dict[str, Any]
) -> None:
    assert predicate("ADDED", obj(**before), None)
    assert predicate("DELETED", obj(**before), None)


def test_generation_changed_ignores_status_and_label_changes() -> None:
    old = obj(generation=3, labels={"a": "1"})
    new = obj(generation=3, labels={"a": "2"})
    new["status"] = {"ready": True}
    assert not predicates.generation_changed("MODIFIED", new, old)


def test_combinators() -> None:
    yes = lambda e, o, old: True  # noqa: E731
    no = lambda e, o, old: False  # noqa: E731
    o = obj()
    assert predicates.and_(yes, yes)("ADDED", o, None)
    assert not predicates.and_(yes, no)("ADDED", o, None)
    assert predicates.or_(no, yes)("ADDED", o, None)
    assert not predicates.or_(no, no)("ADDED", o, None)
    assert predicates.not_(no)("ADDED", o, None)
    either = predicates.or_(predicates.generation_changed, predicates.labels_changed)
    assert either("MODIFIED", obj(labels={"a": "b"}), obj())
    assert not either("MODIFIED", obj(), obj())


def test_custom_callable_predicate() -> None:
    def only_namespace_prod(event_type: str, o: Obj, old: Obj | None) -> bool:
        return bool(o["metadata"]["namespace"] == "prod")

    combined = predicates.and_(only_namespace_prod, predicates.generation_changed)
    assert not combined("ADDED", obj(), None)
