"""AdmissionReview plumbing shared by every OME webhook: parse the request, run a pure rule, answer.

Rules never see the AdmissionReview. They take an `AdmissionRequest` (the decoded request: operation, the
object and the old object, who asked) and return an `Outcome` (a denial message or None, plus
warnings); defaulters return the mutated object. This module turns both into AdmissionReview answers.

Why it is built so: the apiserver calls us with whatever a client sent, so a malformed review, an object
of the wrong kind or a rule that trips over an unexpected shape must still get a well-formed answer:

    malformed review or object          allowed false, status 400 BadRequest, what was wrong
    cache still syncing                 allowed false, status 503 ServiceUnavailable (retryable)
    a rule that raised (our bug)        allowed false, status 500 InternalError, a generic message;
                                        the traceback goes to our log, never to the caller
    the rule's verdict                  allowed, or status 403 Forbidden with the rule's message

Every answer is HTTP 200 (controller-runtime's `Errored`): the status code inside says whose fault it
is, and the webhook server counts a 500 in controller_runtime_webhook_requests_total{code="500"}.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
import structlog

from ome.framework import admission
from ome.framework.cache import CacheError

_log = structlog.get_logger("ome.webhooks")

Obj = dict[str, Any]
Handler = Callable[[admission.Review], Awaitable[admission.Review]]

CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
_OPERATIONS: Final = frozenset({CREATE, UPDATE, DELETE, "CONNECT"})
# A message quoting user input is cut so a huge value cannot balloon the answer; a rule's own message
# (which can list every excluded runtime) gets more room than a parse error.
MAX_MESSAGE_CHARS: Final = 1024
MAX_DENIAL_CHARS: Final = 16384


class MalformedRequest(ValueError):
    """The AdmissionReview or its object is not something any rule can read."""


class PodDenied(ValueError):
    """A defaulter's refusal (the pod webhook: an injection that cannot be made); denied with its text."""


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    uid: str
    kind: str
    operation: str
    namespace: str
    name: str
    username: str
    obj: Obj
    """request.object; on DELETE the old object, so rules always have something to read."""
    old: Obj | None
    """request.oldObject on UPDATE and DELETE, else None."""

    @property
    def spec(self) -> Obj:
        spec = self.obj.get("spec")
        return spec if isinstance(spec, dict) else {}


@dataclass(frozen=True, slots=True)
class Outcome:
    denial: str | None = None
    warnings: list[str] = field(default_factory=list)

    @staticmethod
    def deny(message: str, warnings: list[str] | None = None) -> Outcome:
        return Outcome(message, list(warnings or []))


Validator = Callable[[AdmissionRequest], Outcome]
Defaulter = Callable[[AdmissionRequest], Obj]
"""Returns the defaulted object; it receives a private copy, so it may mutate `request.obj` in place."""


def validating(kind: str, rule: Validator, *, judges_delete: bool = False) -> Handler:
    """An AdmissionReview handler that denies with the rule's message, or allows with its warnings.

    Only CREATE and UPDATE reach the rule, and DELETE too with `judges_delete` (in-use guards)."""
    judged = {CREATE, UPDATE, DELETE} if judges_delete else {CREATE, UPDATE}

    async def handle(review: admission.Review) -> admission.Review:
        uid = request_uid(review)
        try:
            request = parse(review, kind)
            if request.operation not in judged:
                return admission.allowed(uid)
            outcome = rule(request)
        except MalformedRequest as exc:
            return admission.denied(uid, _clip(str(exc)), code=400, reason="BadRequest")
        except CacheError as exc:  # the cache is still syncing: retryable, not the object's fault
            return admission.denied(
                uid, _clip(f"{kind} cannot be checked yet: {exc}"), 503, "ServiceUnavailable"
            )
        except Exception as exc:  # a rule tripped over a shape it did not expect
            return _failed(uid, kind, exc)
        if outcome.denial is not None:
            return admission.denied(uid, _clip(outcome.denial, MAX_DENIAL_CHARS), warnings=outcome.warnings)
        return admission.allowed(uid, warnings=outcome.warnings)

    return handle


def mutating(kind: str, defaulter: Defaulter) -> Handler:
    """An AdmissionReview handler that answers with the JSON Patch from the object to its defaulted copy."""

    async def handle(review: admission.Review) -> admission.Review:
        uid = request_uid(review)
        try:
            request = parse(review, kind)
            if request.operation != CREATE and request.operation != UPDATE:
                return admission.allowed(uid)
            before = request.obj
            after = defaulter(_with_object(request, orjson.loads(orjson.dumps(before))))
        except MalformedRequest as exc:
            return admission.denied(uid, _clip(str(exc)), code=400, reason="BadRequest")
        except PodDenied as exc:
            return admission.denied(uid, _clip(str(exc), MAX_DENIAL_CHARS))
        except Exception as exc:
            return _failed(uid, kind, exc)
        return admission.patched(uid, admission.json_patch_diff(before, after))

    return handle


def parse(review: Any, kind: str) -> AdmissionRequest:
    """The request inside an AdmissionReview, checked just enough that rules can read it safely."""
    request = review.get("request") if isinstance(review, dict) else None
    if not isinstance(request, dict):
        raise MalformedRequest("AdmissionReview has no request")
    got_kind = _dict(request.get("kind")).get("kind")
    if got_kind != kind:
        raise MalformedRequest(f"this webhook admits {kind} objects, not {_clip(repr(got_kind), 80)}")
    operation = request.get("operation")
    if not isinstance(operation, str) or operation not in _OPERATIONS:
        raise MalformedRequest(f"unknown admission operation {_clip(repr(operation), 80)}")
    old = _object_or_none(request.get("oldObject"), "oldObject")
    obj = _object_or_none(request.get("object"), "object")
    if obj is None:
        if operation != DELETE or old is None:
            raise MalformedRequest(f"request.object is required for {operation}")
        obj = old
    if operation == UPDATE and old is None:
        raise MalformedRequest("request.oldObject is required for UPDATE")
    meta = _dict(obj.get("metadata"))
    return AdmissionRequest(
        uid=request_uid(review),
        kind=kind,
        operation=operation,
        namespace=_text(request.get("namespace")) or _text(meta.get("namespace")),
        name=_text(request.get("name")) or _text(meta.get("name")),
        username=_text(_dict(request.get("userInfo")).get("username")),
        obj=obj,
        old=old,
    )


def request_uid(review: Any) -> str:
    request = review.get("request") if isinstance(review, dict) else None
    uid = request.get("uid") if isinstance(request, dict) else None
    return uid if isinstance(uid, str) else ""


def _object_or_none(value: Any, field_name: str) -> Obj | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MalformedRequest(f"request.{field_name} is not an object")
    for key in ("metadata", "spec"):
        if key in value and value[key] is not None and not isinstance(value[key], dict):
            raise MalformedRequest(f"request.{field_name}.{key} is not an object")
    return value


def _with_object(request: AdmissionRequest, obj: Obj) -> AdmissionRequest:
    return AdmissionRequest(
        request.uid,
        request.kind,
        request.operation,
        request.namespace,
        request.name,
        request.username,
        obj,
        request.old,
    )


def _failed(uid: str, kind: str, exc: Exception) -> admission.Review:
    """A rule raised: a server bug, not the object's fault; the caller learns nothing of our internals."""
    _log.error("Admission rule failed", kind=kind, uid=uid, exc_info=exc)
    return admission.denied(uid, internal_error_message(kind), code=500, reason="InternalError")


def internal_error_message(kind: str) -> str:
    return f"internal error in the {kind} admission webhook; see the ome-manager log"


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
