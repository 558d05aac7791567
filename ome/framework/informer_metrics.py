"""Informer metrics: watch restarts, relists, expired resource versions, cached objects.

Restarts and relists are rare, so they are ordinary prometheus_client counters. The number of
cached objects changes on every event; rather than touch a gauge (and its lock) per event, a
collector reads the size of every live store when Prometheus scrapes. Informers of one resource
(different namespaces or selectors) are summed under its label.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client import REGISTRY, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["GONE", "RELISTS", "WATCH_RESTARTS", "track_cached_objects"]

WATCH_RESTARTS: Final = Counter(
    "ome_informer_watch_restarts_total",
    "Watches re-opened from the last resourceVersion (server timeout, EOF, dead socket).",
    ["resource"],
)
RELISTS: Final = Counter(
    "ome_informer_relists_total",
    "Full lists after the first sync (410 Gone, failed watch), by LIST or WatchList.",
    ["resource"],
)
GONE: Final = Counter(
    "ome_informer_watch_expired_total",
    "Watches ended by 410 Gone / Expired: the resourceVersion fell out of the watch history.",
    ["resource"],
)


class _CachedObjects(Collector):
    def __init__(self) -> None:
        self._sizes: weakref.WeakKeyDictionary[object, tuple[str, Callable[[], int]]] = (
            weakref.WeakKeyDictionary()
        )

    def track(self, owner: object, resource: str, size: Callable[[], int]) -> None:
        self._sizes[owner] = (resource, size)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        totals: dict[str, int] = {}
        for resource, size in list(self._sizes.values()):
            totals[resource] = totals.get(resource, 0) + size()
        family = GaugeMetricFamily(
            "ome_informer_cached_objects", "Objects held by informer stores.", labels=["resource"]
        )
        for resource, total in sorted(totals.items()):
            family.add_metric([resource], total)
        yield family


_CACHED: Final = _CachedObjects()
REGISTRY.register(_CACHED)


def track_cached_objects(owner: object, resource: str, size: Callable[[], int]) -> None:
    """Report `size()` under `resource` for as long as `owner` lives; `size` must not keep `owner` alive."""
    _CACHED.track(owner, resource, size)
