"""HTTP transport to the apiserver: two connection pools, auth, timeouts, Retry-After, error mapping.

`kubeconfig.ConnectionSettings` (from our kubeconfig or in-cluster loader, or adapted from a
kubernetes-asyncio `Configuration`) gives the host, the TLS files and the token source. We own the aiohttp
sessions:

* one pool for requests and one for watches, because every open watch holds a connection for
  minutes and a shared pool would starve reads and writes (framework.md §1.2, rule 4);
* a timeout on every request (kubernetes-asyncio has none by default, so a half-open socket hangs);
* one retry policy (`RetryPolicy`) for every request: 429 and 5xx answers that carry Retry-After are
  retried after that wait, whatever the verb, like client-go; a connection that failed or dropped
  before an answer is retried with a short backoff only for idempotent verbs (a replayed POST could
  create twice); a request that timed out is not retried (the caller's deadline is spent);
* every non-2xx answer, timeout and connection failure becomes an `errors.ApiError` subclass here
  and nowhere else; aiohttp exceptions never leak to callers.
"""

# ruff: noqa: ASYNC109  -- per-request timeouts are this module's job
from __future__ import annotations

import asyncio
import contextlib
import random
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Final

import aiohttp
import structlog
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from ome.framework import errors, tls_buffers
from ome.framework.kubeconfig import ConnectionSettings, from_configuration
from ome.framework.ratelimit import BucketRateLimiter, Clock

if TYPE_CHECKING:
    from kubernetes_asyncio.client import Configuration

JSON: Final = "application/json"
Query = Sequence[tuple[str, str]]

_log = structlog.get_logger(__name__)
SLOW_THROTTLE: Final = 1.0
# RFC 9110 idempotent methods: sending one twice has the effect of sending it once. A PUT carries a
# resourceVersion, so a replay of one that did land answers 409; a replayed DELETE answers 404.
IDEMPOTENT_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
FENCE: Final = "fence"
"""The key of a request's write fence in its `trace_request_ctx`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """When and after how long a failed request is sent again; the only retry loop of the client."""

    max_retries: int = 10
    """Retries of one request, whatever the reason (client-go: 10)."""
    max_retry_after: float = 60.0
    """Upper bound on a single Retry-After wait, so a broken proxy cannot park us for hours."""
    connection_retries: int = 3
    """Retries of an idempotent request whose connection failed before an answer (within max_retries)."""
    connection_backoff: float = 0.1
    """Seconds before the first connection retry; doubles each time, jittered by up to 50%."""

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.connection_retries < 0:
            raise ValueError("retry counts must not be negative")
        if self.connection_backoff < 0 or self.max_retry_after < 0:
            raise ValueError("retry delays must not be negative")

    def delay(
        self, method: str, error: errors.ApiError, attempt: int, *, idempotent: bool | None = None,
        rng: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to wait before retry number `attempt` (1-based), or None to give up and raise `error`.

        `idempotent` overrides the verb's idempotence (a JSON Patch that sets a value, for instance).
        """
        if attempt > self.max_retries:
            return None
        if error.retry_after is not None and (error.status == 429 or error.status >= 500):
            return min(error.retry_after, self.max_retry_after)
        safe = method.upper() in IDEMPOTENT_METHODS if idempotent is None else idempotent
        if isinstance(error, errors.TransportError) and safe and attempt <= self.connection_retries:
            return float(self.connection_backoff * 2 ** (attempt - 1) * (1 + rng() / 2))
        return None


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientSettings:
    """Transport tuning; the defaults follow framework.md rules 3-5."""

    timeout: float = 30.0
    """Seconds a plain request may take end to end, unless the call passes its own `timeout`."""
    connect_timeout: float = 10.0
    """Seconds to establish a TCP+TLS connection, for requests and watches alike."""
    retry: RetryPolicy = RetryPolicy()
    """When a failed request is sent again."""
    user_agent: str = "ome-py/0.1"
    """Sent on every request; API priority and fairness and audit logs key on it."""
    pool_size: int = 100
    """Concurrent connections for requests."""
    watch_pool_size: int = 0
    """Concurrent watch connections; 0 is unlimited, since each informer holds one."""
    watch_sock_read: float = 150.0
    """Seconds of silence after which a watch socket counts as dead: 2x the 60 s bookmark cadence."""
    read_bufsize: int = 2**21
    """aiohttp read buffer; watch lines up to twice this are accepted (etcd allows 1.5 MiB objects)."""
    qps: float = 0.0
    """Client-side rate limit on requests (watches excepted), as client-go's QPS; 0 is unlimited."""
    burst: int = 0
    """Requests allowed at once above `qps`; needed whenever `qps` is set."""

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.connect_timeout <= 0 or self.watch_sock_read <= 0:
            raise ValueError("timeouts must be positive")
        if self.qps < 0 or (self.qps > 0 and self.burst < 1):
            raise ValueError("a qps limit needs a burst of at least 1")


