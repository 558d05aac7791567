"""Authentication and authorization of /metrics requests, as controller-runtime's
`filters.WithAuthenticationAndAuthorization` does for a manager started with `--metrics-secure`.

Each request's bearer token goes to the apiserver in a TokenReview; the user it names then needs `get`
(the request's method, lower-cased) on the non-resource URL of the request (`/metrics`), asked with a
SubjectAccessReview. The answers (controller-runtime's, from the apiserver's delegating authn/authz):

* no bearer token, or a token the TokenReview does not authenticate: 401 `Unauthorized`;
* the TokenReview itself failing (apiserver down, the manager lacking RBAC): 401 `Authentication failed`;
* the SubjectAccessReview failing: 500 `Authorization for user <name> failed`;
* not allowed: 403 `Authorization denied for user <name>`.

Both reviews are cached so a Prometheus scraping every 15 s does not cost two API calls per scrape:
token results for `token_ttl` (authenticated or not), allowed decisions for `allow_ttl` and denied ones
for `deny_ttl` (controller-runtime's 1 min, 5 min and 30 s). Errors are never cached. Tokens are kept
only as SHA-256 digests; both caches are bounded, oldest entry out first, so a stream of made-up tokens
cannot grow memory. Concurrent requests with the same key share one review.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Protocol, TypeVar

import structlog
from aiohttp import web

from ome.framework import errors
from ome.framework.client import Client
from ome.framework.probes_server import Handler
from ome.framework.resources import Resource, register

_log = structlog.get_logger(__name__)

Obj = dict[str, Any]

TOKEN_REVIEWS: Final = register(
    Resource("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False))
SUBJECT_ACCESS_REVIEWS: Final = register(
    Resource("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False))

# controller-runtime's delegating authenticator and authorizer settings.
TOKEN_TTL: Final = 60.0
ALLOW_TTL: Final = 300.0
DENY_TTL: Final = 30.0
MAX_ENTRIES: Final = 4096
REVIEW_TIMEOUT: Final = 10.0


class ReviewClient(Protocol):
    """Creates the two review kinds; returns the apiserver's answer (the object with its status)."""

    async def token_review(self, review: Obj) -> Obj: ...

    async def subject_access_review(self, review: Obj) -> Obj: ...


@dataclass
class ApiReviewClient:
    """The reviews through the manager's API client (RBAC: create on tokenreviews and
    subjectaccessreviews, the ClusterRole ome-metrics-auth-role)."""

    client: Client
    timeout: float = REVIEW_TIMEOUT

    async def token_review(self, review: Obj) -> Obj:
        return await self.client.create(TOKEN_REVIEWS, review, timeout=self.timeout)

    async def subject_access_review(self, review: Obj) -> Obj:
        return await self.client.create(SUBJECT_ACCESS_REVIEWS, review, timeout=self.timeout)


@dataclass(frozen=True)
class User:
    """Who a TokenReview says the token belongs to."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_status(cls, user: Obj) -> User:
        extra = user.get("extra") or {}
        return cls(name=str(user.get("username") or ""), uid=str(user.get("uid") or ""),
                   groups=tuple(user.get("groups") or ()),
                   extra=tuple(sorted((str(k), tuple(v or ())) for k, v in extra.items())))


@dataclass(frozen=True)
class Decision:
    """What the filter answers: `status` 200 lets the request through to the handler."""

    status: int
    message: str = ""
    user: str | None = None


@dataclass(kw_only=True)
class MetricsAuthOptions:
    token_ttl: float = TOKEN_TTL
    """Seconds a TokenReview's result is reused for the same token, authenticated or not."""
    allow_ttl: float = ALLOW_TTL
    """Seconds an allowed SubjectAccessReview is reused for the same user, verb and path."""
    deny_ttl: float = DENY_TTL
    """Seconds a denied one is reused."""
    max_entries: int = MAX_ENTRIES
    """Entries each cache holds at most."""
    clock: Callable[[], float] = field(default=time.monotonic)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """Values by key until their time is up; a missing key is loaded once however many ask at once."""

    def __init__(self, clock: Callable[[], float], max_entries: int) -> None:
        self._clock = clock
        self._max = max_entries
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._loading: dict[K, asyncio.Future[V]] = {}
        self.loads = 0
        """Loads started (a hit or a shared load adds nothing)."""

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: K, load: Callable[[], Awaitable[V]], ttl: Callable[[V], float]) -> V:
        entry = self._entries.get(key)
        if entry is not None:
            if entry[0] > self._clock():
                self._entries.move_to_end(key)
                return entry[1]
            del self._entries[key]
        future = self._loading.get(key)
        if future is None:
            self.loads += 1
            future = asyncio.ensure_future(load())
            self._loading[key] = future
            future.add_done_callback(lambda done: self._loaded(key, done, ttl))
        # Shielded: a scrape that disconnects does not cancel the review others wait for.
        return await asyncio.shield(future)

    def _loaded(self, key: K, future: asyncio.Future[V], ttl: Callable[[V], float]) -> None:
        self._loading.pop(key, None)
        if future.cancelled() or future.exception() is not None:  # errors are not cached
            return
        value = future.result()
        lifetime = ttl(value)
        if lifetime <= 0:
            return
        self._entries[key] = (self._clock() + lifetime, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)


