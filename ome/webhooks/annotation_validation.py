"""InferenceService annotations the admission webhook checks (labels-and-annotations, traffic-annotations).

Known keys get a value check by kind: whole numbers (circuit breakers, `ome.io/retry-attempts`, and
`ome.io/revision-history-limit`, which must also be positive), Go durations (timeouts,
`ome.io/retry-per-try-timeout`, `ome.io/rollout-ready-timeout`), booleans spelled `true`/`false`
(`ome.io/managed-by-conflict-acked`, `ome.io/rollout-rollback`), the retry-on list, and the canary hash of
`ome.io/rollout-promote` (at least 6 lowercase letters and digits, or `full`).

An `ome.io/` key that is none of these and no pass-through (`ome.io/btp.`, `ome.io/dr.`) is rejected when
it is within two edits (Levenshtein) of a known key, naming the closest; other `ome.io/` keys, such as
`ome.io/rollout-paused` and its misspellings, are not this check's business. Messages end in the reason
in parentheses, as the docs print them. `ome.io/rollout-paused`, `-repin` and `ome.io/release-held-revision`
are read by the controller only: the docs say the webhook doesn't check their values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any, Final

from ome.webhooks.loose import as_dict, dig, text


class Kind(Enum):
    INT = "int"
    POSITIVE_INT = "positive-int"
    DURATION = "duration"
    BOOL = "bool"
    RETRY_ON = "retry-on"
    PROMOTE = "promote"
    NAME_ONLY = "name-only"
    """Known for the typo check; its JSON value is the multi-cluster webhook's business."""


