"""AdmissionReview helpers and the JSON Patch diff, checked by applying the patch."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ome.framework import admission


def apply_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    applied: dict[str, Any] = jsonpatch.apply_patch(doc, ops)  # the library applies RFC 6902 in full
    return applied


def canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True)  # keeps 1, 1.0 and true apart


@pytest.mark.parametrize(
    ("before", "after", "ops"),
    [
        ({"a": 1}, {"a": 1}, []),
        ({}, {"a": {"b": 1}}, [{"op": "add", "path": "/a", "value": {"b": 1}}]),
        ({"a": 1, "b": 2}, {"a": 1}, [{"op": "remove", "path": "/b"}]),
        ({"s": {"x": [1, 2]}}, {"s": {"x": [1, 2, 3]}}, [{"op": "add", "path": "/s/x/2", "value": 3}]),
        ({"m": {"a/b~c": 1}}, {"m": {"a/b~c": 2}}, [{"op": "replace", "path": "/m/a~1b~0c", "value": 2}]),
        ({"n": 1}, {"n": 1.0}, [{"op": "replace", "path": "/n", "value": 1.0}]),
        ({"n": 1}, {"n": True}, [{"op": "replace", "path": "/n", "value": True}]),
        ({"o": {"k": 1}}, {"o": None}, [{"op": "replace", "path": "/o", "value": None}]),
    ],
    ids=[
        "equal",
        "add-nested",
        "remove",
        "list-append",
        "escaped-key",
        "int-to-float",
        "int-to-bool",
        "object-to-null",
    ],
)
def test_json_patch_diff_ops(
    before: dict[str, Any], after: dict[str, Any], ops: list[dict[str, Any]]
) -> None:
    assert admission.json_patch_diff(before, after) == ops
    assert canonical(apply_patch(before, ops)) == canonical(after)


_keys = st.text(alphabet="ab~/.-", min_size=1, max_size=4)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2, allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=12,
)
_objects = st.dictionaries(_keys, _json, max_size=5)


@settings(max_examples=100, deadline=None)
@given(before=_objects, after=_objects)
def test_json_patch_diff_round_trips(before: dict[str, Any], after: dict[str, Any]) -> None:
    ops = admission.json_patch_diff(before, after)
    assert canonical(apply_patch(before, ops)) == canonical(after)


def test_allowed_denied_and_patched_responses() -> None:
    assert admission.allowed("u") == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u", "allowed": True},
    }
    denied = admission.denied("u", "no", warnings=["w"])["response"]
    assert denied == {
        "uid": "u",
        "allowed": False,
        "warnings": ["w"],
        "status": {"code": 403, "message": "no", "reason": "Forbidden"},
    }
    assert (
        admission.denied("u", "bad", code=422, reason="Invalid")["response"]["status"]["reason"] == "Invalid"
    )
    assert "reason" not in admission.denied("u", "oops", code=500)["response"]["status"]
    ops = [{"op": "add", "path": "/a", "value": 1}]
    patched = admission.patched("u", ops)["response"]
    assert patched["patchType"] == "JSONPatch" and patched["allowed"] is True
    assert orjson.loads(base64.b64decode(patched["patch"])) == ops
    assert "patchType" not in admission.patched("u", [])["response"]
