"""The manager: one process that runs the shared cache, the HTTP servers, leader election and the
controllers, in controller-runtime's start order.

Start order: the GC policy, metrics and health servers, webhook server, cache (synced), leader
election, and only while leading the controllers and other leader-gated runnables.

Stopping:
* SIGTERM/SIGINT (or `stop()`) drains: running reconciles get `graceful_shutdown_timeout`. A stop that
  arrives before the caches synced starts no controller and `run()` returns normally, so the process
  exits 0 within the termination grace period.
* Losing the Lease stops every controller's queue and workers at once, cancels the leader runnables,
  and then `run()` raises `LeaderElectionLost` after shutting the rest down, as controller-runtime's
  Start returns "leader election lost" and its main exits non-zero. The elector declares the loss at
  the renew deadline, before any other replica can take the Lease (lease duration). In between, every
  write of the leader work is fenced by the Lease as seen by our own monotonic clock (see
  client.fence_writes), so a leader paused past its lease (SIGSTOP, a stalled VM) writes nothing when
  it wakes, even before its renew loop notices.

GC policy (`GC_THRESHOLDS`, set once by `run()` and nowhere else): decoded API objects are trees of
dicts and lists without reference cycles, so refcounting frees them and the cyclic collector is
overhead. With CPython's default gen-0 threshold (700) a busy watch triggers several collections per
event, and promotions lead to full ones over the whole cache. The thresholds below make them rare.
Nothing is frozen (`gc.freeze`): objects frozen while cached and later part of a cycle would never be
collected. Library code never touches the collector.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import structlog

from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client, fence_writes
from ome.framework.controller import Controller
from ome.framework.events import EventBudget, EventRecorder, EventSpamFilter
from ome.framework.leaderelection import Clock, LeaderElectionConfig, LeaderElector
from ome.framework.lease_watch import lease_watch
from ome.framework.probes_server import HealthProbeServer, MetricsServer, RequestFilter
from ome.framework.webhook_server import WebhookServer
from ome.framework.write_behind import Slots, WriteBehind

log = structlog.get_logger("manager")

Runnable = Callable[[], Awaitable[None]]
"""A long-running coroutine function; cancelled on shutdown."""

GC_THRESHOLDS: Final = (50_000, 50, 100)
# controller-runtime's default SyncPeriod.
DEFAULT_SYNC_PERIOD: Final = 10 * 3600.0


def apply_gc_policy() -> None:
    """The process-wide collector settings of a manager (see the module docstring)."""
    gc.set_threshold(*GC_THRESHOLDS)


class LeaderElectionLost(Exception):
    """The Lease was lost; leader work has stopped and the process should exit non-zero."""


@dataclass(kw_only=True)
class ManagerOptions:
    metrics_bind_address: str = ":8080"
    """Where /metrics listens; "0" turns it off."""
    metrics_ssl_context: ssl.SSLContext | None = None
    """Serves /metrics over HTTPS when set (--metrics-secure)."""
    metrics_filter: RequestFilter | None = None
    """Wraps the /metrics handler (--metrics-secure: TokenReview and SubjectAccessReview, metrics_auth)."""
    health_probe_bind_address: str = ":8081"
    """Where /healthz and /readyz listen; "0" turns them off."""
    leader_election: LeaderElectionConfig | None = None
    """None runs the controllers at once (a single replica, tests)."""
    cache_sync_timeout: float = 120.0
    """Seconds to wait for every informer's initial list before giving up."""
    graceful_shutdown_timeout: float = 30.0
    """Seconds running reconciles get to finish after SIGTERM."""
    sync_period: float | None = DEFAULT_SYNC_PERIOD
    """Seconds between re-enqueues of every cached primary object (jittered); None for never.
    Applied to each controller that has no sync period of its own."""
    webhook_server: WebhookServer | None = None
    on_leadership_lost: Callable[[], None] | None = None
    """Called once leader work has stopped after the Lease was lost (run() then raises LeaderElectionLost)."""
    install_signal_handlers: bool = True
    leader_election_clock: Clock | None = None
    """The elector's time source; None for the real clock (tests step a fake one)."""


