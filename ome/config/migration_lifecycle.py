"""The migration blocks of the `lifecycle` config entry: `audit`, `autoMigrate` and `forceDelete`.

Two kinds of bad value, as v1.3 treats them (recover-stuck-deletions.md, request-an-instance-migration.md):

- a value of the wrong JSON type (a bare number for a duration, text for a count) does not decode, so the
  whole `lifecycle` entry fails and the manager stops at start with `Failed to initialize lifecycle scale
  configuration: unable to parse lifecycle config json: ...` naming the field;
- a value of the right type that is unusable (a duration without a unit, zero or negative; a count not above
  zero; a block missing a field) turns the feature off: migration requests wait
  (MigrationPolicyUnconfigured), relocation is off, the force-delete escalation is off. `force_delete_problem`
  says why, for the debug log.
"""

from __future__ import annotations

from pydantic import Field, StrictInt, StrictStr

from ome.config.durations import is_duration, parse_duration
from ome.config.section import Section


class AuditConfig(Section):
    """lifecycle.audit: the migration caps (chart: 10 per 1h, 3 in flight)."""

    max_migrations_per_window: StrictInt | None = Field(default=None, alias="maxMigrationsPerWindow")
    window: StrictStr | None = None
    max_in_flight_migrations: StrictInt | None = Field(default=None, alias="maxInFlightMigrations")

    def caps(self) -> tuple[int, float, int] | None:
        """(maxMigrationsPerWindow, window seconds, maxInFlightMigrations), or None unless all three are set
        and above zero."""
        seconds = _positive_seconds(self.window)
        per_window, in_flight = self.max_migrations_per_window, self.max_in_flight_migrations
        if seconds is None or per_window is None or in_flight is None or min(per_window, in_flight) <= 0:
            return None
        return per_window, seconds, in_flight


class AutoMigrateConfig(Section):
    """lifecycle.autoMigrate: how many times OME relocates an Instance (chart: 3)."""

    max_attempts: StrictInt | None = Field(default=None, alias="maxAttempts")

    def attempts(self) -> int | None:
        return self.max_attempts if self.max_attempts is not None and self.max_attempts > 0 else None


class ForceDeleteConfig(Section):
    """lifecycle.forceDelete: the stuck-Terminating escalation (chart: not set)."""

    overdue_slack: StrictStr | None = Field(default=None, alias="overdueSlack")
    node_unreachable_threshold: StrictStr | None = Field(default=None, alias="nodeUnreachableThreshold")

    def durations(self) -> tuple[float, float] | None:
        """(overdueSlack, nodeUnreachableThreshold) seconds; None unless both are durations above zero."""
        slack = _positive_seconds(self.overdue_slack)
        threshold = _positive_seconds(self.node_unreachable_threshold)
        if slack is None or threshold is None:
            return None
        return slack, threshold

    def problem(self) -> str | None:
        """Why the escalation is off although the block is set (None: it is on)."""
        for key, value in (("overdueSlack", self.overdue_slack),
                           ("nodeUnreachableThreshold", self.node_unreachable_threshold)):
            if value is None:
                return f"lifecycle.forceDelete.{key} is not set"
            if _positive_seconds(value) is None:
                return f"lifecycle.forceDelete.{key} {value!r} is not a duration above zero with a unit"
        return None


def _positive_seconds(value: str | None) -> float | None:
    if value is None or value == "0" or not is_duration(value):
        return None
    seconds = parse_duration(value)
    return seconds if seconds is not None and seconds > 0 else None
