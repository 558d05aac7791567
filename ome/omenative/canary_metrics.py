"""The canary controller metrics (canary-analysis.md, Controller metrics), plus the rollout run series.

Gauges follow the last pass of each canary; counters count transitions the planner reports. Only the
leader reconciles, so only the leader records them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from prometheus_client import Counter, Gauge

_ISVC: Final = ["namespace", "isvc", "component"]

CURRENT_STEP: Final = Gauge("ome_canary_current_step", "The canary's current step, from 0.", _ISVC)
TRAFFIC_WEIGHT: Final = Gauge("ome_canary_traffic_weight", "The last traffic weight recorded.", _ISVC)
STEP_TOTAL: Final = Counter("ome_canary_step_total", "Canary step advances.", _ISVC)
COMPLETE_TOTAL: Final = Counter(
    "ome_canary_complete_total", "Canaries that completed on the new revision.", ["namespace", "isvc"]
)
EVALUATIONS: Final = Counter(
    "ome_canary_analysis_evaluations_total", "Judged analysis samples by result.", [*_ISVC, "result"]
)
METRIC_VALUE: Final = Gauge(
    "ome_canary_analysis_metric_value", "The last value of each analysis metric.", [*_ISVC, "metric"]
)
FAILED_CHECKS: Final = Gauge(
    "ome_canary_analysis_failed_checks", "Failing samples at the step, as of the last sample.", _ISVC
)
ROLLBACK_TOTAL: Final = Counter("ome_canary_rollback_total", "Canary rollbacks by cause.", [*_ISVC, "cause"])
SAMPLER_INFLIGHT: Final = Gauge("ome_canary_sampler_inflight", "Analysis samples running now.")
SAMPLER_QUEUE: Final = Gauge("ome_canary_sampler_queue_depth", "Samples waiting for a free slot.")
SAMPLER_STARVED: Final = Counter("ome_canary_sampler_starved_total", "Samples that had to wait for a slot.")

REPIN_TOTAL: Final = Counter(
    "ome_rollout_repin_total", "Rollout repin requests by outcome.", ["namespace", "outcome"]
)


def observe_pass(
    namespace: str,
    isvc: str,
    component: str,
    *,
    step: int,
    weight: int,
    completed: bool,
    advances: int,
    rollback_cause: str | None,
    evaluated: str | None,
    failed_checks: int,
    values: Iterable[tuple[str, float | None]] = (),
) -> None:
    labels = (namespace, isvc, component)
    CURRENT_STEP.labels(*labels).set(0 if completed else step)
    TRAFFIC_WEIGHT.labels(*labels).set(0 if completed or rollback_cause else weight)
    if advances:
        STEP_TOTAL.labels(*labels).inc(advances)
    if completed:
        COMPLETE_TOTAL.labels(namespace, isvc).inc()
    if rollback_cause:
        ROLLBACK_TOTAL.labels(*labels, rollback_cause).inc()
    if evaluated:
        EVALUATIONS.labels(*labels, evaluated).inc()
        FAILED_CHECKS.labels(*labels).set(failed_checks)
        for name, value in values:
            if value is not None:  # the last value is kept when a sample has none
                METRIC_VALUE.labels(*labels, name).set(value)
