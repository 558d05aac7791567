"""Plain-HTTP servers for Prometheus metrics and kubelet probes, as controller-runtime exposes them.

`MetricsServer` serves /metrics from prometheus-client's default registry; `HealthProbeServer` serves
/healthz and /readyz from named checks. They are separate because controller-runtime binds them
separately (`--metrics-bind-address`, `--health-probe-bind-address`); a bind address of "0" disables one.

Checks follow controller-runtime's healthz package: 200 "ok" when all pass, 500 with one line per check
when any fails, every check listed with `?verbose`, and `/healthz/<name>` runs one check. A check that
raises or runs past its timeout counts as failed, so one wedged check cannot hang the kubelet's probe.
"""

from __future__ import annotations

import asyncio
import inspect
import ssl
from collections.abc import Awaitable, Callable
from typing import Final

import prometheus_client
import structlog
from aiohttp import web

_log = structlog.get_logger(__name__)

Check = Callable[[], bool | Awaitable[bool]]
"""A health check: plain or async, True when healthy."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RequestFilter = Callable[[Handler], Handler]
"""Wraps the /metrics handler, e.g. to authenticate and authorize each request."""

DISABLED: Final = "0"
CHECK_TIMEOUT: Final = 5.0


def parse_bind_address(bind: str) -> tuple[str | None, int] | None:
    """ ":8080" (all interfaces), "127.0.0.1:8080" or "[::1]:8080" to (host, port); "0" or "" to None."""
    if bind in (DISABLED, ""):
        return None
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address must look like ':8080' or 'host:8080', got {bind!r}")
    host = host.removeprefix("[").removesuffix("]")
    return (host or None), int(port)


class _HttpServer:
    """One aiohttp listener; subclasses add routes in `_routes`."""

    def __init__(self, bind: str, *, name: str, ssl_context: ssl.SSLContext | None = None) -> None:
        self._address = parse_bind_address(bind)
        self._ssl_context = ssl_context
        self._name = name
        self._runner: web.AppRunner | None = None
        self._bound_port: int | None = None

    @property
    def enabled(self) -> bool:
        return self._address is not None

    @property
    def ready(self) -> bool:
        return self._bound_port is not None

    @property
    def port(self) -> int:
        if self._bound_port is None:
            raise RuntimeError(f"{self._name} server is not listening")
        return self._bound_port

    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        """Listen; a disabled server does nothing."""
        if self._address is None:
            return
        if self._runner is not None:
            raise RuntimeError(f"{self._name} server already started")
        app = web.Application()
        self._routes(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._address[0], self._address[1], ssl_context=self._ssl_context)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._bound_port = int(runner.addresses[0][1])
        _log.info("Serving", server=self._name, host=self._address[0], port=self._bound_port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._bound_port = None


class MetricsServer(_HttpServer):
    """/metrics in the Prometheus text format, from the default registry."""

    def __init__(self, bind: str = ":8080", *, ssl_context: ssl.SSLContext | None = None,
                 request_filter: RequestFilter | None = None) -> None:
        super().__init__(bind, name="metrics", ssl_context=ssl_context)  # HTTPS with --metrics-secure
        # controller-runtime's FilterProvider: with --metrics-secure, authn/authz (metrics_auth).
        self._filter = request_filter

    def _routes(self, app: web.Application) -> None:
        handler = metrics_handler if self._filter is None else self._filter(metrics_handler)
        app.router.add_get("/metrics", handler)


async def metrics_handler(request: web.Request) -> web.Response:
    body = prometheus_client.generate_latest(prometheus_client.REGISTRY)
    return web.Response(body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})


class HealthProbeServer(_HttpServer):
    """/healthz and /readyz from named checks; `include_metrics` also serves /metrics on this port."""

    def __init__(
        self, bind: str = ":8081", *, include_metrics: bool = False, check_timeout: float = CHECK_TIMEOUT
    ) -> None:
        super().__init__(bind, name="health-probe")
        self._include_metrics = include_metrics
        self._check_timeout = check_timeout
        self._checks: dict[str, dict[str, Check]] = {"healthz": {}, "readyz": {}}

    def add_healthz(self, name: str, check: Check) -> None:
        self._add("healthz", name, check)

    def add_readyz(self, name: str, check: Check) -> None:
        self._add("readyz", name, check)

    def _add(self, endpoint: str, name: str, check: Check) -> None:
        if not name or "/" in name:
            raise ValueError(f"check name must be non-empty and contain no '/': {name!r}")
        if name in self._checks[endpoint]:
            raise ValueError(f"{endpoint} check {name!r} is already registered")
        self._checks[endpoint][name] = check

    def _routes(self, app: web.Application) -> None:
        for endpoint in self._checks:
            app.router.add_get(f"/{endpoint}", self._endpoint_handler(endpoint))
            app.router.add_get(f"/{endpoint}/{{check}}", self._endpoint_handler(endpoint))
        if self._include_metrics:
            app.router.add_get("/metrics", metrics_handler)

    def _endpoint_handler(self, endpoint: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            return await self._serve(endpoint, request)

        return handle

    async def _serve(self, endpoint: str, request: web.Request) -> web.Response:
        checks = self._checks[endpoint]
        if (only := request.match_info.get("check")) is not None:
            if only not in checks:
                return web.Response(status=404, text=f"no {endpoint} check named {only!r}\n")
            checks = {only: checks[only]}
        names = list(checks)
        results = await asyncio.gather(*(self._run(name, checks[name]) for name in names))
        failed = [name for name, ok in zip(names, results, strict=True) if not ok]
        if not failed and "verbose" not in request.query:
            return web.Response(text="ok")
        lines = [
            f"[{'-' if name in failed else '+'}]{name} {'failed' if name in failed else 'ok'}"
            for name in names
        ]
        verdict = f"{endpoint} check failed" if failed else f"{endpoint} check passed"
        return web.Response(status=500 if failed else 200, text="\n".join([*lines, verdict]) + "\n")

    async def _run(self, name: str, check: Check) -> bool:
        """A check that raises or outlives the timeout has failed."""
        try:
            result = check()
            if inspect.isawaitable(result):
                async with asyncio.timeout(self._check_timeout):
                    result = await result
            return bool(result)
        except Exception as exc:
            _log.warning("Health check failed", check=name, error=repr(exc))
            return False
