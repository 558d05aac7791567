"""Leader election on a coordination.k8s.io/v1 Lease, following client-go's algorithm.

Owns the Lease record, the acquire and renew loops and the leadership signals (metrics, healthz).
It does not own what leading means: `on_started_leading` runs the leader work and `on_stopped_leading`
is told about a loss; the manager stops its leader work then, and fences that work's writes with
`holds_lease()` meanwhile, since the apiserver itself gives no fencing.

Why it is built so (see the framework notes, section 4):
* Expiry of someone else's lease is judged only from *our* monotonic clock at the moment we last saw the
  record change, never from the timestamps inside it, so wall-clock skew between nodes does not matter.
* Every request has its own timeout (max(renew_deadline / 2, 1 s)) and, while leading, never runs past
  the renew deadline: kubernetes-asyncio's elector kept leading forever on a hung PUT.
* Every wake-up of the renew loop checks the time since the last successful renew, so a stalled event
  loop steps down even when no request failed.
* A challenger may be given a watch of the Lease (`watch_lease`, see lease_watch.py): it then sees each
  renewal as it is written rather than at its next poll, and tries again at the moment the observed
  lease expires, not at the next jittered poll after it. Polling alone adds up to two jittered periods
  (2 x 4.4 s by default) to a takeover; the watch only moves the observation time closer to the real
  change, which keeps the expiry judgement conservative. The polls stay, so a dead watch costs nothing
  but that speed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Final, Protocol, TypeVar

import prometheus_client
import structlog

from ome.framework import resources
from ome.framework.timefmt import format_micro_time

_T = TypeVar("_T")
_log = structlog.get_logger(__name__)

# client-go's acquire uses JitterUntil(RetryPeriod, 1.2): sleeps RP * (1 + U[0, 1.2)).
ACQUIRE_JITTER: Final = 1.2
LEASE_API_VERSION: Final = "coordination.k8s.io/v1"

LEADER_STATUS = prometheus_client.Gauge(
    "leader_election_master_status",
    "1 while this process holds the named lease, 0 otherwise (client-go name).",
    ["name"],
)
LEADER_TRANSITIONS = prometheus_client.Counter(
    "ome_leader_election_transitions",
    "Changes of the lease holder observed by this process (including to and from itself).",
    ["name"],
)


class Clock(Protocol):
    """Time source; tests pass a fake one they step by hand."""

    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...  # aware UTC, only for the timestamps written into the Lease

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


# A watch of the Lease: runs until cancelled, calling its argument with each version seen (None: deleted).
LeaseWatch = Callable[[Callable[[dict[str, Any] | None], None]], Coroutine[Any, Any, None]]

# A try at the observed expiry runs this much after it, so our own clock reads it as passed.
EXPIRY_MARGIN: Final = 0.001


class LeaseClient(Protocol):
    """The three client calls the elector needs; errors carry `.status` (404, 409, ...)."""

    # Plain defs returning awaitables: any `async def` client matches, and the timeout stays per call.
    def get(
        self, res: Any, name: str, namespace: str | None = None, *, timeout: float | None = None
    ) -> Awaitable[dict[str, Any]]: ...

    def create(
        self, res: Any, obj: dict[str, Any], namespace: str | None = None, *, timeout: float | None = None
    ) -> Awaitable[dict[str, Any]]: ...

    def update(
        self, res: Any, obj: dict[str, Any], *, timeout: float | None = None
    ) -> Awaitable[dict[str, Any]]: ...


def hostname_uuid4() -> str:
    """controller-runtime's identity: the hostname alone could be shared by two live pods."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class LeaderElectionConfig:
    lease_name: str
    """Name of the Lease object."""
    lease_namespace: str
    """Namespace of the Lease object."""
    identity: str = dataclasses.field(default_factory=hostname_uuid4)
    """Holder identity written into the Lease; unique per process."""
    lease_duration: float = 15.0
    """Seconds a non-leader waits after the last observed change before taking over."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps trying to renew before it steps down."""
    retry_period: float = 2.0
    """Seconds between attempts (acquire attempts are jittered by up to 1.2x more)."""
    release_on_cancel: bool = False
    """On cancellation of run(), hand the lease over (duration 1 s); only safe once leader work stopped."""

    def __post_init__(self) -> None:
        if not self.lease_name or not self.lease_namespace:
            raise ValueError("lease_name and lease_namespace must be set")
        if not self.identity:
            raise ValueError("identity must not be empty")
        for field in ("lease_duration", "renew_deadline", "retry_period"):
            if getattr(self, field) < 1:
                raise ValueError(f"{field} must be at least 1 second")
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if not self.renew_deadline > ACQUIRE_JITTER * self.retry_period:
            raise ValueError("renew_deadline must be greater than 1.2 * retry_period")

    @property
    def request_timeout(self) -> float:
        """controller-runtime: keeps a single hung request from forcing a leader loss."""
        return max(self.renew_deadline / 2, 1.0)


