from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ome.framework import errors, resources
from ome.framework.events import AGGREGATION_WINDOW, EventBudget, EventRecorder, EventSpamFilter

from .fakeclock import FakeClock


class FakeClient:
    def __init__(self) -> None:
        self.created: list[tuple[str | None, dict[str, Any]]] = []
        self.patched: list[tuple[str, str | None, dict[str, Any]]] = []
        self.events: dict[str, dict[str, Any]] = {}
        self.block: asyncio.Event | None = None

    async def create(self, res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        assert res is resources.EVENTS
        if self.block is not None:
            await self.block.wait()
        self.created.append((namespace, obj))
        self.events[obj["metadata"]["name"]] = obj
        return obj

    async def patch(
        self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        assert res is resources.EVENTS
        if name not in self.events:
            raise errors.NotFound(404, "NotFound", f'events "{name}" not found')
        self.patched.append((name, namespace, patch))
        self.events[name] = {**self.events[name], **patch}
        return self.events[name]


def isvc(name: str = "llm", namespace: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7"}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": meta}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


@pytest.fixture
async def recorder(client: FakeClient, clock: FakeClock) -> AsyncIterator[EventRecorder]:
    rec = EventRecorder(client, "ome-controller", host="node-1", clock=clock)
    yield rec
    await rec.aclose(grace_period=1)


async def test_first_event_creates_a_core_v1_event(recorder: EventRecorder, client: FakeClient) -> None:
    recorder.event(isvc(), "Warning", "RuntimeNotFound", "no runtime supports model llama")
    await recorder.flush()
    [(namespace, body)] = client.created
    assert namespace == "ns"
    assert body["metadata"]["namespace"] == "ns"
    assert body["metadata"]["name"].startswith("llm.")
    assert body["involvedObject"] == {
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "namespace": "ns", "name": "llm",
        "uid": "uid-llm", "resourceVersion": "7",
    }  # fmt: skip
    assert (body["type"], body["reason"], body["count"]) == ("Warning", "RuntimeNotFound", 1)
    assert body["source"] == {"component": "ome-controller", "host": "node-1"}
    assert body["firstTimestamp"] == body["lastTimestamp"]
    assert body["firstTimestamp"].endswith("Z")


async def test_identical_events_are_aggregated_by_patching_count(
    recorder: EventRecorder, client: FakeClient, clock: FakeClock
) -> None:
    for _ in range(3):
        recorder.event(isvc(), "Normal", "Created", "created pod llm-0")
        clock.step(1)
    await recorder.flush()
    assert len(client.created) == 1
    name = client.created[0][1]["metadata"]["name"]
    assert [(n, p["count"]) for n, _, p in client.patched] == [(name, 2), (name, 3)]
    assert client.events[name]["count"] == 3
    assert "lastTimestamp" in client.patched[-1][2]


@pytest.mark.parametrize(
    ("obj", "type_", "reason", "message"),
    [
        (isvc("other"), "Normal", "Created", "created pod llm-0"),
        (isvc(), "Warning", "Created", "created pod llm-0"),
        (isvc(), "Normal", "Deleted", "created pod llm-0"),
        (isvc(), "Normal", "Created", "created pod llm-1"),
    ],
    ids=["object", "type", "reason", "message"],
)
async def test_events_differing_in_any_key_field_are_separate(
    recorder: EventRecorder, client: FakeClient, obj: dict[str, Any], type_: Any, reason: str, message: str
) -> None:
    recorder.event(isvc(), "Normal", "Created", "created pod llm-0")
    recorder.event(obj, type_, reason, message)
    await recorder.flush()
    assert len(client.created) == 2 and client.patched == []


async def test_aggregation_window_is_ten_minutes(
    recorder: EventRecorder, client: FakeClient, clock: FakeClock
) -> None:
    recorder.event(isvc(), "Normal", "Scaled", "scaled to 2")
    clock.step(AGGREGATION_WINDOW + 1)
    recorder.event(isvc(), "Normal", "Scaled", "scaled to 2")
    await recorder.flush()
    assert len(client.created) == 2


async def test_cluster_scoped_objects_get_events_in_default(
    recorder: EventRecorder, client: FakeClient
) -> None:
    recorder.event(isvc("model", namespace=None), "Normal", "Ready", "model is ready")
    await recorder.flush()
    [(namespace, body)] = client.created
    assert namespace == "default"
    assert "namespace" not in body["involvedObject"]


async def test_expired_event_is_created_again(recorder: EventRecorder, client: FakeClient) -> None:
    recorder.event(isvc(), "Normal", "Created", "x")
    await recorder.flush()
    client.events.clear()  # the apiserver's event TTL removed it
    recorder.event(isvc(), "Normal", "Created", "x")
    await recorder.flush()
    assert len(client.created) == 2


async def test_event_never_blocks_and_drops_on_overload(client: FakeClient, clock: FakeClock) -> None:
    client.block = asyncio.Event()
    rec = EventRecorder(client, "ome", max_queued=2, clock=clock)
    for i in range(5):
        rec.event(isvc(f"o{i}"), "Normal", "R", "m")  # plain call: returns without awaiting
    assert rec.dropped == 3
    client.block.set()
    await rec.aclose(grace_period=1)
    assert [body["involvedObject"]["name"] for _, body in client.created] == ["o0", "o1"]


async def test_write_failures_are_logged_not_raised(recorder: EventRecorder, client: FakeClient) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise errors.Forbidden(403, "Forbidden", "cannot create events")

    client.create = refuse  # type: ignore[method-assign]
    recorder.event(isvc(), "Normal", "R", "m")
    await recorder.flush()
    recorder.event(isvc("b"), "Normal", "R", "m")  # the writer is still alive
    await recorder.flush()


# ---- the per-object event budget (client-go's EventSourceObjectSpamFilter) -------------------------------


def test_the_default_budget_is_client_gos() -> None:
    assert EventBudget() == EventBudget(burst=25, refill_interval=300.0)
    assert EventRecorder(FakeClient(), "ome").budget == EventBudget(25, 300.0)


@pytest.mark.parametrize(("burst", "interval"), [(0, 1.0), (-1, 1.0), (1, 0.0), (1, -5.0)])
def test_a_budget_must_be_positive(burst: int, interval: float) -> None:
    with pytest.raises(ValueError, match="event budget"):
        EventBudget(burst, interval)


async def test_a_burst_passes_then_one_more_each_refill_interval(
    client: FakeClient, clock: FakeClock
) -> None:
    rec = EventRecorder(client, "ome", clock=clock, budget=EventBudget(burst=3, refill_interval=5.0))
    for i in range(4):
        rec.event(isvc(), "Normal", "Scaled", f"scaled to {i}")
    assert rec.throttled == 1
    clock.step(4.9)
    rec.event(isvc(), "Normal", "Scaled", "scaled to 4")
    assert rec.throttled == 2  # not yet a whole token
    clock.step(0.1)
    rec.event(isvc(), "Normal", "Scaled", "scaled to 5")
    rec.event(isvc(), "Normal", "Scaled", "scaled to 6")
    assert rec.throttled == 3  # one token per interval, not a new burst
    await rec.aclose(grace_period=1)
    assert [body["message"] for _, body in client.created] == [
        "scaled to 0", "scaled to 1", "scaled to 2", "scaled to 5"]
    assert rec.dropped == 0


async def test_repeats_of_one_event_count_against_the_budget(client: FakeClient, clock: FakeClock) -> None:
    rec = EventRecorder(client, "ome", clock=clock, budget=EventBudget(burst=2, refill_interval=60.0))
    for _ in range(5):
        rec.event(isvc(), "Warning", "BackOff", "same message")  # would only bump `count`
    await rec.aclose(grace_period=1)
    assert rec.throttled == 3
    [(_, body)] = client.created
    assert [p["count"] for _, _, p in client.patched] == [2]


async def test_each_object_and_type_has_its_own_bucket(client: FakeClient, clock: FakeClock) -> None:
    rec = EventRecorder(client, "ome", clock=clock, budget=EventBudget(burst=1, refill_interval=60.0))
    rec.event(isvc(), "Normal", "R", "a")
    rec.event(isvc(), "Normal", "R", "b")  # throttled: same object, same type
    rec.event(isvc(), "Warning", "R", "c")
    rec.event(isvc("other"), "Normal", "R", "d")
    rec.event({**isvc(), "kind": "InferenceReplica"}, "Normal", "R", "e")
    await rec.aclose(grace_period=1)
    assert rec.throttled == 1
    assert [body["message"] for _, body in client.created] == ["a", "c", "d", "e"]


async def test_recorders_sharing_a_filter_have_buckets_per_component(
    client: FakeClient, clock: FakeClock
) -> None:
    shared = EventSpamFilter(EventBudget(burst=1, refill_interval=60.0), clock=clock)
    first, second, other = (EventRecorder(client, c, clock=clock, spam_filter=shared)
                            for c in ("ctrl-a", "ctrl-a", "ctrl-b"))
    first.event(isvc(), "Normal", "R", "a")
    second.event(isvc(), "Normal", "R", "b")  # the same source, object and type: the same bucket
    other.event(isvc(), "Normal", "R", "c")
    assert (first.throttled, second.throttled, other.throttled) == (0, 1, 0)
    assert second.budget == EventBudget(1, 60.0)
    for rec in (first, second, other):
        await rec.aclose(grace_period=1)
    with pytest.raises(ValueError, match="not both"):
        EventRecorder(client, "x", budget=EventBudget(), spam_filter=shared)


def test_the_filter_keeps_at_most_max_keys_evicting_the_least_recently_used(clock: FakeClock) -> None:
    spam = EventSpamFilter(EventBudget(burst=1, refill_interval=60.0), clock=clock, max_keys=2)
    assert spam.allow(("a",)) and spam.allow(("b",))
    assert not spam.allow(("a",))  # a is now the most recently used
    assert spam.allow(("c",))  # evicts b
    assert len(spam) == 2
    assert spam.allow(("b",))  # forgotten: a full bucket again (evicts a)
    assert spam.allow(("a",))
    assert not spam.allow(("b",)) and not spam.allow(("a",))  # b and a are the two kept, both empty
    assert len(spam) == 2


def test_the_default_lru_bound_is_client_gos(clock: FakeClock) -> None:
    spam = EventSpamFilter(clock=clock)
    for i in range(4097):
        spam.allow((str(i),))
    assert len(spam) == 4096


async def test_a_full_queue_spends_no_token(client: FakeClient, clock: FakeClock) -> None:
    client.block = asyncio.Event()
    rec = EventRecorder(client, "ome", max_queued=1, clock=clock, budget=EventBudget(2, 60.0))
    rec.event(isvc(), "Normal", "R", "a")
    await asyncio.sleep(0)  # the writer takes "a" and blocks on the apiserver
    rec.event(isvc(), "Normal", "R", "b")  # queued
    rec.event(isvc(), "Normal", "R", "c")  # queue full: dropped before the filter
    assert (rec.dropped, rec.throttled) == (1, 0)
    client.block.set()
    await rec.aclose(grace_period=1)
