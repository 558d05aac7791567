"""The OMENative scale-down series of configure-pod-batching.md, fed by the InferenceReplica controller.

`ome_omenative_scale_down_active_pods` and `ome_omenative_scale_down_deferred_instances` are gauges by
namespace, isvc and component (set each pass with scale-down work, back to zero once it is done, removed
with the replica); `ome_omenative_scale_down_batch_pods` (histogram) and
`ome_omenative_scale_down_oversized_batch_total` (counter) are by component and count each admitted wave.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

from ome.omenative.scale_down_batching import Wave

Identity = tuple[str, str, str]
"""(namespace, isvc, component)"""

BATCH_PODS: Final = Histogram(
    "ome_omenative_scale_down_batch_pods",
    "Pod cost admitted into each OMENative scale-down wave, by component.",
    ["component"],
    buckets=[float(2**i) for i in range(12)],  # 1 .. 2048, for large fleet changes
)
ACTIVE_PODS: Final = Gauge(
    "ome_omenative_scale_down_active_pods",
    "Pod cost of the OMENative scale-down wave in progress, by namespace, InferenceService and component.",
    ["namespace", "isvc", "component"],
)
DEFERRED_INSTANCES: Final = Gauge(
    "ome_omenative_scale_down_deferred_instances",
    "Instances waiting outside the OMENative scale-down wave in progress, by namespace, InferenceService and "
    "component.",
    ["namespace", "isvc", "component"],
)
OVERSIZED_BATCH: Final = Counter(
    "ome_omenative_scale_down_oversized_batch_total",
    "OMENative scale-down waves made of one Instance larger than the pod budget, by component.",
    ["component"],
)


class ScaleDownSeries:
    """The gauges each replica has, so a finished scale-down resets them to zero (rather than a series
    for every replica that never scaled down) and a deleted replica's series go."""

    def __init__(self) -> None:
        self._set: dict[tuple[str, str], Identity] = {}

    def report(self, key: tuple[str, str], identity: Identity, wave: Wave | None) -> None:
        """One pass of replica `key` (namespace, name), whose series carry `identity`."""
        if wave is None:
            if key in self._set:
                ACTIVE_PODS.labels(*identity).set(0)
                DEFERRED_INSTANCES.labels(*identity).set(0)
            return
        self._set[key] = identity
        ACTIVE_PODS.labels(*identity).set(wave.cost)
        DEFERRED_INSTANCES.labels(*identity).set(len(wave.deferred))
        if wave.admitted:
            BATCH_PODS.labels(identity[2]).observe(wave.cost)
            if wave.oversized:
                OVERSIZED_BATCH.labels(identity[2]).inc()

    def forget(self, key: tuple[str, str]) -> None:
        identity = self._set.pop(key, None)
        if identity is not None:
            ACTIVE_PODS.remove(*identity)
            DEFERRED_INSTANCES.remove(*identity)


__all__ = ["ACTIVE_PODS", "BATCH_PODS", "DEFERRED_INSTANCES", "OVERSIZED_BATCH", "ScaleDownSeries"]
