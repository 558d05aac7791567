"""AdmissionReview v1 responses and RFC 6902 JSON Patch diffs.

Responses are plain AdmissionReview dicts, ready to serialise: handlers return them and the webhook
server copies the request uid in. Mutating handlers edit a copy of the object and answer with
`patched(uid, json_patch_diff(before, after))`, so they never hand-write patch paths.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any, Final

import orjson

API_VERSION: Final = "admission.k8s.io/v1"
KIND: Final = "AdmissionReview"

Review = dict[str, Any]
"""An AdmissionReview object (request or response) as decoded JSON."""


def review(response: dict[str, Any]) -> Review:
    """Wrap an AdmissionResponse in an AdmissionReview."""
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def allowed(uid: str, warnings: Iterable[str] = ()) -> Review:
    return review(_response(uid, True, warnings))


def denied(
    uid: str, message: str, code: int = 403, reason: str | None = None, warnings: Iterable[str] = ()
) -> Review:
    """Reject; like controller-runtime, a 403 without an explicit reason is reported as Forbidden."""
    status: dict[str, Any] = {"code": code, "message": message}
    if reason is None and code == 403:
        reason = "Forbidden"
    if reason:
        status["reason"] = reason
    return review({**_response(uid, False, warnings), "status": status})


def patched(uid: str, json_patch: list[dict[str, Any]], warnings: Iterable[str] = ()) -> Review:
    """Allow with a JSON Patch; as in controller-runtime, an empty patch is sent as a plain allow."""
    response = _response(uid, True, warnings)
    if json_patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(json_patch)).decode("ascii")
    return review(response)


def json_patch_diff(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """RFC 6902 operations that turn `before` into `after`.

    Objects are diffed key by key; a changed list is replaced whole, because index-wise ops on lists
    the apiserver may have reordered are fragile and a replace is always correct.
    """
    ops: list[dict[str, Any]] = []
    _diff_objects(before, after, "", ops)
    return ops


def escape_pointer_token(token: str) -> str:
    """RFC 6901: "~" becomes "~0" and "/" becomes "~1", in that order."""
    return token.replace("~", "~0").replace("/", "~1")


def _response(uid: str, is_allowed: bool, warnings: Iterable[str]) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": is_allowed}
    if found := list(warnings):
        response["warnings"] = found
    return response


def _diff_objects(
    before: dict[str, Any], after: dict[str, Any], path: str, ops: list[dict[str, Any]]
) -> None:
    for key, old in before.items():
        child = f"{path}/{escape_pointer_token(key)}"
        if key not in after:
            ops.append({"op": "remove", "path": child})
        else:
            _diff_values(old, after[key], child, ops)
    for key, new in after.items():
        if key not in before:
            ops.append({"op": "add", "path": f"{path}/{escape_pointer_token(key)}", "value": new})


def _diff_values(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        _diff_objects(old, new, path, ops)
    elif not _same(old, new):
        ops.append({"op": "replace", "path": path, "value": new})


def _same(a: Any, b: Any) -> bool:
    """JSON equality: unlike `==`, 1 differs from 1.0 and from True (the patch must change the type)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
