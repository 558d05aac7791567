"""Reconcile metrics with controller-runtime's names (`pkg/internal/controller/metrics`).

Dashboards and alerts written for Go operators work unchanged. Each controller keeps
its labelled children in a `ControllerMetrics`, so a reconcile does no label lookups.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["ControllerMetrics"]

RESULT_SUCCESS: Final = "success"
RESULT_ERROR: Final = "error"
RESULT_REQUEUE_AFTER: Final = "requeue_after"

# controller-runtime's buckets: fine below 1 s where most reconciles land, coarse up to a minute.
_RECONCILE_TIME_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip

RECONCILE_TOTAL: Final = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
)
RECONCILE_ERRORS: Final = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
)
TERMINAL_RECONCILE_ERRORS: Final = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
)
RECONCILE_PANICS: Final = Counter(
    "controller_runtime_reconcile_panics_total",
    "Total number of reconciliation panics per controller",
    ["controller"],
)
RECONCILE_TIMEOUTS: Final = Counter(
    "controller_runtime_reconcile_timeouts_total",
    "Total number of reconciliation timeouts per controller",
    ["controller"],
)
RECONCILE_TIME: Final = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=_RECONCILE_TIME_BUCKETS,
)
MAX_CONCURRENT_RECONCILES: Final = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
)
ACTIVE_WORKERS: Final = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
)


class ControllerMetrics:
    """The labelled children of one controller, resolved once."""

    __slots__ = (
        "active_workers",
        "errors",
        "max_concurrent",
        "panics",
        "reconcile_time",
        "requeue_after",
        "success",
        "terminal_errors",
        "timeouts",
        "total_errors",
    )

    def __init__(self, controller: str) -> None:
        self.success = RECONCILE_TOTAL.labels(controller, RESULT_SUCCESS)
        self.total_errors = RECONCILE_TOTAL.labels(controller, RESULT_ERROR)
        self.requeue_after = RECONCILE_TOTAL.labels(controller, RESULT_REQUEUE_AFTER)
        self.errors = RECONCILE_ERRORS.labels(controller)
        self.terminal_errors = TERMINAL_RECONCILE_ERRORS.labels(controller)
        self.panics = RECONCILE_PANICS.labels(controller)
        self.timeouts = RECONCILE_TIMEOUTS.labels(controller)
        self.reconcile_time = RECONCILE_TIME.labels(controller)
        self.max_concurrent = MAX_CONCURRENT_RECONCILES.labels(controller)
        self.active_workers = ACTIVE_WORKERS.labels(controller)