class LeaderElector:
    """Runs client-go's acquire-then-renew loop for one Lease; `run()` returns when leadership is lost."""

    def __init__(
        self,
        client: LeaseClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], Coroutine[Any, Any, None]],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        clock: Clock | None = None,  # None for the real clock; tests pass a fake
        rng: random.Random | None = None,  # None for the module RNG; tests pin the jitter
        watch_lease: LeaseWatch | None = None,  # None: a challenger only polls
    ) -> None:
        self._client = client
        self._config = config
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._watch_lease = watch_lease
        self._changed = asyncio.Event()  # set by observe() when the holder changes
        self._res = resources.LEASES
        self._log = _log.bind(lease=f"{config.lease_namespace}/{config.lease_name}", identity=config.identity)
        # The last Lease we saw or wrote, its spec, and when (our monotonic clock) that spec last changed.
        self._lease: dict[str, Any] | None = None
        self._observed: dict[str, Any] = {}
        self._observed_time = 0.0
        self._reported_leader = ""
        self._leading = False
        # Start time of the last successful renew; the deadline counts from before the write was sent.
        self._last_renew_ok = 0.0
        LEADER_STATUS.labels(config.lease_name).set(0)

    @property
    def config(self) -> LeaderElectionConfig:
        return self._config

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def leader_identity(self) -> str:
        """The holder we last observed ("" when unknown or released)."""
        return str(self._observed.get("holderIdentity") or "")

    def holds_lease(self) -> bool:
        """True while leading and the last successful renew is within the renew deadline, by our clock.

        Judged at the moment of the call, not at the renew loop's next wake-up: after a pause (SIGSTOP,
        a stalled loop) this turns False at once, even before the renew loop runs again.
        """
        return self._leading and self._renew_time_left() > 0

    def healthz_check(self, tolerance: float = 20.0) -> bool:
        """client-go's HealthzAdaptor: unhealthy when leading on a lease not renewed for LD + tolerance."""
        if not self._leading:
            return True
        return self._clock.monotonic() - self._observed_time <= self._config.lease_duration + tolerance

    async def run(self) -> None:
        """Acquire, start the leader work, renew until lost, then call on_stopped_leading.

        Cancellation (a clean shutdown) stops the work, releases the lease if configured and re-raises;
        on_stopped_leading is then not called. An exception from the leader work is re-raised here.
        """
        await self._acquire()
        self._set_leading(True)
        work = asyncio.create_task(self._on_started_leading(), name=f"leader:{self._config.lease_name}")
        try:
            await self._renew_until_lost(work)
        except asyncio.CancelledError:
            await self._stop_work(work)
            self._set_leading(False)
            if self._config.release_on_cancel:
                await self.release()
            raise
        self._set_leading(False)  # before anything awaits: holds_lease() is False from here on
        await self._stop_work(work)
        if work.done() and not work.cancelled() and (exc := work.exception()) is not None:
            raise exc
        self._log.error("Leader election lost")
        self._on_stopped_leading()

    async def release(self) -> bool:
        """Write holder "" with a 1 s duration so a successor need not wait out the lease; retries on 409."""
        for _ in range(3):
            if self._lease is None or self.leader_identity != self._config.identity:
                return True
            now = format_micro_time(self._clock.now())
            spec = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": self._observed.get("leaseTransitions") or 0,
            }
            try:
                written = await self._put(spec)
            except Exception as exc:
                if _status(exc) != 409:
                    self._log.warning("Failed to release lease", error=repr(exc))
                    return False
                await self._get_observed()  # someone wrote in between: re-read, release only if still ours
                continue
            self._record(written, spec, self._clock.monotonic())
            self._log.info("Released lease")
            return True
        return False

    # -- loops ---------------------------------------------------------------------------------------

    def observe(self, lease: dict[str, Any] | None) -> None:
        """A version of the Lease seen outside our own requests (a watch); None when it was deleted.

        A changed spec counts as observed now, as a GET's would. A new holder or a deleted Lease wakes
        the acquire loop, which then re-reads the Lease or waits for the new expiry.
        """
        if lease is None:
            self._changed.set()
            return
        spec = dict(lease.get("spec") or {})
        if spec == self._observed:
            return
        holder = self.leader_identity
        self._lease = lease
        self._observed = spec
        self._observed_time = self._clock.monotonic()
        if self.leader_identity != holder:
            self._changed.set()
        self._report_transition()

    async def _acquire(self) -> None:
        self._log.info("Attempting to acquire leader lease")
        watch = asyncio.create_task(self._watch_lease(self.observe)) if self._watch_lease else None
        try:
            while True:
                tried_at = self._clock.monotonic()
                if await self._try_acquire_or_renew():
                    break
                await self._wait_for_chance(tried_at)
        finally:
            if watch is not None:
                watch.cancel()
                await asyncio.gather(watch, return_exceptions=True)
        self._log.info("Acquired leader lease")

    async def _wait_for_chance(self, tried_at: float) -> None:
        """Sleep one jittered retry period, cut short by the observed lease's expiry or a new holder.

        An expiry the last try (started at `tried_at`) already saw pass does not cut it short: that try
        failed for another reason (an error, a lost race), and retrying at once would spin.
        """
        period = self._config.retry_period
        poll_at = self._clock.monotonic() + period + self._rng.random() * ACQUIRE_JITTER * period
        while True:
            expiry = self._expiry_at() + EXPIRY_MARGIN
            wake_at = min(poll_at, expiry) if expiry > tried_at else poll_at
            left = wake_at - self._clock.monotonic()
            if left <= 0:
                return
            self._changed.clear()
            if await self._sleep_or_change(left) and not self._held_by_another():
                return  # released or deleted: try now rather than at the next poll

    async def _sleep_or_change(self, seconds: float) -> bool:
        """True when observe() reported a change of holder before `seconds` passed."""
        timer = asyncio.ensure_future(self._clock.sleep(seconds))
        changed = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait({timer, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            changed.cancel()
        return self._changed.is_set()

    def _expiry_at(self) -> float:
        """When another holder's observed lease expires by our clock; infinity when none holds it."""
        if not self._held_by_another():
            return float("inf")
        return self._observed_time + float(self._observed.get("leaseDurationSeconds") or 0)

    def _held_by_another(self) -> bool:
        holder = self.leader_identity
        return bool(holder) and holder != self._config.identity

    async def _renew_until_lost(self, work: asyncio.Task[None]) -> None:
        pause = self._config.retry_period
        while True:
            await self._clock.sleep(pause)
            if work.done() and not work.cancelled() and work.exception() is not None:
                self._log.error("Leader work failed", error=repr(work.exception()))
                return
            # Checked on every wake-up, before any request: a loop stalled past the deadline steps down
            # even though nothing failed, because a challenger may already be counting down.
            if self._renew_deadline_passed():
                return
            pause = self._config.retry_period
            if not await self._try_acquire_or_renew():
                self._log.warning("Failed to renew leader lease")
                # Wake no later than the deadline, so a loss is declared at RD, not at the next period.
                pause = max(min(pause, self._renew_time_left()), 0.0)

    async def _stop_work(self, work: asyncio.Task[None]) -> None:
        """Cancel the leader work and wait for it, but no longer than the LD - RD safety margin."""
        if work.done():
            return
        work.cancel()
        margin = self._config.lease_duration - self._config.renew_deadline
        timer = asyncio.ensure_future(self._clock.sleep(margin))
        try:
            await asyncio.wait({work, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        if not work.done():
            self._log.error("Leader work ignored cancellation")

    def _renew_time_left(self) -> float:
        return self._last_renew_ok + self._config.renew_deadline - self._clock.monotonic()

    def _renew_deadline_passed(self) -> bool:
        return self._renew_time_left() <= 0

    # -- tryAcquireOrRenew ---------------------------------------------------------------------------

    async def _try_acquire_or_renew(self) -> bool:
        started = self._clock.monotonic()
        stamp = format_micro_time(self._clock.now())
        spec: dict[str, Any] = {
            "holderIdentity": self._config.identity,
            "leaseDurationSeconds": int(self._config.lease_duration),
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        }
        ok = await self._fast_path(spec, started) or await self._slow_path(spec, started)
        self._report_transition()
        return ok

    async def _fast_path(self, spec: dict[str, Any], started: float) -> bool:
        """The leader renews with its cached resourceVersion, skipping the GET."""
        mine = self._lease is not None and self.leader_identity == self._config.identity
        if not mine or not self._observed_valid(started):
            return False
        spec["acquireTime"] = self._observed.get("acquireTime") or spec["acquireTime"]
        spec["leaseTransitions"] = self._observed.get("leaseTransitions") or 0
        try:
            written = await self._put(spec)
        except Exception as exc:
            self._log.info("Lease fast-path renew failed, falling back to get", error=repr(exc))
            return False
        self._record(written, spec, started)
        return True

    async def _slow_path(self, spec: dict[str, Any], started: float) -> bool:
        try:
            current = await self._get_observed()
        except Exception as exc:
            if _status(exc) == 404:
                return await self._create(spec, started)
            self._log.warning("Failed to get lease", error=repr(exc))
            return False
        holder = current.get("holderIdentity") or ""
        if holder and holder != self._config.identity and self._observed_valid(started):
            return False  # someone else holds a lease that has not expired by our clock
        if holder == self._config.identity:
            spec["acquireTime"] = current.get("acquireTime") or spec["acquireTime"]
            spec["leaseTransitions"] = current.get("leaseTransitions") or 0
        else:
            spec["leaseTransitions"] = (current.get("leaseTransitions") or 0) + 1
        try:
            written = await self._put(spec)
        except Exception as exc:
            # 409: someone else wrote since our GET; they win this round.
            self._log.info("Failed to update lease", error=repr(exc), status=_status(exc))
            return False
        self._record(written, spec, started)
        return True

    async def _create(self, spec: dict[str, Any], started: float) -> bool:
        lease = {
            "apiVersion": LEASE_API_VERSION,
            "kind": "Lease",
            "metadata": {"name": self._config.lease_name, "namespace": self._config.lease_namespace},
            "spec": spec,
        }
        try:
            created = await self._request(
                self._client.create(self._res, lease, self._config.lease_namespace, **self._t())
            )
        except Exception as exc:
            self._log.info("Failed to create lease", error=repr(exc), status=_status(exc))
            return False
        self._record(created, spec, started)
        return True

    async def _get_observed(self) -> dict[str, Any]:
        """GET the Lease; a changed spec resets the observation time (the only expiry input)."""
        lease = await self._request(
            self._client.get(self._res, self._config.lease_name, self._config.lease_namespace, **self._t())
        )
        self._lease = lease
        spec = dict(lease.get("spec") or {})
        if spec != self._observed:
            self._observed = spec
            self._observed_time = self._clock.monotonic()
        return spec

    # -- helpers -------------------------------------------------------------------------------------

    def _observed_valid(self, at: float) -> bool:
        return self._observed_time + float(self._observed.get("leaseDurationSeconds") or 0) > at

    def _record(self, written: dict[str, Any], spec: dict[str, Any], started: float) -> None:
        self._lease = written if written.get("metadata") else self._with_spec(spec)
        self._observed = dict(spec)
        self._observed_time = started
        if spec["holderIdentity"] == self._config.identity:
            self._last_renew_ok = started

    def _with_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        base = self._lease or {}
        return {**base, "apiVersion": LEASE_API_VERSION, "kind": "Lease", "spec": spec}

    def _report_transition(self) -> None:
        holder = self.leader_identity
        if not holder or holder == self._reported_leader:
            return
        self._reported_leader = holder
        LEADER_TRANSITIONS.labels(self._config.lease_name).inc()
        self._log.info("New leader observed", leader=holder)
        if self._on_new_leader is not None:
            try:
                self._on_new_leader(holder)
            except Exception:  # an observer must not break the renew loop
                self._log.exception("on_new_leader callback failed")

    def _set_leading(self, leading: bool) -> None:
        self._leading = leading
        LEADER_STATUS.labels(self._config.lease_name).set(1 if leading else 0)

    async def _put(self, spec: dict[str, Any]) -> dict[str, Any]:
        """PUT the spec onto the last Lease we saw; its resourceVersion makes a lost race a 409."""
        return await self._request(self._client.update(self._res, self._with_spec(spec), **self._t()))

    def _t(self) -> dict[str, float]:
        return {"timeout": self._timeout()}

    def _timeout(self) -> float:
        """Per-request timeout; while leading it never runs past the renew deadline."""
        timeout = self._config.request_timeout
        if self._leading:
            timeout = min(timeout, self._renew_time_left())
        return max(timeout, 0.0)

    async def _request(self, call: Awaitable[_T]) -> _T:
        """Await one API call, cut off by our clock as well as by the client's own timeout."""
        task = asyncio.ensure_future(call)
        timer = asyncio.ensure_future(self._clock.sleep(self._timeout()))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
        if task.cancelled():
            raise TimeoutError("lease request timed out")
        return task.result()


def _status(exc: BaseException) -> int | None:
    """HTTP status of an ApiError, read structurally so this module does not import errors.py."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None
