"""Settings the manager derives from inferenceservice-config: the InferenceReplica controller's, and the
event budget of every recorder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg
from ome.framework.client import Client
from ome.framework.events import EventBudget, EventRecorder
from ome.framework.manager import Manager, ManagerOptions


def _settings(lifecycle: str) -> wiring.Settings:
    config = cfg.parse({"lifecycle": lifecycle})
    return wiring.Settings(config, lws_served=False, config_namespace="ome", pod_monitor_served=True)


def test_lifecycle_entry_reaches_the_replica_settings() -> None:
    s = _settings('{"instanceReadyTimeout": "45m", "teardown": {"deadline": "1h30m"},'
                  ' "updateRetry": {"initialDelay": "30s", "maxDelay": "10m", "multiplier": 3}}')
    replica = s.replica_settings()
    assert replica.instance_ready_timeout == 2700
    assert replica.teardown_deadline == 5400
    assert (replica.retry_initial_delay, replica.retry_max_delay, replica.retry_multiplier) == (30, 600, 3)
    assert replica.pod_monitor_served is True


def test_no_teardown_deadline_holds_the_finalizer() -> None:
    assert _settings('{"instanceReadyTimeout": "30m"}').replica_settings().teardown_deadline is None


def test_bad_teardown_deadline_is_a_startup_error() -> None:
    with pytest.raises(cfg.ConfigError, match="teardown.deadline"):
        cfg.parse({"lifecycle": '{"teardown": {"deadline": "soon"}}'})


# ---- the event budget: from the eventRecorder entry to every recorder of the manager ---------------------


def test_the_event_budget_comes_from_the_event_recorder_entry() -> None:
    config = cfg.parse({"eventRecorder": '{"burstSize": 40, "refillInterval": "2s"}'})
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome")
    assert settings.event_budget == EventBudget(burst=40, refill_interval=2.0)
    plain = wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome")
    assert plain.event_budget == EventBudget(burst=25, refill_interval=300.0)


@pytest.fixture
async def manager() -> AsyncIterator[Manager]:
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9")) as client:
        yield Manager(client, ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0",
                                             install_signal_handlers=False))


async def test_the_managers_recorders_share_its_budget(manager: Manager) -> None:
    assert manager.event_budget == EventBudget(25, 300.0)  # client-go's unless set
    manager.event_budget = EventBudget(3, 1.0)
    first, second = manager.event_recorder("a"), manager.event_recorder("b")
    assert first.budget == second.budget == EventBudget(3, 1.0)
    assert first._spam is second._spam  # noqa: SLF001 - one filter, as client-go's one correlator
    with pytest.raises(RuntimeError):
        manager.event_budget = EventBudget(5, 1.0)  # too late: the recorders above would keep 3


async def test_every_recorder_the_controllers_make_has_the_configured_budget(
    manager: Manager, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[EventRecorder] = []
    init = EventRecorder.__init__

    def recording_init(self: EventRecorder, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(EventRecorder, "__init__", recording_init)
    settings = wiring.Settings(cfg.parse({"eventRecorder": '{"burstSize": 400, "refillInterval": "5s"}'}),
                               lws_served=False, config_namespace="ome")
    manager.event_budget = settings.event_budget  # as ome-manager does, before the controllers
    wiring.add_controllers(manager, settings)
    assert len(made) >= 8  # the InferenceService, autoscaler, replica, rollout, ... controllers
    assert all(r.budget == EventBudget(400, 5.0) for r in made)
    assert len({id(r._spam) for r in made}) == 1  # noqa: SLF001 - all made by manager.event_recorder


async def test_the_service_and_replica_controllers_share_one_write_behind_limit(manager: Manager) -> None:
    """Their Service creates run beside their passes on the manager's one client: one limit for both,
    and each controller's stop cancels what it left in flight."""
    wiring.add_controllers(manager, wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome"))
    by_name = {c.name: c for c in manager._controllers}  # noqa: SLF001
    behinds = [by_name["inferenceservice"]._reconciler._behind,  # noqa: SLF001
               by_name["inferencereplica"]._reconciler._children._behind]  # noqa: SLF001 - its Service writes
    assert all(b is not None for b in behinds)
    assert behinds[0]._slots is behinds[1]._slots  # noqa: SLF001
    assert all(len(by_name[name]._stop_hooks) == 1 for name in ("inferenceservice", "inferencereplica"))  # noqa: SLF001


@pytest.mark.parametrize("replica_controller", [True, False])
async def test_replicas_get_the_teardown_finalizer_at_create_only_with_their_controller(
    manager: Manager, replica_controller: bool
) -> None:
    settings = wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome")
    settings.inferencereplica_controller = replica_controller  # --enable-inferencereplica-controller
    wiring.add_controllers(manager, settings)
    by_name = {c.name: c for c in manager._controllers}  # noqa: SLF001
    assert by_name["inferenceservice"]._reconciler._replica_teardown is replica_controller  # noqa: SLF001
    assert ("inferencereplica" in by_name) is replica_controller
