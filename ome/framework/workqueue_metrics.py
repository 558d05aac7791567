"""Work-queue metrics with controller-runtime's names, kept as plain numbers until scraped.

Every add/get/done of every queue updates these, so they must cost well under a
microsecond: prometheus_client children take a lock per update and walk every
histogram bucket in Python, which alone would halve queue throughput. Here a queue
owns a `QueueMetrics` of ints, floats and bucket counts; one collector turns all
live queues into metric families when Prometheus scrapes. Queues that share a name
are summed. Counters restart if a queue is garbage-collected, like a process restart.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

__all__ = ["QueueMetrics"]

# controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12), i.e. 10 ns .. 1000 s.
_BUCKETS: tuple[float, ...] = tuple(float(f"1e{exp}") for exp in range(-8, 4))
_BUCKET_LABELS: tuple[str, ...] = tuple(repr(bound) for bound in _BUCKETS)


class _Histogram:
    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(_BUCKETS) + 1)  # last slot is +Inf
        self.total = 0.0

    def observe(self, value: float) -> None:
        # bisect_left: a value equal to a bound belongs to that bound's `le` bucket.
        self.counts[bisect.bisect_left(_BUCKETS, value)] += 1
        self.total += value


class QueueMetrics:
    """The numbers client-go's `defaultQueueMetrics` tracks, for one queue."""

    __slots__ = (
        "__weakref__",
        "_add_times",
        "_now",
        "_start_times",
        "adds",
        "depth",
        "name",
        "queue_duration",
        "retries",
        "work_duration",
    )

    def __init__(self, name: str, now: Callable[[], float]) -> None:
        self.name = name
        self._now = now
        self.depth = 0
        self.adds = 0
        self.retries = 0
        self.queue_duration = _Histogram()
        self.work_duration = _Histogram()
        self._add_times: dict[Hashable, float] = {}
        self._start_times: dict[Hashable, float] = {}
        _COLLECTOR.register(self)

    def add(self, item: Hashable) -> None:
        self.adds += 1
        self.depth += 1
        if item not in self._add_times:
            self._add_times[item] = self._now()

    def get(self, item: Hashable) -> None:
        self.depth -= 1
        now = self._now()
        self._start_times[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            self.queue_duration.observe(now - added)

    def done(self, item: Hashable) -> None:
        started = self._start_times.pop(item, None)
        if started is not None:
            self.work_duration.observe(self._now() - started)

    def retry(self) -> None:
        self.retries += 1

    def running_seconds(self) -> tuple[float, float]:
        """(sum, max) of how long the items being processed have been running."""
        now = self._now()
        # list() of a dict view runs in C under the GIL, so a scrape thread sees a consistent copy.
        starts = list(self._start_times.values())
        if not starts:
            return 0.0, 0.0
        return sum(now - s for s in starts), now - min(starts)


class _WorkQueueCollector(Collector):
    def __init__(self) -> None:
        self._queues: weakref.WeakSet[QueueMetrics] = weakref.WeakSet()
        self._lock = threading.Lock()  # registration (event loop) vs collect (scrape thread)

    def register(self, metrics: QueueMetrics) -> None:
        with self._lock:
            self._queues.add(metrics)

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily | HistogramMetricFamily]:
        with self._lock:
            queues = sorted(self._queues, key=lambda q: q.name)
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=["name"])
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=["name"]
        )
        retries = CounterMetricFamily(
            "workqueue_retries", "Total number of retries handled by workqueue", labels=["name"]
        )
        queue_duration = HistogramMetricFamily(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels=["name"],
        )
        work_duration = HistogramMetricFamily(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels=["name"],
        )
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed "
            "by work_duration. Large values indicate stuck threads.",
            labels=["name"],
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=["name"],
        )
        for name, group in _by_name(queues):
            label = [name]
            depth.add_metric(label, sum(q.depth for q in group))
            adds.add_metric(label, sum(q.adds for q in group))
            retries.add_metric(label, sum(q.retries for q in group))
            queue_duration.add_metric(label, *_merged([q.queue_duration for q in group]))
            work_duration.add_metric(label, *_merged([q.work_duration for q in group]))
            running = [q.running_seconds() for q in group]
            unfinished.add_metric(label, sum(r[0] for r in running))
            longest.add_metric(label, max(r[1] for r in running))
        yield from (depth, adds, retries, queue_duration, work_duration, unfinished, longest)


def _by_name(queues: list[QueueMetrics]) -> Iterator[tuple[str, list[QueueMetrics]]]:
    groups: dict[str, list[QueueMetrics]] = {}
    for q in queues:
        groups.setdefault(q.name, []).append(q)
    yield from groups.items()


def _merged(histograms: list[_Histogram]) -> tuple[list[tuple[str, float]], float]:
    """Cumulative `le` buckets and the sum, as HistogramMetricFamily.add_metric wants them."""
    counts = [sum(column) for column in zip(*(h.counts for h in histograms), strict=True)]
    buckets: list[tuple[str, float]] = []
    cumulative = 0
    for bound, count in zip((*_BUCKET_LABELS, "+Inf"), counts, strict=True):
        cumulative += count
        buckets.append((bound, float(cumulative)))
    return buckets, sum(h.total for h in histograms)


_COLLECTOR = _WorkQueueCollector()
REGISTRY.register(_COLLECTOR)
