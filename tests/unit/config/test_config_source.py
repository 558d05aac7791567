"""Reconcilers see ConfigMap edits within the TTL; a bad edit keeps the last valid config."""

from __future__ import annotations

from typing import Any

from ome.config.config_source import ConfigSource
from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.framework import errors
from ome.framework.resources import Resource


class FakeApi:
    def __init__(self) -> None:
        self.data: dict[str, str] | None = {}
        self.reads = 0
        self.fail = False

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.reads += 1
        if self.fail:
            raise errors.ApiError(503, "ServiceUnavailable", "apiserver busy")
        if self.data is None:
            raise errors.NotFound(404, "NotFound", f'configmaps "{name}" not found')
        return {"data": dict(self.data)}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _grace(config: InferenceServiceConfig) -> Any:
    return config.deploy.termination_grace_period_seconds


async def test_an_edit_is_read_once_the_ttl_passes() -> None:
    api, clock = FakeApi(), Clock()
    source = ConfigSource(api, "ome", InferenceServiceConfig(), ttl=30, clock=clock)
    api.data = {"deploy": '{"defaultDeploymentMode": "RawDeployment", "terminationGracePeriodSeconds": 120}'}
    assert _grace(await source.current()) == 600  # within the TTL: no read
    assert api.reads == 0
    clock.now += 30
    assert _grace(await source.current()) == 120
    assert api.reads == 1
    await source.current()
    assert api.reads == 1  # the next read waits for the TTL again


async def test_a_bad_edit_keeps_the_last_valid_config() -> None:
    api, clock = FakeApi(), Clock()
    good = parse({"deploy": '{"defaultDeploymentMode": "RawDeployment", "terminationGracePeriodSeconds": 90}'})
    source = ConfigSource(api, "ome", good, ttl=0, clock=clock)
    api.data = {"deploy": '{"defaultDeploymentMode": "Bogus"}'}
    assert _grace(await source.current()) == 90
    api.fail = True
    assert _grace(await source.current()) == 90
    api.fail, api.data = False, None  # deleted: every default, as at startup
    assert _grace(await source.current()) == 600


async def test_zero_ttl_reads_every_time() -> None:
    api, clock = FakeApi(), Clock()
    source = ConfigSource(api, "ome", InferenceServiceConfig(), ttl=0, clock=clock)
    for _ in range(3):
        await source.current()
    assert api.reads == 3
