"""Leader election state machine against a fake clock and an in-memory Lease API."""

from __future__ import annotations

import asyncio
import copy
import random
import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ome.framework import leaderelection
from ome.framework.leaderelection import LeaderElectionConfig, LeaderElector

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class FakeClock:
    """Time moves only when the test steps it; sleepers wake when their deadline is reached."""

    def __init__(self, start: float = 1_000.0) -> None:
        self._t = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def monotonic(self) -> float:
        return self._t

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self._t)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._t + seconds, fut))
        await fut

    def step(self, seconds: float) -> None:
        self._t += seconds
        due = [s for s in self._sleepers if s[0] <= self._t]
        self._sleepers = [s for s in self._sleepers if s[0] > self._t]
        for _, fut in sorted(due, key=lambda s: s[0]):
            if not fut.done():
                fut.set_result(None)


class FakeApiError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status = status


# ruff: noqa: ASYNC109 -- the fake mirrors the client's per-call timeout parameter


class FakeLeaseApi:
    """One Lease with resourceVersion checks; verbs can be made to fail or hang."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.fail: dict[str, int] = {}  # verb -> status to raise
        self.hang: set[str] = set()
        self.calls: list[str] = []
        self.cancelled = 0
        self.watchers: list[asyncio.Queue[dict[str, Any]]] = []

    async def _gate(self, verb: str) -> None:
        self.calls.append(verb)
        await asyncio.sleep(0)  # let concurrent candidates interleave
        if verb in self.hang:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        if verb in self.fail:
            raise FakeApiError(self.fail[verb])

    def _store(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(self.rv)
        self.lease = stored
        for queue in self.watchers:
            queue.put_nowait(copy.deepcopy(stored))
        return copy.deepcopy(stored)

    async def follow(self, observe: Callable[[dict[str, Any] | None], None]) -> None:
        """A watch of the Lease as the elector is given one: every stored version, as it is stored."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.watchers.append(queue)
        try:
            observe(copy.deepcopy(self.lease) if self.lease else None)
            while True:
                observe(await queue.get())
        finally:
            self.watchers.remove(queue)

    async def get(
        self, res: Any, name: str, namespace: str | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        await self._gate("get")
        if self.lease is None:
            raise FakeApiError(404)
        return copy.deepcopy(self.lease)

    async def create(
        self, res: Any, obj: dict[str, Any], namespace: str | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        await self._gate("create")
        if self.lease is not None:
            raise FakeApiError(409)
        return self._store(obj)

    async def update(self, res: Any, obj: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        await self._gate("update")
        assert timeout is not None and timeout > 0
        if self.lease is None:
            raise FakeApiError(404)
        if obj["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise FakeApiError(409)
        return self._store(obj)

    @property
    def spec(self) -> dict[str, Any]:
        assert self.lease is not None
        return dict(self.lease["spec"])


async def settle() -> None:
    for _ in range(40):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float, tick: float = 0.1) -> None:
    await settle()
    for _ in range(round(seconds / tick)):
        clock.step(tick)
        await settle()


class LongestJitter(random.Random):
    """Every jittered retry period at its longest (2 s x 2.2 by default)."""

    def random(self) -> float:
        return 0.999


class Candidate:
    """An elector plus the record of its callbacks."""

    def __init__(self, api: FakeLeaseApi, clock: FakeClock, identity: str, *, watch: bool = False,
                 rng: random.Random | None = None, **cfg: Any) -> None:
        self.started = 0
        self.stopped_at: float | None = None
        self.new_leaders: list[str] = []
        self.clock = clock
        self.elector = LeaderElector(
            api,
            LeaderElectionConfig(lease_name="ome", lease_namespace="ome", identity=identity, **cfg),
            on_started_leading=self._work,
            on_stopped_leading=self._stopped,
            on_new_leader=self.new_leaders.append,
            clock=clock,
            rng=rng or random.Random(7),
            watch_lease=api.follow if watch else None,
        )
        self.task: asyncio.Task[None] | None = None

    async def _work(self) -> None:
        self.started += 1
        await asyncio.Event().wait()

    def _stopped(self) -> None:
        self.stopped_at = self.clock.monotonic()

    def start(self) -> Candidate:
        self.task = asyncio.create_task(self.elector.run())
        return self

    async def kill(self) -> None:
        """Cancel run() as a clean shutdown would."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.wait({self.task})


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeLeaseApi, FakeClock, Callable[..., Candidate]]]:
    api, clock = FakeLeaseApi(), FakeClock()
    made: list[Candidate] = []

    def candidate(identity: str, **cfg: Any) -> Candidate:
        made.append(Candidate(api, clock, identity, **cfg))
        return made[-1].start()

    yield api, clock, candidate
    for c in made:
        await c.kill()


Env = tuple[FakeLeaseApi, FakeClock, Callable[..., Candidate]]


async def test_acquires_when_no_lease_exists(env: Env) -> None:
    api, _, candidate = env
    a = candidate("a")
    await settle()
    assert a.elector.is_leader and a.started == 1
    assert api.calls[:2] == ["get", "create"]
    spec = api.spec
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15 and spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
    assert a.new_leaders == ["a"]


async def test_leader_renews_via_fast_path(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    first = api.spec
    api.calls.clear()
    await advance(clock, 6.0)
    assert api.calls == ["update", "update", "update"]
    assert api.spec["renewTime"] > first["renewTime"]
    assert api.spec["acquireTime"] == first["acquireTime"]
    assert a.elector.is_leader and a.elector.healthz_check(0.0)


async def test_challenger_takes_over_lease_duration_after_last_observed_change(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    await a.kill()  # dies without releasing
    b = candidate("b")
    await settle()
    observed_at = clock.monotonic()
    assert not b.elector.is_leader and b.new_leaders == ["a"]
    await advance(clock, 14.9)
    assert not b.elector.is_leader
    await advance(clock, 2.0 * 2.2 + 0.2)  # at most one jittered retry later
    assert b.elector.is_leader and b.started == 1
    assert api.spec["holderIdentity"] == "b" and api.spec["leaseTransitions"] == 1
    assert clock.monotonic() - observed_at >= 15.0


async def test_a_watching_challenger_takes_over_at_the_expiry_of_the_last_renewal(env: Env) -> None:
    """The watch dates each renewal when it is written and the expiry wakes the challenger: no poll's lag."""
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    b = candidate("b", watch=True, rng=LongestJitter())
    await advance(clock, 6.0)  # a renews every 2 s
    last_renew = clock.monotonic()
    assert api.calls.count("update") == 3 and not b.elector.is_leader
    await advance(clock, 0.1)
    await a.kill()  # dies without releasing, just after a renewal
    await advance(clock, 14.8)
    assert not b.elector.is_leader
    await advance(clock, 0.2)  # polling alone: the renewal seen up to 4.4 s late, then up to 4.4 s more
    assert b.elector.is_leader and api.spec["holderIdentity"] == "b"
    assert clock.monotonic() - last_renew >= 15.0
    assert not api.watchers, "the watch stops once leading"


async def test_a_watching_challenger_does_not_take_over_a_lease_still_renewed(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    b = candidate("b", watch=True)
    await advance(clock, 40.0)
    assert a.elector.is_leader and not b.elector.is_leader and b.started == 0
    assert api.spec["holderIdentity"] == "a" and api.spec["leaseTransitions"] == 0


async def test_a_watching_challenger_takes_a_released_lease_at_once(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a", release_on_cancel=True)
    await settle()
    b = candidate("b", watch=True, rng=LongestJitter())
    await advance(clock, 0.5)
    await a.kill()
    await settle()
    assert b.elector.is_leader and api.spec["holderIdentity"] == "b"


async def test_a_challenger_that_fails_after_the_expiry_waits_for_its_next_poll(env: Env) -> None:
    """A try at the expiry that fails (the apiserver errs) must not be retried at once: that would spin."""
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    await a.kill()
    b = candidate("b", watch=True)
    await advance(clock, 14.0)
    api.fail = {"get": 500, "update": 500}
    api.calls.clear()
    await advance(clock, 10.0)
    assert not b.elector.is_leader
    assert 2 <= api.calls.count("get") <= 6, api.calls.count("get")  # one per jittered 2-4.4 s poll


async def test_only_one_of_two_racing_challengers_wins(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    await a.kill()
    b, c = candidate("b"), candidate("c")
    await advance(clock, 25.0)
    assert [b.elector.is_leader, c.elector.is_leader].count(True) == 1
    assert api.spec["leaseTransitions"] == 1


async def test_renew_failures_past_deadline_step_down(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    last_ok = clock.monotonic()
    api.fail = {"update": 500, "get": 500}
    await advance(clock, 12.0)
    assert a.stopped_at is not None and not a.elector.is_leader
    assert 10.0 <= a.stopped_at - last_ok <= 10.2
    assert a.task is not None and a.task.done() and a.task.exception() is None


async def test_single_hung_put_is_cut_and_leader_keeps_lease(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    api.hang = {"update"}
    await advance(clock, 2.0)  # fast-path PUT starts and hangs
    api.hang = set()
    await advance(clock, 5.0)  # cut at request_timeout (5 s), then GET + PUT succeed
    assert api.cancelled == 1 and api.calls[-2:] == ["get", "update"]
    assert a.elector.is_leader and a.stopped_at is None


async def test_hung_puts_step_down_within_renew_deadline(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    last_ok = clock.monotonic()
    api.hang = {"update"}
    await advance(clock, 12.0)
    assert a.stopped_at is not None and a.stopped_at - last_ok <= 10.2
    assert api.cancelled >= 2


async def test_stalled_loop_steps_down_on_wake_up_without_a_request(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a")
    await settle()
    api.calls.clear()
    clock.step(11.0)  # the loop was blocked; nothing failed
    await settle()
    assert a.stopped_at is not None and not a.elector.is_leader
    assert api.calls == []


async def test_holds_lease_turns_false_the_moment_the_renew_deadline_passes(env: Env) -> None:
    """What fences leader writes: judged on each call, before the renew loop wakes from a pause."""
    _, clock, candidate = env
    a = candidate("a")
    await settle()
    assert a.elector.holds_lease()
    clock.step(9.9)
    assert a.elector.holds_lease()
    clock.step(0.2)  # no await in between: the renew loop has not run
    assert not a.elector.holds_lease()
    assert a.elector.is_leader, "the loop itself has not noticed yet"
    await settle()
    assert not a.elector.is_leader and a.stopped_at is not None


async def test_release_on_cancel_hands_the_lease_over(env: Env) -> None:
    api, clock, candidate = env
    a = candidate("a", release_on_cancel=True)
    await settle()
    await a.kill()
    assert api.spec["holderIdentity"] == "" and api.spec["leaseDurationSeconds"] == 1
    assert a.stopped_at is None  # a shutdown is not a loss
    b = candidate("b")
    await advance(clock, 1.0 + 4.4 + 0.2)
    assert b.elector.is_leader and api.spec["leaseTransitions"] == 1


async def test_healthz_fails_when_leader_lease_is_stale(env: Env) -> None:
    _, clock, candidate = env
    a = candidate("a")
    await settle()
    assert a.elector.healthz_check(tolerance=5.0)
    clock.step(20.1)  # checked before the loop gets to run
    assert not a.elector.healthz_check(tolerance=5.0)


def test_metrics_are_registered() -> None:
    assert leaderelection.LEADER_STATUS._name == "leader_election_master_status"
    assert leaderelection.LEADER_TRANSITIONS._name == "ome_leader_election_transitions"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "lease_duration"),
        ({"renew_deadline": 2.4, "retry_period": 2}, "1.2"),
        ({"retry_period": 0.5, "renew_deadline": 5}, "at least 1"),
        ({"identity": ""}, "identity"),
        ({"lease_name": ""}, "lease_name"),
    ],
    ids=["ld-not-above-rd", "rd-not-above-1.2rp", "below-one-second", "empty-identity", "no-name"],
)
def test_config_rejects_bad_values(kwargs: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {"lease_name": "ome", "lease_namespace": "ome"}
    with pytest.raises(ValueError, match=message):
        LeaderElectionConfig(**{**base, **kwargs})


def test_config_defaults() -> None:
    cfg = LeaderElectionConfig(lease_name="ome", lease_namespace="ome")
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert "_" in cfg.identity and cfg.request_timeout == 5.0
    assert cfg.identity != LeaderElectionConfig(lease_name="ome", lease_namespace="ome").identity


def test_micro_time_is_utc() -> None:
    ist = datetime(2026, 12, 2, 19, 36, 36, tzinfo=UTC).astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert leaderelection.format_micro_time(ist) == "2026-12-02T19:36:36.000000Z"
