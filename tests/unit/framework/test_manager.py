"""manager.Manager against the fake apiserver: stop before sync, a lost Lease, the GC policy, resync wiring.

Leader election runs on a fake clock the test steps, so a "paused" leader is a clock jump, not a wait.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.framework import errors, resources
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.leaderelection import LeaderElectionConfig
from ome.framework.manager import GC_THRESHOLDS, LeaderElectionLost, Manager, ManagerOptions
from ome.framework.reconcile import Request, Result, reconciler_from
from ome.framework.transport import ClientSettings, RetryPolicy
from tests.unit.framework.fake_apiserver import FakeApiServer
from tests.unit.framework.test_leaderelection import FakeClock, settle

Obj = dict[str, Any]
CONFIGMAPS = resources.CONFIGMAPS


def cm(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    await server.start()
    server.add(CONFIGMAPS, cm("watched"))
    yield server
    await server.stop()


@pytest.fixture
async def client(fake: FakeApiServer) -> AsyncIterator[Client]:
    settings = ClientSettings(retry=RetryPolicy(max_retries=0))
    async with Client.from_configuration(Configuration(host=fake.url), settings) as c:
        yield c


def options(**kwargs: Any) -> ManagerOptions:
    kwargs.setdefault("cache_sync_timeout", 30.0)
    return ManagerOptions(
        metrics_bind_address="0", health_probe_bind_address="0", install_signal_handlers=False, **kwargs
    )


async def until(condition: Callable[[], bool], within: float = 5.0) -> None:
    """Wait for something the code under test does (not for time to pass)."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 -- the conditions are plain state, no event to wait on
            await asyncio.sleep(0.005)


async def test_a_stop_before_the_caches_sync_starts_no_controller_and_returns_cleanly(
    client: Client, fake: FakeApiServer
) -> None:
    fake.fail("GET", "/configmaps", 500, times=100_000)  # the first list never succeeds
    calls: list[Request] = []

    async def reconcile(req: Request) -> Result:
        calls.append(req)
        return Result()

    manager = Manager(client, options())
    controller = Controller("never", reconciler_from(reconcile), cache_sync_timeout=30.0)
    controller.for_(manager.cache.informer_for(CONFIGMAPS, namespace="ns"))
    manager.add_controller(controller)
    run = asyncio.create_task(manager.run())
    await until(lambda: any("/configmaps" in r.path for r in fake.requests))
    manager.stop()  # what SIGTERM does
    await asyncio.wait_for(run, 5)  # returns (exit 0), no TimeoutError from a controller start
    assert controller._workers == []  # noqa: SLF001
    assert not manager.is_leader and calls == []


async def test_the_manager_sets_the_gc_policy_and_nothing_is_frozen(client: Client) -> None:
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    manager = Manager(client, options())
    manager.cache.informer_for(CONFIGMAPS, namespace="ns")
    run = asyncio.create_task(manager.run())
    await until(lambda: manager.cache.has_synced and manager.is_leader)
    manager.stop()
    await asyncio.wait_for(run, 5)
    assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_freeze_count() == 0


def test_controllers_get_the_managers_sync_period_unless_they_have_their_own(client: Client) -> None:
    manager = Manager(client, options(sync_period=600.0))
    plain = Controller("plain", reconciler_from(lambda req: _ok()))
    own = Controller("own", reconciler_from(lambda req: _ok()), sync_period=60.0)
    manager.add_controller(plain)
    manager.add_controller(own)
    assert (plain.sync_period, own.sync_period) == (600.0, 60.0)
    assert ManagerOptions().sync_period == 10 * 3600.0, "controller-runtime's default SyncPeriod"


async def _ok() -> Result:
    return Result()


async def test_a_lost_lease_stops_every_controller_fences_writes_and_ends_run(
    client: Client, fake: FakeApiServer
) -> None:
    clock = FakeClock()
    election = LeaderElectionConfig(lease_name="lock", lease_namespace="ns", identity="me")
    lost_hook: list[bool] = []
    manager = Manager(
        client, options(leader_election=election, leader_election_clock=clock,
                        on_leadership_lost=lambda: lost_hook.append(manager.is_leader))
    )  # fmt: skip
    entered, resume = asyncio.Event(), asyncio.Event()
    outcomes: list[BaseException | None] = []

    async def reconcile(req: Request) -> Result:
        entered.set()
        await resume.wait()  # the process is "paused" here while the Lease runs out
        try:
            await client.create(CONFIGMAPS, cm(f"written-by-{req.name}"))
        except errors.NotLeader as exc:
            outcomes.append(exc)
            raise
        outcomes.append(None)
        return Result()

    runnable_cancelled = asyncio.Event()

    async def leader_runnable() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            runnable_cancelled.set()
            raise

    controller = Controller("leader-work", reconciler_from(reconcile), max_concurrent_reconciles=2)
    controller.for_(manager.cache.informer_for(CONFIGMAPS, namespace="ns"))
    manager.add_controller(controller)
    manager.add_runnable(leader_runnable)
    run = asyncio.create_task(manager.run())
    await until(lambda: entered.is_set())
    assert manager.is_leader and manager.elector is not None and manager.elector.holds_lease()

    clock.step(10.5)  # past the renew deadline (10 s) in one jump: a SIGSTOP, a stalled VM
    resume.set()  # the reconcile wakes before the renew loop has noticed anything
    await until(lambda: bool(outcomes))
    assert isinstance(outcomes[0], errors.NotLeader), "a write after the renew deadline is refused"
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(run, 5)
    assert lost_hook == [False], "the hook runs after leader work stopped"
    assert controller.queue.shutting_down and all(w.done() for w in controller._workers)  # noqa: SLF001
    assert runnable_cancelled.is_set()
    assert not [r for r in fake.requests if r.method == "POST" and "/configmaps" in r.path]
    await settle()


async def test_a_clean_stop_of_a_leader_is_not_a_loss(client: Client, fake: FakeApiServer) -> None:
    clock = FakeClock()
    election = LeaderElectionConfig(lease_name="lock2", lease_namespace="ns", identity="me")
    manager = Manager(client, options(leader_election=election, leader_election_clock=clock))
    manager.add_controller(
        Controller("idle", reconciler_from(lambda req: _ok())).for_(
            manager.cache.informer_for(CONFIGMAPS, namespace="ns")
        )
    )
    run = asyncio.create_task(manager.run())
    await until(lambda: manager.is_leader)
    manager.stop()
    await asyncio.wait_for(run, 5)  # no LeaderElectionLost
