"""AdmissionReview v1 responses, and the RFC 6902 JSON Patch between an object and its defaulted copy.

Responses are plain AdmissionReview dicts, ready to serialise: handlers return them and the webhook
server copies the request uid in. Mutating handlers edit a copy of the object and answer with
`patched(uid, json_patch_diff(before, after))`, so they never hand-write patch paths.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any, Final

import jsonpatch
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
    """RFC 6902 operations that turn `before` into `after` (the `jsonpatch` library's diff).

    The apiserver applies them to the very object it sent, so index-wise list operations are exact.
    """
    ops: list[dict[str, Any]] = jsonpatch.make_patch(before, after).patch
    return ops


def _response(uid: str, is_allowed: bool, warnings: Iterable[str]) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": is_allowed}
    if found := list(warnings):
        response["warnings"] = found
    return response
