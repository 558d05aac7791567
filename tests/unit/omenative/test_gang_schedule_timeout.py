"""lifecycle.gangScheduleTimeout against concepts/serving/gang-scheduling.md (v1.3): the PodGroup's
`scheduleTimeoutSeconds` is the ready timeout clamped between `min` and `max`."""

from __future__ import annotations

import pytest

from ome.api.resources import INFERENCE_REPLICAS
from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg
from ome.controllers.inferencereplica.pod_groups import PODGROUPS
from ome.controllers.inferencereplica.reconciler import InferenceReplicaReconciler
from ome.omenative.gang_timeout import schedule_timeout_seconds, timeout_patches
from ome.omenative.settings import InferenceReplicaSettings
from tests.unit.controllers.inferencereplica.world import REQ, World
from tests.unit.omenative.builders import replica as replica_body

CLAMP = (60.0, 600.0)


@pytest.mark.parametrize(("ready", "clamp", "want"), [
    (300.0, CLAMP, 300),  # "Between min and max | Set | The ready timeout"
    (1800.0, CLAMP, 600),  # "Above max | Set | max"
    (30.0, CLAMP, 60),  # "Below min, or unset | Set | min"
    (None, CLAMP, 60),
    (1800.0, None, 1800),  # "Set | Unset | The ready timeout: 1800 in the kustomize install"
    (None, None, None),  # "Unset | Unset | Unset: the scheduler's default applies"
])
def test_the_documented_table(ready: float | None, clamp: tuple[float, float] | None, want: int | None) -> None:
    assert schedule_timeout_seconds(ready, clamp) == want


def test_the_chart_values_reach_the_controller() -> None:
    """"`gangScheduleTimeout: {min: 60s, max: 600s}` ... With these values, the 30-minute ready timeout
    becomes 600 seconds"."""
    config = cfg.parse({"lifecycle": '{"instanceReadyTimeout": "30m", '
                                     '"gangScheduleTimeout": {"min": "60s", "max": "600s"}}'})
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome").replica_settings()
    assert settings.gang_schedule_timeout == CLAMP
    assert schedule_timeout_seconds(settings.instance_ready_timeout, settings.gang_schedule_timeout) == 600
    assert config.lifecycle.not_acted_on() == []


@pytest.mark.parametrize("block", [
    '{"min": "60s"}', '{"max": "600s"}', '{"min": "0s", "max": "600s"}', '{"min": "-60s", "max": "600s"}',
    '{"min": "10m", "max": "60s"}', '{"min": "60", "max": "600s"}',
])
def test_an_invalid_clamp_is_treated_as_unset(block: str) -> None:
    """"`gangScheduleTimeout` needs both `min` and `max`, positive, with `min` no larger than `max`. OME
    treats an invalid one as unset." """
    assert cfg.parse({"lifecycle": f'{{"gangScheduleTimeout": {block}}}'}).lifecycle.gang_clamp() is None


def test_a_value_that_does_not_decode_stops_the_start() -> None:
    """A bare number for a duration does not decode: `unable to parse lifecycle config json`."""
    with pytest.raises(cfg.ConfigError) as info:
        cfg.parse({"lifecycle": '{"gangScheduleTimeout": {"min": 60, "max": "600s"}}'})
    assert str(info.value).startswith("Failed to initialize lifecycle scale configuration: unable to parse")
    assert "gangScheduleTimeout" in str(info.value)


async def test_the_podgroup_carries_the_clamped_timeout() -> None:
    """"`scheduleTimeoutSeconds: 600`" for a leader and one worker with the chart's values."""
    world = World(instance_ready_timeout=1800.0, gang_schedule_timeout=CLAMP)
    world.api.served.add("podgroups")
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=1, workers=1))
    await world.reconcile()
    group = world.api.get(PODGROUPS, "chat-engine-0")
    assert group is not None
    assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 600}


async def test_without_a_clamp_the_podgroup_takes_the_ready_timeout() -> None:
    world = World(instance_ready_timeout=1800.0)
    world.api.served.add("podgroups")
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=1, workers=1))
    await world.reconcile()
    group = world.api.get(PODGROUPS, "chat-engine-0")
    assert group is not None and group["spec"]["scheduleTimeoutSeconds"] == 1800


async def test_existing_podgroups_take_the_new_timeout() -> None:
    """"OME updates existing PodGroups to the new timeout": a manager started with new settings patches the
    PodGroups it finds, once, and later passes make no write."""
    world = World(instance_ready_timeout=1800.0)
    world.api.served.add("podgroups")
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=1, workers=1))
    await world.settle()
    old = world.api.get(PODGROUPS, "chat-engine-0")
    assert old is not None and old["spec"]["scheduleTimeoutSeconds"] == 1800
    restarted = InferenceReplicaReconciler(  # a new manager against the same cluster
        world.client,  # type: ignore[arg-type]
        world.api,  # type: ignore[arg-type]
        InferenceReplicaSettings(instance_ready_timeout=1800.0, gang_schedule_timeout=CLAMP),
        now=lambda: world.now,
    )
    await restarted.reconcile(REQ)
    group = world.api.get(PODGROUPS, "chat-engine-0")
    assert group is not None and group["spec"]["scheduleTimeoutSeconds"] == 600
    writes = restarted.writes
    await restarted.reconcile(REQ)
    assert restarted.writes == writes


def test_only_podgroups_with_another_timeout_are_patched() -> None:
    groups = [{"metadata": {"name": "a"}, "spec": {"minMember": 2, "scheduleTimeoutSeconds": 1800}},
              {"metadata": {"name": "b"}, "spec": {"minMember": 2, "scheduleTimeoutSeconds": 600}}]
    assert timeout_patches(groups, 600) == [("a", {"spec": {"scheduleTimeoutSeconds": 600}})]
    assert [n for n, _ in timeout_patches(groups, None)] == ["a", "b"]
