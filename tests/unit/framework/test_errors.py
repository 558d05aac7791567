"""errors.error_for: one mapping from an HTTP answer to the most specific ApiError."""

from __future__ import annotations

import orjson
import pytest

from ome.framework import errors


def _status(code: int, reason: str, message: str = "m", **extra: object) -> bytes:
    return orjson.dumps({"kind": "Status", "status": "Failure", "code": code, "reason": reason,
                         "message": message, **extra})  # fmt: skip


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (400, "BadRequest", errors.BadRequest),
        (401, "Unauthorized", errors.Unauthorized),
        (403, "Forbidden", errors.Forbidden),
        (404, "NotFound", errors.NotFound),
        (409, "Conflict", errors.Conflict),
        (409, "AlreadyExists", errors.AlreadyExists),
        (410, "Gone", errors.Gone),
        (410, "Expired", errors.Gone),
        (422, "Invalid", errors.Invalid),
        (429, "TooManyRequests", errors.TooManyRequests),
        (500, "InternalError", errors.ServerError),
        (500, "ServerTimeout", errors.ServerTimeout),
        (503, "ServiceUnavailable", errors.ServerError),
        (504, "Timeout", errors.ServerTimeout),
        (418, "Teapot", errors.ApiError),
    ],
    ids=lambda v: str(v) if not isinstance(v, type) else v.__name__,
)
def test_status_and_reason_pick_the_class(status: int, reason: str, expected: type[errors.ApiError]) -> None:
    error = errors.error_for(status, _status(status, reason, "boom"))
    assert type(error) is expected
    assert (error.status, error.reason, error.message) == (status, reason, "boom")


def test_already_exists_is_not_a_conflict() -> None:
    # A retry-on-conflict loop must not spin on a create of an existing name.
    assert not isinstance(errors.error_for(409, _status(409, "AlreadyExists")), errors.Conflict)


def test_invalid_carries_field_causes() -> None:
    causes = [{"field": "spec.replicas", "reason": "FieldValueInvalid", "message": "must be >= 0"},
              {"field": "metadata.name", "reason": "FieldValueRequired", "message": "required"}]  # fmt: skip
    error = errors.error_for(422, _status(422, "Invalid", details={"causes": causes}))
    assert isinstance(error, errors.Invalid)
    assert error.causes == (
        errors.Cause("spec.replicas", "FieldValueInvalid", "must be >= 0"),
        errors.Cause("metadata.name", "FieldValueRequired", "required"),
    )


def test_server_timeout_is_a_timeout_error() -> None:
    with pytest.raises(TimeoutError):
        raise errors.error_for(504, b"")


def test_non_json_body_becomes_the_message() -> None:
    error = errors.error_for(502, b"<html>bad gateway</html>")
    assert isinstance(error, errors.ServerError)
    assert error.message == "<html>bad gateway</html>"
    assert error.reason == "Unknown"


def test_empty_body_gets_a_default_reason() -> None:
    error = errors.error_for(404, b"")
    assert isinstance(error, errors.NotFound)
    assert error.reason == "NotFound"


def test_long_bodies_are_trimmed() -> None:
    error = errors.error_for(500, b"x" * 10_000)
    assert len(error.message) < errors.MAX_MESSAGE_CHARS + 40
    assert error.message.endswith("(9500 more chars)")
    assert len(str(error)) < errors.MAX_MESSAGE_CHARS + 80


def test_watch_error_event_object_maps_by_its_code() -> None:
    error = errors.error_from_status(
        {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    )
    assert isinstance(error, errors.Gone)
    assert error.status == 410


def test_str_names_status_and_reason() -> None:
    assert str(errors.error_for(404, _status(404, "NotFound", 'pods "a" not found'))) == (
        '404 NotFound: pods "a" not found'
    )
