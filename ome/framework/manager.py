"""The manager: one process that runs the shared cache, the HTTP servers, leader election and the
controllers, in controller-runtime's start order.

Start order: metrics and health servers, webhook server, cache (synced, then GC-frozen), leader election,
and only while leading the controllers and other leader-gated runnables. SIGTERM/SIGINT drain and exit.
Losing the lease ends the process at once (no graceful drain): another replica is already taking over.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from ome.framework.cache import SharedCache, tune_gc
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.leaderelection import LeaderElectionConfig, LeaderElector
from ome.framework.probes_server import HealthProbeServer, MetricsServer
from ome.framework.webhook_server import WebhookServer

log = structlog.get_logger("manager")

Runnable = Callable[[], Awaitable[None]]
"""A long-running coroutine function; cancelled on shutdown."""


@dataclass(kw_only=True)
class ManagerOptions:
    metrics_bind_address: str = ":8080"
    """Where /metrics listens; "0" turns it off."""
    health_probe_bind_address: str = ":8081"
    """Where /healthz and /readyz listen; "0" turns them off."""
    leader_election: LeaderElectionConfig | None = None
    """None runs the controllers at once (a single replica, tests)."""
    cache_sync_timeout: float = 120.0
    """Seconds to wait for every informer's initial list before giving up."""
    graceful_shutdown_timeout: float = 30.0
    """Seconds running reconciles get to finish after SIGTERM."""
    webhook_server: WebhookServer | None = None
    on_leadership_lost: Callable[[], None] | None = None
    """Called when the lease is lost; the default exits the process with status 1."""
    install_signal_handlers: bool = True


def _exit_on_lost_lease() -> None:
    log.error("leader election lost; exiting")
    os._exit(1)  # no drain: a new leader may already be running, so we must stop acting now


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
        self._leading = asyncio.Event()
        self.elector: LeaderElector | None = None
        self._started_at = time.monotonic()

    # ---- registration --------------------------------------------------------------------------
    def add_controller(self, controller: Controller) -> None:
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
        """Runs until stop() or SIGTERM/SIGINT, then drains."""
        tune_gc()  # before the first list: the initial sync allocates most of what the process will hold
        if self.options.install_signal_handlers:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        metrics = MetricsServer(self.options.metrics_bind_address)
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
            await self._wait_for_cache()
            if self.options.leader_election is None:
                await self._start_leading()
            else:
                self._spawn(self._run_election)
            await self._stop.wait()
        finally:
            await self._shutdown()
            await probes.stop()
            await metrics.stop()

    async def _wait_for_cache(self) -> None:
        sync = asyncio.create_task(self.cache.wait_for_sync(self.options.cache_sync_timeout))
        stop = asyncio.create_task(self._stop.wait())
        done, _ = await asyncio.wait({sync, stop}, return_when=asyncio.FIRST_COMPLETED)
        if sync not in done:
            sync.cancel()
            return
        stop.cancel()
        sync.result()  # raises TimeoutError: a cache that never syncs is fatal, not silent
        log.info("caches synced", informers=len(self.cache.informers))

    async def _run_election(self) -> None:
        config = self.options.leader_election
        assert config is not None
        lost = self.options.on_leadership_lost or _exit_on_lost_lease

        async def on_started() -> None:
            await self._start_leading()
            # Leader work lives in its own tasks; holding here keeps the lease until cancelled.
            await asyncio.Event().wait()

        self.elector = LeaderElector(
            self.client, config, on_started_leading=on_started, on_stopped_leading=lost,
            on_new_leader=lambda identity: log.info("new leader observed", leader=identity),
        )
        await self.elector.run()

    async def _start_leading(self) -> None:
        log.info("starting controllers", controllers=[c.name for c in self._controllers])
        for controller in self._controllers:
            await controller.start()
        for runnable in self._leader_runnables:
            self._spawn(runnable)
        self._leading.set()

    def _spawn(self, runnable: Runnable) -> None:
        task = asyncio.create_task(self._guard(runnable))
        self._tasks.append(task)

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
        grace = self.options.graceful_shutdown_timeout
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
