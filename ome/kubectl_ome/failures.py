"""The ways a kubectl-ome command ends other than success, and their exit codes (overview, "Exit codes").

1: a general error (bad flag, failed read, refusal, unconfirmed action); 2: an assertion unmet
(`rollout validate`, `wait` without a match), after the report is printed; 3: a mutation conflict
(the target or another input changed after the CLI read it).
"""

from __future__ import annotations

from typing import Final

GENERAL: Final = 1
UNMET: Final = 2
CONFLICT: Final = 3

REFUSED_PREFIX: Final = "action refused: "
READ_FAILED: Final = "required Kubernetes API request failed; check access and connectivity"
NOT_CONFIRMED: Final = "action not confirmed; noninteractive input requires --yes"


class CliError(Exception):
    """A failure the CLI explains in one line (`error: <message>` on stderr)."""

    code: int = GENERAL


class Refused(CliError):
    """A guarded action that is not safe now; nothing changed (exit 1)."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            reason
            if reason.startswith(("action refused", "rollout repin refused"))
            else REFUSED_PREFIX + reason
        )


class Conflict(CliError):
    """The target or an input changed after the CLI read it; the action did not apply (exit 3)."""

    code = CONFLICT


class Unmet(Exception):
    """A report printed in full whose assertion failed (exit 2), with an optional stderr line."""

    def __init__(self, output: str, message: str | None = None) -> None:
        super().__init__(message or "assertion unmet")
        self.output = output
        self.message = message