RETRY_ATTEMPTS: Final = "ome.io/retry-attempts"
RETRY_ON: Final = "ome.io/retry-on"
PER_ENDPOINT_MAX: Final = "ome.io/circuit-breaker-per-endpoint-max-connections"
READY_TIMEOUT: Final = "ome.io/rollout-ready-timeout"
HISTORY_LIMIT: Final = "ome.io/revision-history-limit"
PROMOTE: Final = "ome.io/rollout-promote"
ROLLBACK: Final = "ome.io/rollout-rollback"
KNOWN: Final[Mapping[str, Kind]] = {
    "ome.io/circuit-breaker-max-connections": Kind.INT,
    "ome.io/circuit-breaker-max-parallel-requests": Kind.INT,
    "ome.io/circuit-breaker-max-pending-requests": Kind.INT,
    "ome.io/circuit-breaker-max-parallel-retries": Kind.INT,
    PER_ENDPOINT_MAX: Kind.INT,
    RETRY_ATTEMPTS: Kind.INT,
    RETRY_ON: Kind.RETRY_ON,
    "ome.io/retry-per-try-timeout": Kind.DURATION,
    "ome.io/timeout-idle": Kind.DURATION,
    "ome.io/timeout-max-connection-duration": Kind.DURATION,
    "ome.io/timeout-tcp-connect": Kind.DURATION,
    "ome.io/managed-by-conflict-acked": Kind.BOOL,
    "ome.io/traffic-drain": Kind.NAME_ONLY,
    READY_TIMEOUT: Kind.DURATION,
    HISTORY_LIMIT: Kind.POSITIVE_INT,
    PROMOTE: Kind.PROMOTE,
    ROLLBACK: Kind.BOOL,
}
"""Every key the webhook knows (the typo check's vocabulary), with how its value is checked."""
PASSTHROUGH_PREFIXES: Final = ("ome.io/btp.", "ome.io/dr.")
RETRY_CONDITIONS: Final = frozenset(
    {"5xx", "reset", "gateway-error", "connect-failure", "retriable-status-codes"}
)
MAX_EDITS: Final = 2
_INT = re.compile(r"^[+-]?\d+$")
_HASH = re.compile(r"^[a-z0-9]{6,}$")
_DURATION = re.compile(r"^[+-]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def validate(isvc: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    """(the first denial or None, warnings) for the InferenceService's metadata.annotations."""
    annotations = {
        k: v for k, v in as_dict(dig(isvc, "metadata", "annotations")).items() if isinstance(k, str)
    }
    warnings: list[str] = []
    for key in sorted(annotations):
        value = text(annotations[key])
        kind = KNOWN.get(key)
        if kind is not None:
            if (error := _value_error(key, value, kind)) is not None:
                return error, warnings
            continue
        if not key.startswith("ome.io/") or key.startswith(PASSTHROUGH_PREFIXES):
            continue
        if (closest := closest_key(key)) is not None:
            return (
                f'unknown traffic annotation "{key}". Did you mean "{closest}"? (UnknownTrafficAnnotation)',
                warnings,
            )
    attempts = text(annotations.get(RETRY_ATTEMPTS))
    if attempts and int(attempts) > 0 and RETRY_ON not in annotations:
        error = (
            f'annotation "{RETRY_ATTEMPTS}" set to {int(attempts)} requires "{RETRY_ON}" to specify retry '
            "conditions (MissingRetryOn)"
        )
        return error, warnings
    cap = text(annotations.get(PER_ENDPOINT_MAX))
    if cap and dig(isvc, "spec", "traffic", "algorithm") == "ConsistentHash" and int(cap) > 1:
        warnings.append(
            f'annotation "{PER_ENDPOINT_MAX}"={int(cap)} combined with traffic.algorithm=ConsistentHash '
            "usually defeats sticky routing; set to 1 to keep sessions on a single pod"
        )
    timeout = annotations.get(READY_TIMEOUT)
    if isinstance(timeout, str) and 0 < (duration_seconds(timeout) or 0) < 60:
        warnings.append(
            f'annotation "{READY_TIMEOUT}"={timeout} is less than 1 minute; most LLM runtimes need longer to '
            "reach Ready (RolloutTimeoutTooShort)"
        )
    return None, warnings


def _value_error(key: str, value: str, kind: Kind) -> str | None:
    quoted = f'annotation "{key}" value "{value}"'
    if kind in (Kind.INT, Kind.POSITIVE_INT):
        if not _INT.match(value):
            return f"{quoted} is not a valid integer (InvalidIntValue)"
        if kind is Kind.POSITIVE_INT and int(value) <= 0:
            return f"{quoted} must be a positive whole number (InvalidIntValue)"
    elif kind is Kind.DURATION:
        if duration_seconds(value) is None:
            return f"{quoted} is not a valid duration (InvalidDuration)"
    elif kind is Kind.BOOL:
        if value not in ("true", "false"):
            return f'{quoted} must be "true" or "false" (InvalidBoolValue)'
    elif kind is Kind.RETRY_ON:
        if not value:
            return f'annotation "{key}" must be a non-empty comma-separated list (InvalidRetryOn)'
        for token in (t.strip() for t in value.split(",")):
            if not token:
                return f'annotation "{key}" has an empty token (InvalidRetryOn)'
            if token not in RETRY_CONDITIONS:
                return (
                    f'annotation "{key}" token "{token}" is not a supported retry condition (InvalidRetryOn)'
                )
    elif kind is Kind.PROMOTE and value != "full" and not _HASH.match(value):
        return (
            f"{quoted} must be a canary revision hash (lowercase alphanumeric, from "
            'status.canary.canaryRevisionHash) or "full" (InvalidRolloutPromoteTarget)'
        )
    return None


def duration_seconds(value: str) -> float | None:
    """A Go duration (`1m30s`, `500ms`, `0`) in seconds; None when it isn't one (`30` needs a unit)."""
    if value in ("0", "+0", "-0"):
        return 0.0
    if not _DURATION.match(value):
        return None
    total = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(value))
    return -total if value.startswith("-") else total


def closest_key(key: str) -> str | None:
    """The known key nearest to `key` when at most MAX_EDITS away (ties: the first in name order)."""
    best, best_distance = None, MAX_EDITS + 1
    for known in sorted(KNOWN):
        if abs(len(known) - len(key)) > MAX_EDITS:
            continue
        if (distance := edit_distance(key, known)) < best_distance:
            best, best_distance = known, distance
    return best


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions of one character each."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
