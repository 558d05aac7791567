"""heap_trim: glibc's malloc_trim, called on a period by the manager (RSS creep under churn)."""

from __future__ import annotations

import asyncio

import pytest

from ome.framework import heap_trim


def test_this_machines_c_library_has_malloc_trim() -> None:
    trim = heap_trim.load_trim()
    assert trim is not None
    assert trim() in (0, 1)  # 1: memory was released, 0: none could be


def test_no_c_library_to_load_gives_none() -> None:
    assert heap_trim.load_trim("/nonexistent/libc.so") is None


async def test_it_trims_once_per_interval_until_cancelled() -> None:
    waits: list[float] = []
    trims: list[int] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) > 3:
            raise asyncio.CancelledError

    def trim() -> int:
        trims.append(len(waits))
        return 1

    with pytest.raises(asyncio.CancelledError):
        await heap_trim.trim_periodically(trim, interval=30.0, sleep=sleep)
    assert waits == [30.0] * 4
    assert trims == [1, 2, 3], "each trim comes after its wait"
