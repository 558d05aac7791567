"""A manager's Update entry moved into its Apply entry (managed_fields.py)."""

from __future__ import annotations

from typing import Any

from ome.framework import managed_fields as mf

MANAGER = "ome-inferenceservice-controller"

CREATED: dict[str, Any] = {  # what a POST of a Deployment records: the request's fields and the defaults
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:annotations": {".": {}, "f:ome.io/desired-hash": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:progressDeadlineSeconds": {},
        "f:template": {"f:spec": {"f:containers": {'k:{"name":"main"}': {
            ".": {}, "f:name": {}, "f:image": {}, "f:env": {".": {}, 'k:{"name":"A"}': {".": {}, "f:name": {}}},
        }}}},
    },
}


def entry(manager: str, operation: str, fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
            "fieldsV1": fields, "time": "2026-12-05T10:00:00Z", **extra}


def test_union_merges_trees_and_keeps_its_inputs() -> None:
    a = {"f:spec": {"f:a": {}}}
    b = {"f:spec": {"f:b": {}}, "f:metadata": {".": {}}}
    assert mf.union(a, b) == {"f:spec": {"f:a": {}, "f:b": {}}, "f:metadata": {".": {}}}
    assert a == {"f:spec": {"f:a": {}}}


def test_without_prunes_a_parent_left_empty_but_not_one_that_owns_itself() -> None:
    assert mf.without({"f:spec": {"f:replicas": {}}}, mf.REPLICAS) == {}
    assert mf.without({"f:spec": {".": {}, "f:replicas": {}}}, mf.REPLICAS) == {"f:spec": {".": {}}}
    assert mf.without({"f:spec": {"f:replicas": {}, "f:x": {}}}, mf.REPLICAS) == {"f:spec": {"f:x": {}}}
    assert mf.without({"f:metadata": {}}, mf.REPLICAS) == {"f:metadata": {}}


def test_the_update_entry_becomes_the_apply_entry_without_replicas() -> None:
    status = entry("kube-controller-manager", "Update", {"f:status": {"f:replicas": {}}}, subresource="status")
    other = entry("kubectl-edit", "Update", {"f:spec": {"f:paused": {}}})
    moved = mf.upgraded([entry(MANAGER, "Update", CREATED), status, other], MANAGER, drop=[mf.REPLICAS])
    assert moved is not None
    assert status in moved and other in moved  # other writers' entries, a subresource's too, stay as they are
    (applied,) = [e for e in moved if e["manager"] == MANAGER]
    assert applied["operation"] == "Apply" and applied["apiVersion"] == "apps/v1"
    assert applied["time"] == "2026-12-05T10:00:00Z"
    assert "f:replicas" not in applied["fieldsV1"]["f:spec"]
    assert applied["fieldsV1"]["f:spec"]["f:template"] == CREATED["f:spec"]["f:template"]


def test_an_existing_apply_entry_gets_the_created_fields_added() -> None:
    earlier = entry(MANAGER, "Apply", {"f:spec": {"f:minReadySeconds": {}}})
    moved = mf.upgraded([earlier, entry(MANAGER, "Update", CREATED)], MANAGER)
    assert moved is not None and len(moved) == 1
    assert moved[0]["fieldsV1"]["f:spec"]["f:minReadySeconds"] == {}
    assert moved[0]["fieldsV1"]["f:spec"]["f:replicas"] == {}  # nothing dropped unless asked


def test_an_earlier_identity_of_the_writer_is_moved_too() -> None:
    moved = mf.upgraded([entry("ome-py", "Update", CREATED)], MANAGER, also=["ome-py"])
    assert moved is not None and [(e["manager"], e["operation"]) for e in moved] == [(MANAGER, "Apply")]
    assert mf.upgraded([entry("ome-py", "Update", CREATED)], MANAGER) is None


def test_nothing_to_move() -> None:
    applied = entry(MANAGER, "Apply", CREATED)
    assert mf.upgraded([applied], MANAGER) is None
    assert mf.upgraded([entry(MANAGER, "Update", CREATED, subresource="status")], MANAGER) is None
    assert mf.upgraded([], MANAGER) is None
