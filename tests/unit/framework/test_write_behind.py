"""Creates run beside the pass that started them: bounded, one per object, failures back to a pass."""

from __future__ import annotations

import asyncio

import pytest

from ome.framework.reconcile import Request
from ome.framework.write_behind import Slots, WriteBehind

OWNER = Request("demo", "llama")
SVC = ("services", "demo", "llama-engine")
DEP = ("deployments", "demo", "llama-engine")


class Gate:
    """A write that answers when the test says so."""

    def __init__(self, error: Exception | None = None) -> None:
        self.opened = asyncio.Event()
        self.done = False
        self.error = error

    async def __call__(self) -> None:
        await self.opened.wait()
        if self.error is not None:
            raise self.error
        self.done = True


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_create_runs_beside_the_caller_and_is_in_flight_until_answered() -> None:
    behind, gate = WriteBehind(), Gate()
    assert behind.start(SVC, "h1", OWNER, gate)
    await settle()
    assert behind.in_flight(SVC) == "h1" and not gate.done  # the caller went on
    assert not behind.start(SVC, "h1", OWNER, Gate())  # one create per object at a time
    gate.opened.set()
    await behind.wait(SVC)
    assert gate.done and behind.in_flight(SVC) is None and behind.in_flight_count == 0


async def test_a_failed_create_requeues_its_owner_and_is_next_written_inline() -> None:
    behind, requeued = WriteBehind(), []
    behind.bind(requeued.append, lambda owner: None)
    gate = Gate(error=RuntimeError("admission webhook denied the request"))
    assert behind.start(DEP, "h1", OWNER, gate)
    gate.opened.set()
    await behind.wait(DEP)
    assert requeued == [OWNER]
    assert behind.failed(DEP) and behind.in_flight(DEP) is None
    assert not behind.start(DEP, "h1", OWNER, Gate())  # inline, so its error reaches a pass
    behind.clear(DEP)
    assert not behind.failed(DEP)
    assert behind.start(DEP, "h1", OWNER, Gate())
    behind.cancel()


async def test_cancel_stops_what_is_in_flight() -> None:
    behind, gate = WriteBehind(), Gate()
    behind.start(SVC, "h1", OWNER, gate)
    await settle()
    behind.cancel()
    gate.opened.set()
    await settle()
    assert not gate.done and behind.in_flight_count == 0


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        WriteBehind(limit=0)


async def test_an_owner_found_with_creates_pending_is_woken_when_its_last_one_ends() -> None:
    """The created object's watch event can bring a pass before the create's answer: that pass finds
    the create still pending and writes no Ready, so the end of the last create must bring another."""
    behind, woken = WriteBehind(), []
    behind.bind(lambda owner: None, woken.append)
    svc, external = Gate(), Gate()
    behind.start(SVC, "h1", OWNER, svc)
    behind.start(("services", "demo", "llama"), "h2", OWNER, external)
    other = Request("demo", "other")
    assert behind.pending_for(OWNER) and not behind.pending_for(other)
    svc.opened.set()
    await behind.wait(SVC)
    assert woken == []  # one still in flight
    external.opened.set()
    await behind.wait(("services", "demo", "llama"))
    assert woken == [OWNER]
    assert not behind.pending_for(OWNER)


async def test_an_owner_nobody_asked_about_is_not_woken() -> None:
    behind, woken = WriteBehind(), []
    behind.bind(lambda owner: None, woken.append)
    gate = Gate()
    behind.start(SVC, "h1", OWNER, gate)
    gate.opened.set()
    await behind.wait(SVC)
    assert woken == []  # its event brings the pass; no second one


async def test_a_cancel_gives_its_slots_back() -> None:
    slots = Slots(limit=1)
    behind = WriteBehind(slots=slots)
    behind.start(SVC, "h1", OWNER, Gate())
    assert slots.used == 1
    behind.cancel()
    await settle()
    assert slots.used == 0 and behind.start(DEP, "h2", OWNER, Gate())
    behind.cancel()


async def test_no_room_means_the_caller_writes_inline_and_the_limit_is_shared() -> None:
    """The InferenceService and InferenceReplica controllers' creates share the client's connections:
    one limit for both; a create that ends gives its slot back."""
    slots = Slots(limit=1)
    services, replicas = WriteBehind(slots=slots), WriteBehind(slots=slots)
    gate = Gate()
    assert services.start(SVC, "h1", OWNER, gate)
    assert not replicas.start(("services", "demo", "llama-engine-abc"), "h2", Request("demo", "llama-engine"),
                              Gate())
    gate.opened.set()
    await services.wait(SVC)
    assert slots.used == 0
    assert replicas.start(("services", "demo", "llama-engine-abc"), "h2", Request("demo", "llama-engine"), Gate())
    replicas.cancel()

