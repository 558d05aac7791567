from __future__ import annotations

from typing import Any

import pytest

from ome.framework import errors
from ome.framework.conflict import is_conflict, retry_on_conflict


class Store:
    """An object with a resourceVersion that another writer bumps `races` times."""

    def __init__(self, races: int) -> None:
        self.obj: dict[str, Any] = {"rv": 1, "replicas": 1}
        self.races = races
        self.reads = 0
        self.writes = 0

    def get(self) -> dict[str, Any]:
        self.reads += 1
        return dict(self.obj)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.writes += 1
        if self.races > 0:  # someone else wrote between our read and our write
            self.races -= 1
            self.obj["rv"] += 1
        if obj["rv"] != self.obj["rv"]:
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        self.obj = {**obj, "rv": obj["rv"] + 1}
        return self.obj


async def test_retries_conflicts_re_reading_each_time() -> None:
    store = Store(races=2)

    async def scale() -> dict[str, Any]:
        current = store.get()
        return store.update({**current, "replicas": 3})

    result = await retry_on_conflict(scale, duration=0.001)
    assert result["replicas"] == 3
    assert store.reads == 3 and store.writes == 3


async def test_gives_up_after_steps_and_raises_the_conflict() -> None:
    store = Store(races=100)

    async def scale() -> dict[str, Any]:
        return store.update({**store.get(), "replicas": 3})

    with pytest.raises(errors.Conflict):
        await retry_on_conflict(scale, steps=5, duration=0.001)
    assert store.writes == 5


@pytest.mark.parametrize(
    "exc",
    [
        errors.AlreadyExists(409, "AlreadyExists", "exists"),
        errors.NotFound(404, "NotFound", "gone"),
        RuntimeError("boom"),
    ],
    ids=["already-exists", "not-found", "other"],
)
async def test_other_errors_are_not_retried(exc: Exception) -> None:
    calls = 0

    async def fail() -> None:
        nonlocal calls
        calls += 1
        raise exc

    with pytest.raises(type(exc)):
        await retry_on_conflict(fail, duration=0.001)
    assert calls == 1


def test_conflict_is_duck_typed_on_status() -> None:
    class Foreign(Exception):
        status = 409

    assert is_conflict(Foreign())
    assert is_conflict(errors.Conflict(409, "Conflict", "x"))
    assert not is_conflict(errors.AlreadyExists(409, "AlreadyExists", "x"))