@dataclass
class Manager:
    client: Client
    options: ManagerOptions = field(default_factory=ManagerOptions)

    def __post_init__(self) -> None:
        self.cache = SharedCache(self.client)
        self._controllers: list[Controller] = []
        self._leader_runnables: list[Runnable] = []
        self._runnables: list[Runnable] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._leader_tasks: list[asyncio.Task[None]] = []
        self._leading = asyncio.Event()
        self._lost = False
        self.elector: LeaderElector | None = None
        self._started_at = time.monotonic()
        self._event_budget = EventBudget()
        self._write_slots = Slots()
        self._event_filter: EventSpamFilter | None = None  # made with the first recorder

    # ---- events --------------------------------------------------------------------------------
    @property
    def event_budget(self) -> EventBudget:
        """What every recorder of this manager allows per object and event type (default client-go's)."""
        return self._event_budget

    @event_budget.setter
    def event_budget(self, budget: EventBudget) -> None:
        if self._event_filter is not None:  # recorders made so far would keep the old budget
            raise RuntimeError("the event budget must be set before the first event recorder is made")
        self._event_budget = budget

    def event_recorder(self, component: str) -> EventRecorder:
        """A recorder writing as `component` (controller-runtime's GetEventRecorderFor). All of them share
        one spam filter, as client-go's recorders of one broadcaster share its correlator."""
        if self._event_filter is None:
            self._event_filter = EventSpamFilter(self._event_budget)
        return EventRecorder(self.client, component, spam_filter=self._event_filter)

    def write_behind(self) -> WriteBehind:
        """A controller's write-behind (framework/write_behind.py); all of this manager's share one limit
        of creates in flight, as they share the client's connections."""
        return WriteBehind(slots=self._write_slots)

    # ---- registration --------------------------------------------------------------------------
    def add_controller(self, controller: Controller) -> None:
        if controller.sync_period is None:
            controller.sync_period = self.options.sync_period
        self._controllers.append(controller)

    def add_runnable(self, runnable: Runnable, *, needs_leader_election: bool = True) -> None:
        (self._leader_runnables if needs_leader_election else self._runnables).append(runnable)

    @property
    def controllers(self) -> list[Controller]:
        return list(self._controllers)

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def stop(self) -> None:
        """Begins a graceful shutdown (what SIGTERM does)."""
        self._stop.set()

    # ---- running -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Runs until stop() or SIGTERM/SIGINT, then drains; raises LeaderElectionLost after a lost Lease."""
        apply_gc_policy()  # before the first list: the initial sync allocates most of what the process holds
        if self.options.install_signal_handlers:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        metrics = MetricsServer(self.options.metrics_bind_address,
                                ssl_context=self.options.metrics_ssl_context,
                                request_filter=self.options.metrics_filter)
        probes = HealthProbeServer(self.options.health_probe_bind_address)
        self._register_checks(probes)
        await metrics.start()
        await probes.start()
        try:
            if self.options.webhook_server is not None:
                await self.options.webhook_server.start()
            for runnable in self._runnables:
                self._spawn(runnable)
            await self.cache.start()
            if await self._wait_for_cache():
                if self.options.leader_election is None:
                    await self._start_leading()
                else:
                    self._spawn(self._run_election)
                await self._stop.wait()
            else:
                log.info("stopped before the caches synced; no controller was started")
        finally:
            await self._shutdown()
            await probes.stop()
            await metrics.stop()
        if self._lost:
            raise LeaderElectionLost("leader election lost")

    async def _wait_for_cache(self) -> bool:
        """True once every informer synced; False when a stop came first. A sync timeout raises."""
        if self._stop.is_set():
            return False
        sync = asyncio.create_task(self.cache.wait_for_sync(self.options.cache_sync_timeout))
        stop = asyncio.create_task(self._stop.wait())
        try:
            done, _ = await asyncio.wait({sync, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sync, stop):
                task.cancel()
            await asyncio.gather(sync, stop, return_exceptions=True)
        if sync not in done or self._stop.is_set():
            return False
        sync.result()  # raises TimeoutError: a cache that never syncs is fatal, not silent
        log.info("caches synced", informers=len(self.cache.informers))
        return True

    async def _run_election(self) -> None:
        config = self.options.leader_election
        assert config is not None

        async def on_started() -> None:
            # Every write of the leader work (the tasks created below inherit this) checks the Lease first.
            fence_writes(self._check_lease)
            await self._start_leading()
            # Leader work lives in its own tasks; holding here keeps the lease until cancelled.
            await asyncio.Event().wait()

        self.elector = LeaderElector(
            self.client, config, on_started_leading=on_started, on_stopped_leading=self._on_lease_lost,
            on_new_leader=lambda identity: log.info("new leader observed", leader=identity),
            clock=self.options.leader_election_clock,
            watch_lease=lease_watch(self.client, config.lease_namespace, config.lease_name),
        )
        await self.elector.run()

    def _check_lease(self) -> None:
        if self._lost or self.elector is None or not self.elector.holds_lease():
            raise errors.NotLeader(0, "NotLeader", "the leader election Lease is not held; write refused")

    def _on_lease_lost(self) -> None:
        """Synchronous on purpose: no other task runs before every controller and leader task is stopped."""
        self._lost = True
        self._leading.clear()
        for controller in self._controllers:
            controller.abort()
        for task in self._leader_tasks:
            task.cancel()
        log.error("leader election lost")
        if self.options.on_leadership_lost is not None:
            self.options.on_leadership_lost()
        self.stop()

    async def _start_leading(self) -> None:
        log.info("starting controllers", controllers=[c.name for c in self._controllers])
        for controller in self._controllers:
            await controller.start()
        for runnable in self._leader_runnables:
            self._leader_tasks.append(self._spawn(runnable))
        self._leading.set()

    def _spawn(self, runnable: Runnable) -> asyncio.Task[None]:
        task = asyncio.create_task(self._guard(runnable))
        self._tasks.append(task)
        return task

    async def _guard(self, runnable: Runnable) -> None:
        try:
            await runnable()
        except asyncio.CancelledError:
            raise
        except Exception:
            name = getattr(runnable, "__name__", repr(runnable))
            log.exception("runnable failed; shutting down", runnable=name)
            self.stop()

    async def _shutdown(self) -> None:
        log.info("shutting down")
        grace = 0.0 if self._lost else self.options.graceful_shutdown_timeout
        await asyncio.gather(*(c.stop(grace_period=grace) for c in self._controllers), return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._leading.clear()
        if self.options.webhook_server is not None:
            await self.options.webhook_server.stop()
        await self.cache.stop()

    def _register_checks(self, probes: HealthProbeServer) -> None:
        probes.add_healthz("ping", lambda: True)
        probes.add_healthz("leader-election", self._lease_healthy)
        probes.add_readyz("cache-synced", lambda: self.cache.has_synced)
        if self.options.webhook_server is not None:
            server = self.options.webhook_server
            probes.add_readyz("webhook", lambda: server.ready)

    def _lease_healthy(self) -> bool:
        # A wedged leader (stalled loop, hung renewals) fails /healthz so the kubelet restarts it.
        return self.elector is None or self.elector.healthz_check()