@dataclass(frozen=True)
class _Access:
    allowed: bool
    reason: str


class MetricsAuthFilter:
    """Wraps a handler so that only a user allowed `get` on its path reaches it."""

    def __init__(self, reviews: ReviewClient, options: MetricsAuthOptions | None = None) -> None:
        self._reviews = reviews
        self.options = options or MetricsAuthOptions()
        clock, size = self.options.clock, self.options.max_entries
        self.tokens: TtlCache[str, User | None] = TtlCache(clock, size)
        self.access: TtlCache[tuple[User, str, str], _Access] = TtlCache(clock, size)

    def __call__(self, handler: Handler) -> Handler:
        async def filtered(request: web.Request) -> web.StreamResponse:
            decision = await self.check(request.method, request.path, request.headers.get("Authorization"))
            if decision.status != 200:
                return web.Response(status=decision.status, text=decision.message + "\n")
            return await handler(request)

        return filtered

    async def check(self, method: str, path: str, authorization: str | None) -> Decision:
        log = _log.bind(path=path, method=method)
        token = bearer_token(authorization)
        if token is None:
            log.debug("metrics request without a bearer token")
            return Decision(401, "Unauthorized")
        try:
            user = await self.tokens.get(hashlib.sha256(token.encode()).hexdigest(),
                                         lambda: self._authenticate(token),
                                         lambda _: self.options.token_ttl)
        except (errors.ApiError, OSError, TimeoutError, ValueError) as exc:
            log.error("authentication failed", error=str(exc))
            return Decision(401, "Authentication failed")
        if user is None:
            log.debug("metrics request with a token that does not authenticate")
            return Decision(401, "Unauthorized")
        verb = method.lower()
        try:
            access = await self.access.get((user, verb, path), lambda: self._authorize(user, verb, path),
                                           self._access_ttl)
        except (errors.ApiError, OSError, TimeoutError, ValueError) as exc:
            log.error("authorization failed", user=user.name, error=str(exc))
            return Decision(500, f"Authorization for user {user.name} failed", user.name)
        if not access.allowed:
            log.debug("metrics request denied", user=user.name, reason=access.reason)
            return Decision(403, f"Authorization denied for user {user.name}", user.name)
        return Decision(200, user=user.name)

    def _access_ttl(self, access: _Access) -> float:
        return self.options.allow_ttl if access.allowed else self.options.deny_ttl

    async def _authenticate(self, token: str) -> User | None:
        answer = await self._reviews.token_review({
            "apiVersion": TOKEN_REVIEWS.api_version, "kind": TOKEN_REVIEWS.kind, "spec": {"token": token}})
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            return None
        user = User.from_status(status.get("user") or {})
        if not user.name:
            raise ValueError("TokenReview authenticated the token but named no user")
        return user

    async def _authorize(self, user: User, verb: str, path: str) -> _Access:
        spec: Obj = {"user": user.name, "groups": list(user.groups),
                     "nonResourceAttributes": {"path": path, "verb": verb}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra}
        answer = await self._reviews.subject_access_review({
            "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version, "kind": SUBJECT_ACCESS_REVIEWS.kind,
            "spec": spec})
        status = answer.get("status") or {}
        allowed = bool(status.get("allowed")) and not status.get("denied")
        return _Access(allowed, str(status.get("reason") or status.get("evaluationError") or ""))


def bearer_token(authorization: str | None) -> str | None:
    """The token of `Authorization: Bearer <token>` (the scheme in any case), as the apiserver's bearer
    token authenticator reads it; None for a missing or malformed header."""
    if not authorization:
        return None
    parts = authorization.strip().split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    token = parts[1]
    return token or None
