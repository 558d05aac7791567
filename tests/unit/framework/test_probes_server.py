"""Health probe and metrics servers on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from ome.framework.probes_server import HealthProbeServer, MetricsServer, parse_bind_address


async def get(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as resp:
        return resp.status, await resp.text()


class Flag:
    def __init__(self) -> None:
        self.ok = True

    def __call__(self) -> bool:
        return self.ok


@pytest.fixture
async def probes() -> AsyncIterator[tuple[HealthProbeServer, Flag]]:
    flag = Flag()
    srv = HealthProbeServer("127.0.0.1:0")

    async def async_ok() -> bool:
        return True

    srv.add_healthz("ping", lambda: True)
    srv.add_healthz("flag", flag)
    srv.add_readyz("async", async_ok)
    await srv.start()
    yield srv, flag
    await srv.stop()


async def test_healthz_ok_then_failing_check(probes: tuple[HealthProbeServer, Flag]) -> None:
    srv, flag = probes
    assert await get(srv.port, "/healthz") == (200, "ok")
    flag.ok = False
    status, body = await get(srv.port, "/healthz")
    assert status == 500
    assert body == "[+]ping ok\n[-]flag failed\nhealthz check failed\n"
    assert await get(srv.port, "/readyz") == (200, "ok")  # readiness has its own checks


async def test_verbose_and_single_check(probes: tuple[HealthProbeServer, Flag]) -> None:
    srv, _ = probes
    assert await get(srv.port, "/healthz?verbose") == (200, "[+]ping ok\n[+]flag ok\nhealthz check passed\n")
    assert await get(srv.port, "/healthz/ping") == (200, "ok")
    assert (await get(srv.port, "/healthz/nope"))[0] == 404


async def test_raising_check_fails() -> None:
    srv = HealthProbeServer("127.0.0.1:0")

    def broken() -> bool:
        raise RuntimeError("x")

    srv.add_readyz("broken", broken)
    await srv.start()
    try:
        assert (await get(srv.port, "/readyz"))[0] == 500
    finally:
        await srv.stop()


async def test_metrics_exposes_default_registry() -> None:
    srv = MetricsServer("127.0.0.1:0")
    await srv.start()
    try:
        status, body = await get(srv.port, "/metrics")
    finally:
        await srv.stop()
    assert status == 200 and "python_info" in body


async def test_disabled_server_does_not_listen() -> None:
    srv = MetricsServer("0")
    await srv.start()
    assert not srv.enabled and not srv.ready


@pytest.mark.parametrize(
    ("bind", "expected"),
    [(":8080", (None, 8080)), ("127.0.0.1:9090", ("127.0.0.1", 9090)), ("[::1]:1", ("::1", 1)), ("0", None)],
    ids=["all-interfaces", "ipv4", "ipv6", "disabled"],
)
def test_parse_bind_address(bind: str, expected: tuple[str | None, int] | None) -> None:
    assert parse_bind_address(bind) == expected


def test_parse_bind_address_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="bind address"):
        parse_bind_address("localhost")