def parse_warning(value: str) -> str:
    """The text of an RFC 7234 Warning header as the apiserver sends it: `299 - "text"`."""
    match = _WARNING.match(value)
    if not match:
        return value
    return match.group(1).replace('\\"', '"').replace("\\\\", "\\")


_WARNING = re.compile(r'^\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def log_warning(message: str) -> None:
    """Default warning handler: what client-go's default does, a log line per warning."""
    _log.warning("API server warning", warning=message)


class Transport:
    """Sends requests for `client.Client`; sessions are created lazily inside the running loop."""

    warning_handler: Callable[[str], None] = staticmethod(log_warning)
    """Called with each `Warning` the apiserver returns (admission webhooks' warnings among them)."""

    def __init__(
        self, configuration: ConnectionSettings | Configuration, settings: ClientSettings | None = None
    ) -> None:
        if not isinstance(configuration, ConnectionSettings):
            configuration = from_configuration(configuration)
        self._connection = configuration
        self._token = configuration.token
        self._settings = settings or ClientSettings()
        # One bucket per resource type, as the Go manager has a client (and so a rate limiter) per
        # resource type: a burst of Service creates does not hold back the replicas' pod writes.
        self._throttles: dict[str, BucketRateLimiter] = {}
        self._sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        self._clock: Clock | None = None  # the buckets' clock; tests inject one
        self._host = str(configuration.host).rstrip("/")
        self._ssl = _ssl_context(configuration) if self._host.startswith("https:") else None
        self._extra: dict[str, Any] = {}
        if configuration.proxy:
            self._extra["proxy"] = configuration.proxy
            if configuration.proxy_headers:
                self._extra["proxy_headers"] = configuration.proxy_headers
        if configuration.tls_server_name:
            self._extra["server_hostname"] = configuration.tls_server_name
        self._requests: aiohttp.ClientSession | None = None
        self._watches: aiohttp.ClientSession | None = None
        self._background: list[asyncio.Task[None]] = []

    @property
    def host(self) -> str:
        return self._host

    @property
    def settings(self) -> ClientSettings:
        return self._settings

    def own_task(self, task: asyncio.Task[None]) -> None:
        """Keep a background task (token refresh) alive until `close()`."""
        self._background.append(task)

    def _report_warnings(self, values: Sequence[str]) -> None:
        for value in values:
            self.warning_handler(parse_warning(value))

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = JSON,
        timeout: float | None = None,
        idempotent: bool | None = None,
        fence: Callable[[], None] | None = None,
        resource: str = "",
    ) -> bytes:
        """Send one request and return the body of the 2xx answer; anything else raises ApiError.

        Failures are retried as `ClientSettings.retry` says; `idempotent` overrides the verb's. `fence` is
        called right before each attempt goes out, after any wait for the rate limit, again once the
        attempt holds its connection (after any wait for a free one or a TLS handshake), and again as its
        body is written (`_FencedBody`), and raises to refuse it: a process stopped while a request waited
        must not send it on waking without asking again.
        `resource` names the rate-limit bucket (`ClientSettings.qps` applies per resource type, its
        subresources included; requests that name none share one bucket).
        """
        policy = self._settings.retry
        attempt = 0
        while True:
            try:
                return await self._send_once(
                    method, path, query, body, content_type, accept, timeout, fence, resource
                )
            except errors.ApiError as error:
                attempt += 1
                delay = policy.delay(method, error, attempt, idempotent=idempotent)
                if delay is None:
                    raise
                # The server asking us to wait is worth a line; a dropped connection retried is routine
                # (client-go logs its retries at verbosity 4).
                emit = _log.info if error.retry_after is not None else _log.debug
                emit(
                    "Retrying request", method=method, path=path, status=error.status, reason=error.reason,
                    delay=round(delay, 3), attempt=attempt,
                )  # fmt: skip
                await asyncio.sleep(delay)

    async def _send_once(
        self,
        method: str,
        path: str,
        query: Query,
        body: bytes | None,
        content_type: str | None,
        accept: str,
        timeout: float | None,
        fence: Callable[[], None] | None = None,
        resource: str = "",
    ) -> bytes:
        total = self._settings.timeout if timeout is None else timeout
        client_timeout = aiohttp.ClientTimeout(total=total, sock_connect=self._settings.connect_timeout)
        session = self._session()
        throttle = self._throttle(resource)
        if throttle is not None and (delay := throttle.when(None)) > 0:
            if delay > SLOW_THROTTLE:  # client-go's message: the QPS/burst limit is too low
                _log.info("Waited before sending request", delay=round(delay, 3), verb=method, url=path)
            await self._sleep(delay)
        headers = await self._headers(accept, content_type)
        if fence is not None:
            fence()
        data = _FencedBody(body, fence) if fence is not None and body is not None else body
        try:
            async with session.request(
                method,
                self._host + path,
                params=query,
                data=data,
                headers=headers,
                timeout=client_timeout,
                trace_request_ctx={FENCE: fence} if fence is not None else None,
                **self._extra,
            ) as resp:
                data = await resp.read()
                self._report_warnings(resp.headers.getall("Warning", ()))
                if resp.status < 300:
                    return data
                error = errors.error_for(resp.status, data)
                error.retry_after = _retry_after(resp.headers.get("Retry-After"))
        except TimeoutError as exc:
            raise errors.ServerTimeout(
                0, "Timeout", f"{method} {path}: no answer within {total} s"
            ) from exc
        except aiohttp.ClientError as exc:
            if isinstance(data, _FencedBody) and data.refused is not None:
                raise data.refused from None  # nothing was sent: the fence's own error, not a transport one
            raise errors.TransportError(0, "TransportError", f"{method} {path}: {exc!r}") from exc
        try:
            raise error
        finally:
            # The error's traceback holds this frame: with `error` (and the response) still in its locals
            # they would form a cycle that waits for the collector's next full pass (failed_frames.py).
            del error, resp, data

    def _throttle(self, resource: str) -> BucketRateLimiter | None:
        if self._settings.qps <= 0:
            return None
        bucket = self._throttles.get(resource)
        if bucket is None:
            bucket = BucketRateLimiter(self._settings.qps, self._settings.burst, clock=self._clock)
            self._throttles[resource] = bucket
        return bucket

    @asynccontextmanager
    async def stream(
        self, path: str, *, query: Query, accept: str, timeout: aiohttp.ClientTimeout
    ) -> AsyncIterator[aiohttp.StreamReader]:
        """Open a long-lived GET on the watch pool and yield its body stream; non-2xx raises."""
        headers = await self._headers(accept, None)
        try:
            resp = await self._watch_session().request(
                "GET", self._host + path, params=query, headers=headers, timeout=timeout, **self._extra
            )
        except TimeoutError as exc:
            raise errors.ServerTimeout(0, "Timeout", f"watch {path}: no answer in time") from exc
        except aiohttp.ClientError as exc:
            raise errors.TransportError(0, "TransportError", f"watch {path}: {exc!r}") from exc
        try:
            if resp.status >= 300:
                error = errors.error_for(resp.status, await read_or_raise(resp.content.read(), path))
                error.retry_after = _retry_after(resp.headers.get("Retry-After"))
                try:
                    raise error
                finally:
                    del error  # no cycle through this frame (see _send_once)
            yield resp.content
        finally:
            resp.release()

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background.clear()
        for session in (self._requests, self._watches):
            if session is not None:
                await session.close()
        self._requests = self._watches = None

    def _session(self) -> aiohttp.ClientSession:
        if self._requests is None:
            self._requests = self._new_session(self._settings.pool_size)
        return self._requests

    def _watch_session(self) -> aiohttp.ClientSession:
        if self._watches is None:
            self._watches = self._new_session(self._settings.watch_pool_size)
        return self._watches

    def _new_session(self, limit: int) -> aiohttp.ClientSession:
        tls_buffers.limit_receive_buffer()
        connector = aiohttp.TCPConnector(limit=limit, ssl=self._ssl if self._ssl is not None else True)
        proxy, proxy_auth = env_proxy(self._host)
        return aiohttp.ClientSession(
            connector=connector,
            proxy=proxy,
            proxy_auth=proxy_auth,
            read_bufsize=self._settings.read_bufsize,
            headers={"User-Agent": self._settings.user_agent},
            trace_configs=[_fence_at_connection()],
        )

    async def _headers(self, accept: str, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": accept}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if self._token is not None and (value := await self._token.authorization()):
            headers["Authorization"] = value
        return headers


async def read_or_raise(read: Any, what: str) -> bytes:
    """Await a body read, mapping aiohttp's failures to ours."""
    try:
        data: bytes = await read
    except TimeoutError as exc:
        raise errors.ServerTimeout(0, "Timeout", f"{what}: read timed out") from exc
    except (aiohttp.ClientError, ValueError) as exc:
        # ValueError: aiohttp's "Line is too long" for a line above the read buffer high-water mark.
        raise errors.TransportError(0, "TransportError", f"{what}: {exc!r}") from exc
    return data


def _ssl_context(connection: ConnectionSettings) -> ssl.SSLContext:
    """The same context kubernetes-asyncio builds in rest.py (kubeconfig data lands in temp files)."""
    context = ssl.create_default_context(cafile=connection.ca_file)
    if connection.cert_file:
        context.load_cert_chain(connection.cert_file, keyfile=connection.key_file)
    if not connection.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if connection.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def _retry_after(header: str | None) -> float | None:
    if header is None:
        return None
    try:
        return max(float(header), 0.0)
    except ValueError:
        return 1.0  # an HTTP date or garbage: still a request to wait, so wait a little


def env_proxy(host: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """HTTP(S)_PROXY and NO_PROXY for the apiserver, as kubectl honours them, read once per session.
    aiohttp's trust_env would read them, and ~/.netrc, again on every request, each time in a worker
    thread: at a few hundred requests per second that was a fifth of the manager's samples."""
    with contextlib.suppress(LookupError):
        return get_env_proxy_for_url(URL(host))
    return None, None


class _FencedBody(aiohttp.payload.BytesPayload):
    """A write's body that asks its fence once more as it is written: aiohttp holds the request's headers
    back to send them with the first body bytes, from a task of its own that runs a loop turn or more
    after the request got its connection. A process stopped in that turn sent the write on waking, after
    its Lease had passed (the fault suite's SIGSTOP case). Between this check and the socket there is no
    await that suspends. A refusal is kept in `refused`: aiohttp wraps what the body raises."""

    def __init__(self, value: bytes, fence: Callable[[], None]) -> None:
        super().__init__(value)
        self._fence = fence
        self.refused: Exception | None = None

    def _ask(self) -> None:
        try:
            self._fence()
        except Exception as exc:
            self.refused = exc
            raise

    async def write(self, writer: aiohttp.abc.AbstractStreamWriter) -> None:
        self._ask()
        await super().write(writer)

    async def write_with_length(
        self, writer: aiohttp.abc.AbstractStreamWriter, content_length: int | None
    ) -> None:
        self._ask()
        await super().write_with_length(writer, content_length)


def _fence_at_connection() -> aiohttp.TraceConfig:
    """Asks a request's fence once it holds a connection, the last wait before its bytes go out: a
    process stopped (SIGSTOP, a stalled host) while it waited for a free connection or a handshake must not
    send it on waking, after its Lease has passed to another manager. A write without a body (a DELETE)
    sends its headers right after this check; one with a body is asked again as the body goes out
    (`_FencedBody`)."""

    async def check(_: aiohttp.ClientSession, ctx: SimpleNamespace, __: object) -> None:
        request_ctx = ctx.trace_request_ctx
        fence = request_ctx.get(FENCE) if isinstance(request_ctx, Mapping) else None
        if fence is not None:
            fence()

    config = aiohttp.TraceConfig()
    config.on_connection_reuseconn.append(check)
    config.on_connection_create_end.append(check)
    config.freeze()
    return config
