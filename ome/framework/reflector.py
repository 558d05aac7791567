"""List-then-watch loop for one resource (client-go `tools/cache/reflector.go`, framework.md §3.1-3.3).

A Reflector keeps a `Target` (the informer) equal to the apiserver's state:

1. Sync: a WatchList (`sendInitialEvents`; the state arrives as ADDED events and ends with a
   BOOKMARK annotated `k8s.io/initial-events-end`) or, when the server rejects that or the stream
   fails before the bookmark, a paginated LIST (`limit`/`continue`; the first one a consistent read,
   since RV "0" makes the apiserver ignore `limit`). Either ends in `target.replace(objects, rv)`.
   WatchList is preferred: measured on a 10,000-Pod cluster it costs the client a third and the
   apiserver half the CPU of the paginated LIST, and each event is decoded on its own line, so no
   step holds the event loop for more than one object.
2. Watch from the synced resourceVersion with bookmarks and a random timeoutSeconds in
   [min, 2*min], so hanging watchers are cut and reconnects spread out.
3. A watch that ends normally (timeout, EOF, truncated chunk, dead socket) is re-opened from the
   last resourceVersion. 410 Gone goes back to step 1 from the last resourceVersion; if that list
   is expired too, it lists again with RV "" (a consistent read from etcd).

Between attempts at step 1 the loop backs off (0.8 s doubling to 30 s, jittered, reset after 2
min without failures). A watch that closes within a second with no events counts as a failure.

The resourceVersion is taken only from the list, the initial-events-end bookmark, and events of a
watch started from a known RV: never from the synthetic ADDED events of an initial stream, which
are not in RV order (§3.2). RVs are compared for equality only.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Final, Protocol

import structlog

from ome.framework import errors, informer_metrics
from ome.framework.client import Client, Selector, selector_string
from ome.framework.resources import Resource
from ome.framework.store import object_key, resource_version

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]

INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReflectorSettings:
    """Timings of the list-watch loop; the defaults are client-go's."""

    page_size: int = 500
    """Items per LIST page; 0 lists in one response."""
    min_watch_timeout: int = 300
    """Watch timeoutSeconds is drawn uniformly from [this, 2 x this]."""
    initial_backoff: float = 0.8
    """Seconds before the first retry of a failed sync; doubles per failure."""
    max_backoff: float = 30.0
    backoff_reset: float = 120.0
    """Seconds without a failure after which the backoff starts again from `initial_backoff`."""
    backoff_jitter: float = 1.0
    """Each wait is stretched by a random factor in [1, 1 + jitter]."""
    short_watch: float = 1.0
    """A watch that ends sooner than this with no events is treated as a failure."""
    use_watch_list: bool = True
    """Try WatchList before LIST; turned off for the reflector's life once the server rejects it."""

    def __post_init__(self) -> None:
        if self.min_watch_timeout < 1 or self.page_size < 0:
            raise ValueError("min_watch_timeout must be >= 1 and page_size >= 0")
        if not 0 < self.initial_backoff <= self.max_backoff:
            raise ValueError("need 0 < initial_backoff <= max_backoff")


class Target(Protocol):
    """Where a reflector delivers state; both calls are synchronous and must not block.

    Until the first `replace`, `apply` may already carry objects of the initial WatchList, which that
    `replace` then confirms or drops (see `Reflector._buffer`).
    """

    def replace(self, objs: list[Obj], resource_version: str) -> None: ...

    def apply(self, event_type: str, obj: Obj) -> None: ...


class Backoff:
    """client-go's exponential backoff manager: doubling, capped, jittered, reset after quiet time."""

    def __init__(
        self,
        settings: ReflectorSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,  # None for a fresh RNG; tests pin it
    ) -> None:
        self._settings = settings
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self._next = settings.initial_backoff
        self._last: float | None = None

    def next(self) -> float:
        now = self._monotonic()
        if self._last is not None and now - self._last > self._settings.backoff_reset:
            self._next = self._settings.initial_backoff
        self._last = now
        delay = self._next
        self._next = min(self._next * 2, self._settings.max_backoff)
        return delay * (1 + self._rng.random() * self._settings.backoff_jitter)


class _SyncFailed(Exception):
    """The WatchList stream ended or failed before its initial-events-end bookmark."""


class _VeryShortWatch(Exception):
    """The watch closed within `short_watch` seconds without events: the server is unwell."""


