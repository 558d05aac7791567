"""Errors raised by the API client, mapped once at the transport boundary.

Callers never see aiohttp or kubernetes-asyncio exceptions: the transport maps every HTTP failure
to the most specific class below (aiohttp errors become the ``__cause__``), so ``suppress(NotFound)``
is our ``IgnoreNotFound`` and ``except Conflict`` is a retry-on-conflict.

    ApiError                        any failed request; .status, .reason, .message, .causes
    ├── BadRequest                  400
    ├── Unauthorized                401
    ├── Forbidden                   403
    ├── NotFound                    404
    ├── Conflict                    409 reason Conflict (stale resourceVersion, failed precondition)
    ├── AlreadyExists               409 reason AlreadyExists (create of an existing name)
    ├── Gone                        410, or reason Expired (too old resourceVersion or continue token)
    ├── Invalid                     422 with one Cause per invalid field
    ├── TooManyRequests             429 (APF or the eviction budget)
    ├── ServerError                 5xx
    ├── ServerTimeout               504 or reason Timeout/ServerTimeout, or no answer in time; a TimeoutError
    ├── TransportError              no HTTP answer at all (refused, reset, truncated); a ConnectionError
    └── NotLeader                   not sent: leader work tried to write without a valid Lease

AlreadyExists is deliberately not a Conflict: retrying a create with a fresh resourceVersion cannot help.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

# Bodies can be megabytes (a rejected 4 MB object is echoed back) or hold secrets; logs get a prefix.
MAX_MESSAGE_CHARS: Final = 500


@dataclass(frozen=True, slots=True)
class Cause:
    """One entry of metav1.Status details.causes: which field was wrong and why."""

    field: str
    reason: str
    message: str


class ApiError(Exception):
    """A request the apiserver (or the network) refused; status 0 means no HTTP answer."""

    def __init__(self, status: int, reason: str, message: str, causes: tuple[Cause, ...] = ()) -> None:
        super().__init__(status, reason, message, causes)
        self.status = status
        self.reason = reason
        self.message = _trim(message)
        self.causes = causes
        self.retry_after: float | None = None
        """Seconds from a Retry-After header, when the server sent one."""

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}"


class BadRequest(ApiError):
    """400: the request itself is malformed (bad selector, unknown patch type)."""


class Unauthorized(ApiError):
    """401: the credentials are missing, expired or wrong."""


class Forbidden(ApiError):
    """403: RBAC or an admission webhook refused the request."""


class NotFound(ApiError):
    """404: the object (or its namespace, or the resource type) does not exist."""


class Conflict(ApiError):
    """409: the object changed since it was read; re-read and try again."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: an object with this name exists."""


class Gone(ApiError):
    """410 or Expired: the resourceVersion or continue token is too old; list again."""


class Invalid(ApiError):
    """422: the object failed validation; `causes` names the fields."""


class TooManyRequests(ApiError):
    """429: throttled by API priority and fairness, or an eviction is blocked by a PDB."""


class ServerError(ApiError):
    """5xx: the apiserver or a backend failed."""


class ServerTimeout(ApiError, TimeoutError):
    """The request timed out on the server or on our side; a plain `except TimeoutError` catches it."""


class TransportError(ApiError, ConnectionError):
    """No usable HTTP answer: connection refused or reset, TLS failure, truncated body."""


class NotLeader(ApiError):
    """Never sent: a write from leader work while this process cannot be sure it still holds the Lease."""


_BY_STATUS: Final[dict[int, type[ApiError]]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}
_BY_REASON: Final[dict[str, type[ApiError]]] = {
    "AlreadyExists": AlreadyExists,
    "Expired": Gone,
    "Gone": Gone,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
}


def error_for(status: int, body: bytes) -> ApiError:
    """The most specific error for an HTTP status and its (ideally metav1.Status) body."""
    parsed = _parse_json(body)
    if parsed is None:
        text = body.decode("utf-8", "replace").strip()
        return error_class(status, "")(status, _default_reason(status), text or _default_reason(status))
    return error_from_status(parsed, status)


def error_from_status(status_obj: dict[str, Any], status: int | None = None) -> ApiError:
    """Map a decoded metav1.Status (also the object of a watch ERROR event) to an error."""
    code = status if status is not None else _int(status_obj.get("code"))
    reason = str(status_obj.get("reason") or _default_reason(code))
    message = str(status_obj.get("message") or reason)
    details = status_obj.get("details")
    causes = _causes(details.get("causes") if isinstance(details, dict) else None)
    return error_class(code, reason)(code, reason, message, causes)


def error_class(status: int, reason: str) -> type[ApiError]:
    """Reason wins over status where the apiserver uses one status for several meanings (409, 500)."""
    if reason in _BY_REASON:
        return _BY_REASON[reason]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return ApiError


def _parse_json(body: bytes) -> dict[str, Any] | None:
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _causes(raw: object) -> tuple[Cause, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(
        Cause(str(c.get("field", "")), str(c.get("reason", "")), _trim(str(c.get("message", ""))))
        for c in raw
        if isinstance(c, dict)
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _default_reason(status: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Expired",
        415: "UnsupportedMediaType",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(status, "Unknown")


def _trim(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return f"{text[:MAX_MESSAGE_CHARS]}... ({len(text) - MAX_MESSAGE_CHARS} more chars)"
