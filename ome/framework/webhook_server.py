"""HTTPS server for admission webhooks, with certificate hot reload.

Owns the TLS listener (controller-runtime's defaults: :9443, tls.crt / tls.key from a mounted Secret)
and the AdmissionReview envelope: decoding, the request uid, a per-request timeout and turning handler
failures into a denial. Handlers only decide; see admission.py for building their answers.

Why it is built so:
* The apiserver gives up after the webhook configuration's timeoutSeconds (10 s by default), so a
  handler is cut at 8 s and the caller gets a clear denial instead of a generic apiserver timeout.
* Metrics have controller-runtime's names (`controller_runtime_webhook_requests_total{webhook,code}`,
  `_requests_in_flight`, `_latency_seconds`). `code` is the HTTP status, except that an answer that
  reports a server failure inside the AdmissionReview (status.code 5xx: a crashed rule, a timeout) is
  counted under that code, so OMEWebhookFailing (`code=~"5.."`) sees our bugs although the HTTP answer
  is 200.
* Rotated certificates are picked up by polling the files, since mounted Secrets change by a symlink
  swap that inotify on the file itself misses. Each version of the pair is loaded into a *fresh*
  SSLContext, and the listening context's SNI callback (called on every handshake, SNI or not) points
  new handshakes at the latest one. Loading in place could leave the live context with a new
  certificate and the old key when a rotation is caught halfway; a fresh context fails whole instead.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import orjson
import structlog
from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram

from ome.framework import admission, tls_buffers

_log = structlog.get_logger(__name__)

Handler = Callable[[admission.Review], Awaitable[admission.Review]]
"""Takes an AdmissionReview request, returns an AdmissionReview response (see admission.py)."""

DEFAULT_PORT: Final = 9443
DEFAULT_REQUEST_TIMEOUT: Final = 8.0
# The apiserver's default webhook timeoutSeconds; our own timeout must stay below it.
APISERVER_WEBHOOK_TIMEOUT: Final = 10.0
# An AdmissionReview carries object and oldObject, each up to etcd's ~1.5 MiB limit, base64 patches aside.
MAX_BODY_BYTES: Final = 8 * 1024 * 1024

_FileSignature = tuple[tuple[int, int, int], tuple[int, int, int]]

REQUESTS: Final = Counter(
    "controller_runtime_webhook_requests_total",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
)
IN_FLIGHT: Final = Gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Current number of admission requests being served.",
    ["webhook"],
)
LATENCY: Final = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
)


class WebhookServer:
    """Serves registered admission handlers over TLS; `start()` listens, `stop()` closes."""

    def __init__(
        self,
        *,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        cert_dir: str,
        cert_name: str = "tls.crt",
        key_name: str = "tls.key",
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        reload_interval: float = 2.0,
    ) -> None:
        if not 0 < request_timeout < APISERVER_WEBHOOK_TIMEOUT:
            raise ValueError(f"request_timeout must be in (0, {APISERVER_WEBHOOK_TIMEOUT:g}) seconds")
        self._host = host
        self._port = port
        self._cert_path = Path(cert_dir) / cert_name
        self._key_path = Path(cert_dir) / key_name
        self._request_timeout = request_timeout
        self._reload_interval = reload_interval
        self._handlers: dict[str, Handler] = {}
        self._current: ssl.SSLContext | None = None
        self._loaded: _FileSignature | None = None
        self._runner: web.AppRunner | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._bound_port: int | None = None
        self._listening = asyncio.Event()

    def register(self, path: str, handler: Handler) -> None:
        """Serve `handler` at `path` (exact match); may be called before or after start()."""
        if not path.startswith("/"):
            raise ValueError(f"webhook path must start with '/': {path!r}")
        if path in self._handlers:
            raise ValueError(f"a webhook is already registered at {path}")
        self._handlers[path] = handler

    @property
    def ready(self) -> bool:
        """True once listening; usable as a readyz check."""
        return self._bound_port is not None

    async def wait_ready(self) -> None:
        """Return once the server listens (another task calls start())."""
        await self._listening.wait()

    @property
    def port(self) -> int:
        """The bound port (differs from the configured one when that was 0)."""
        if self._bound_port is None:
            raise RuntimeError("webhook server is not listening")
        return self._bound_port

    async def start(self) -> None:
        """Load the certificate (failing loudly if it is missing), listen, and start watching the files."""
        if self._runner is not None:
            raise RuntimeError("webhook server already started")
        self._loaded = self._signature()
        self._current = self._load_context()
        listener = self._load_context()
        listener.sni_callback = self._pick_context
        tls_buffers.limit_receive_buffer()  # the apiserver keeps its connections to us open
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post("/{path:.*}", self._dispatch)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port, ssl_context=listener)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._bound_port = int(runner.addresses[0][1])
        self._listening.set()
        self._watcher = asyncio.create_task(self._watch_certificates(), name="webhook-cert-watcher")
        _log.info("Serving webhooks", host=self._host, port=self._bound_port, paths=sorted(self._handlers))

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.wait({self._watcher})
            self._watcher = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._bound_port = None
        self._listening.clear()

    # -- requests ------------------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        handler = self._handlers.get(request.path)
        if handler is None:
            return web.Response(status=404, text=f"no webhook registered at {request.path}\n")
        in_flight = IN_FLIGHT.labels(request.path)
        in_flight.inc()
        started = time.monotonic()
        try:
            response, code = await self._serve(handler, request)
        finally:
            in_flight.dec()
            LATENCY.labels(request.path).observe(time.monotonic() - started)
        REQUESTS.labels(request.path, code).inc()
        return response

    async def _serve(self, handler: Handler, request: web.Request) -> tuple[web.Response, str]:
        """The HTTP answer and the code it is counted under."""
        try:
            review = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return web.Response(status=400, text="request body is not valid JSON\n"), "400"
        uid = _request_uid(review)
        if uid is None:
            return web.Response(status=400, text="body is not an AdmissionReview with request.uid\n"), "400"
        answer = await self._answer(handler, review, uid, request.path)
        status = answer["response"].get("status")
        inner = status.get("code") if isinstance(status, dict) else None
        code = str(inner) if isinstance(inner, int) and inner >= 500 else "200"
        return web.Response(body=orjson.dumps(answer), content_type="application/json"), code

    async def _answer(
        self, handler: Handler, review: dict[str, Any], uid: str, path: str
    ) -> admission.Review:
        """Run the handler under the timeout; any failure becomes a denial that names no internals."""
        log = _log.bind(path=path, uid=uid)
        timeout = asyncio.timeout(self._request_timeout)
        try:
            async with timeout:
                result = await handler(review)
            response = _response_of(result)
        except TimeoutError as exc:
            if not timeout.expired():  # the handler's own TimeoutError, e.g. from an API call
                response = _crashed(log, uid, exc)
            else:
                log.error("Webhook handler timed out", timeout=self._request_timeout)
                message = f"admission webhook timed out after {self._request_timeout:g}s"
                response = _failure(uid, message, 504)
        except Exception as exc:
            response = _crashed(log, uid, exc)
        response["uid"] = uid
        # The apiserver requires the response's apiVersion to match the request's.
        api_version = review.get("apiVersion") or admission.API_VERSION
        return {"apiVersion": api_version, "kind": admission.KIND, "response": response}

    # -- certificates --------------------------------------------------------------------------------

    def _pick_context(self, conn: ssl.SSLObject, server_name: str | None, listener: ssl.SSLContext) -> None:
        if self._current is not None:
            conn.context = self._current

    def _load_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self._cert_path, self._key_path)
        return context

    def _signature(self) -> _FileSignature:
        cert, key = os.stat(self._cert_path), os.stat(self._key_path)
        return (
            (cert.st_mtime_ns, cert.st_size, cert.st_ino),
            (key.st_mtime_ns, key.st_size, key.st_ino),
        )

    def reload_certificates(self) -> bool:
        """Load the pair if the files changed since the last load; True when a new pair is now served.

        The signature is taken before loading, so a change made during the load is seen next time.
        """
        signature = self._signature()
        if signature == self._loaded:
            return False
        self._current = self._load_context()
        self._loaded = signature
        _log.info("Reloaded webhook certificate", cert=str(self._cert_path))
        return True

    async def _watch_certificates(self) -> None:
        while True:
            await asyncio.sleep(self._reload_interval)
            try:
                self.reload_certificates()
            except (OSError, ssl.SSLError) as exc:
                # Mid-rotation (one file written, or a mismatched pair): keep serving the old pair.
                _log.warning("Webhook certificate not reloaded yet", error=repr(exc))


def _request_uid(review: Any) -> str | None:
    request = review.get("request") if isinstance(review, dict) else None
    uid = request.get("uid") if isinstance(request, dict) else None
    return uid if isinstance(uid, str) and uid else None


def _response_of(result: Any) -> dict[str, Any]:
    """The AdmissionResponse inside a handler's result; a bare response is accepted too."""
    response = result.get("response", result) if isinstance(result, dict) else None
    if not isinstance(response, dict) or not isinstance(response.get("allowed"), bool):
        raise TypeError("handler did not return an AdmissionReview with response.allowed")
    return dict(response)


def _crashed(log: Any, uid: str, exc: Exception) -> dict[str, Any]:
    """Deny with a generic message; the traceback goes to our log, never to the caller."""
    log.error("Webhook handler failed", exc_info=exc)
    return _failure(uid, "internal error in the admission webhook; see the ome-manager log", 500)


def _failure(uid: str, message: str, code: int) -> dict[str, Any]:
    response: dict[str, Any] = admission.denied(uid, message, code=code)["response"]
    return response