class Reflector:
    """Runs list-then-watch for one (resource, namespace, selectors, metadata-only) until cancelled."""

    def __init__(
        self,
        client: Client,
        res: Resource,
        target: Target,
        *,
        namespace: str | None = None,
        label_selector: Selector | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = None,
        settings: ReflectorSettings | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,  # None for a fresh RNG; tests pin it
    ) -> None:
        self._client = client
        self._res = res
        self._target = target
        self._query: dict[str, Any] = {
            "label_selector": selector_string(label_selector),
            "field_selector": field_selector,
            "metadata_only": metadata_only,
        }
        self._namespace = namespace
        self._transform = transform
        self._settings = settings or ReflectorSettings()
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self._backoff = Backoff(self._settings, monotonic=monotonic, rng=self._rng)
        self._use_watch_list = self._settings.use_watch_list
        self._rv = ""
        # Set when a LIST at our last RV answered 410: the next one must read from etcd (RV "").
        self._rv_unavailable = False
        self._synced_once = False
        self._log = _log.bind(resource=res.name, namespace=namespace)
        self._metric = res.name

    @property
    def last_sync_resource_version(self) -> str:
        return self._rv

    async def run(self) -> None:
        """List and watch forever; failures are logged and retried with backoff."""
        while True:
            try:
                await self._list_and_watch()
            except errors.ApiError as exc:
                self._log.warning("List and watch failed", error=str(exc))
            except _VeryShortWatch:
                self._log.warning("Watch closed immediately without events")
            except Exception:
                self._log.exception("List and watch failed")
            await asyncio.sleep(self._backoff.next())

    async def _list_and_watch(self) -> None:
        if not self._use_watch_list:
            await self._list()
        await self._watch_loop(initial=self._use_watch_list)

    async def _watch_loop(self, *, initial: bool) -> None:
        """Watch, re-opening from the last RV, until a relist is needed; then return."""
        reopen = False
        while True:
            if reopen:
                informer_metrics.WATCH_RESTARTS.labels(self._metric).inc()
            reopen = True
            try:
                await self._watch(initial=initial)
            except _SyncFailed as exc:
                self._log.info("WatchList failed; falling back to LIST", error=str(exc))
                if isinstance(exc.__cause__, errors.BadRequest | errors.Invalid):
                    self._use_watch_list = False  # the server does not support it; stop asking
                await self._list()
                reopen = False
            except errors.Gone:
                informer_metrics.GONE.labels(self._metric).inc()
                self._log.info("Watch expired; relisting", resource_version=self._rv)
                return
            except errors.TooManyRequests:
                await asyncio.sleep(self._backoff.next())
            initial = False

    async def _watch(self, *, initial: bool) -> None:
        """One watch request, consumed to its end. `initial` makes it a WatchList sync first."""
        start = self._monotonic()
        timeout = int(self._settings.min_watch_timeout * (1 + self._rng.random()))
        buffered: dict[str, Obj] | None = {} if initial else None
        events = 0
        stream = self._client.watch(
            self._res,
            self._namespace,
            resource_version="" if initial and self._rv_unavailable else self._rv,
            timeout_seconds=timeout,
            send_initial_events=initial,
            **self._query,
        )
        try:
            async with aclosing(stream):
                async for event_type, obj in stream:
                    events += 1
                    if buffered is None:
                        self._handle(event_type, obj)
                    elif self._buffer(buffered, event_type, obj):
                        buffered = None  # synced; the same stream goes on with live events
        except (errors.ServerTimeout, errors.TransportError) as exc:
            # Dead socket or truncated stream: the RV we hold is still good, so just re-watch.
            if buffered is not None:
                raise _SyncFailed(str(exc)) from exc
            self._log.debug("Watch connection lost", error=str(exc))
        except errors.ApiError as exc:
            if buffered is not None:
                raise _SyncFailed(str(exc)) from exc
            raise
        if buffered is not None:
            raise _SyncFailed("stream ended before the initial-events-end bookmark")
        if events == 0 and self._monotonic() - start < self._settings.short_watch:
            raise _VeryShortWatch()

    def _handle(self, event_type: str, obj: Obj) -> None:
        rv = resource_version(obj)
        if event_type != "BOOKMARK":
            self._target.apply(event_type, self._transform(obj) if self._transform else obj)
        if rv:
            self._rv = rv

    def _buffer(self, buffered: dict[str, Obj], event_type: str, obj: Obj) -> bool:
        """Collect the initial state of a WatchList; True once it is complete and delivered.

        Before the first sync the target also gets each event as it arrives, so storing 10,000 objects
        is spread over the stream instead of holding the event loop in one `replace` at the bookmark;
        that `replace` then only drops what a broken earlier attempt left behind (the informer tells
        its handlers at that `replace`). Later relists stay atomic: the target's state is the previous
        sync until the new one is whole.
        """
        if event_type == "BOOKMARK":
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if annotations.get(INITIAL_EVENTS_END) != "true":
                return False
            self._synced(list(buffered.values()), resource_version(obj))
            return True
        item = self._transform(obj) if self._transform else obj
        if event_type == "DELETED":
            buffered.pop(object_key(item), None)
        else:
            buffered[object_key(item)] = item
        if not self._synced_once:
            self._target.apply(event_type, item)
        return False

    async def _list(self) -> None:
        rv = self._relist_resource_version()
        try:
            items, list_rv = await self._paginated_list(rv)
        except errors.Gone:
            if rv == "":
                raise
            # Our RV fell out of the history: read the current state from etcd instead.
            self._rv_unavailable = True
            items, list_rv = await self._paginated_list("")
        self._synced(items, list_rv)

    async def _paginated_list(self, rv: str) -> tuple[list[Obj], str]:
        return await self._client.list(
            self._res,
            self._namespace,
            limit=self._settings.page_size,
            resource_version=rv,
            # Without it a paginated list at a specific RV means "exactly that RV", which fails with
            # 410 once etcd compacts it; "not older than" is what a relist needs.
            resource_version_match="NotOlderThan" if rv not in ("", "0") else None,
            transform=self._transform,
            **self._query,
        )

    def _relist_resource_version(self) -> str:
        # The first list, and one after an expired RV, is a consistent read (RV unset), which the
        # apiserver pages by `limit` (from its watch cache since 1.31). client-go's RV "0" would be
        # answered in one response whatever the limit: 10,000 Pods as one 50 MB body, decoded at once.
        return "" if self._rv_unavailable else self._rv

    def _synced(self, items: list[Obj], rv: str) -> None:
        if self._synced_once:
            informer_metrics.RELISTS.labels(self._metric).inc()
        self._rv = rv
        self._rv_unavailable = False
        self._synced_once = True
        self._target.replace(items, rv)
