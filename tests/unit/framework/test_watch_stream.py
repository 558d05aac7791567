"""watch.events over an aiohttp StreamReader fed by hand: lines split however the socket cut them."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

import aiohttp
import orjson
import pytest

from ome.framework import errors, watch


def line(name: str, **extra: Any) -> bytes:
    obj = {"metadata": {"name": name, "resourceVersion": "1"}, **extra}
    return orjson.dumps({"type": "ADDED", "object": obj}) + b"\n"


def reader(chunks: list[bytes]) -> aiohttp.StreamReader:
    stream = aiohttp.StreamReader(mock.Mock(_reading_paused=False), 2**16, loop=asyncio.get_running_loop())
    for chunk in chunks:
        stream.feed_data(chunk)
    stream.feed_eof()
    return stream


async def names(chunks: list[bytes]) -> list[str]:
    return [obj["metadata"]["name"] async for _, obj in watch.events(reader(chunks), "watch test")]


async def test_lines_cut_anywhere_by_the_socket_come_out_whole_and_in_order() -> None:
    data = b"".join(line(f"o{i}") for i in range(50)) + b"\n"  # a blank line between is skipped
    for size in (1, 7, 64, 1000, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert await names(chunks) == [f"o{i}" for i in range(50)]


async def test_a_line_above_aiohttps_readline_limit_is_decoded() -> None:
    big = line("big", data={"blob": "x" * 300_000})  # readline refuses lines above 128 KiB
    chunks = [big[i : i + 16_384] for i in range(0, len(big), 16_384)]
    assert await names([line("a"), *chunks, line("b")]) == ["a", "big", "b"]


async def test_a_stream_cut_mid_object_raises_transport_error_after_the_whole_lines() -> None:
    seen: list[str] = []
    with pytest.raises(errors.TransportError):
        async for _, obj in watch.events(reader([line("a"), line("b")[:20]]), "watch test"):
            seen.append(obj["metadata"]["name"])
    assert seen == ["a"]


async def test_a_last_line_without_newline_at_a_clean_end_is_still_an_event() -> None:
    assert await names([line("a"), line("b").rstrip(b"\n")]) == ["a", "b"]
