"""Reflector + Informer against the fake apiserver: sync, re-watch, relist, tombstones, handlers."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration
from prometheus_client import REGISTRY

from ome.framework import handlers, resources
from ome.framework.client import META_ACCEPT, Client
from ome.framework.informer import DeletedFinalStateUnknown, Informer
from ome.framework.reconcile import Request
from ome.framework.reflector import Backoff, ReflectorSettings
from ome.framework.resources import Resource
from ome.framework.transport import ClientSettings
from tests.unit.framework.fake_apiserver import FakeApiServer

Obj = dict[str, Any]
FAST = ReflectorSettings(initial_backoff=0.01, max_backoff=0.05, min_watch_timeout=30)
CM = resources.CONFIGMAPS


def cm(name: str, ns: str = "default", **labels: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
    }


@pytest.fixture
async def fake() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def client(fake: FakeApiServer) -> AsyncIterator[Client]:
    settings = ClientSettings(watch_sock_read=0.3)  # half-open sockets are noticed quickly
    async with Client.from_configuration(Configuration(host=fake.url), settings) as c:
        yield c


class Recorder:
    """A handler that also checks the store already holds what it is told about."""

    def __init__(self, informer: Informer) -> None:
        self.events: list[tuple[str, str, str | None]] = []
        self.informer = informer
        self.store_was_current = True

    def __call__(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        key = f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
        stored = self.informer.store.get(key)
        self.store_was_current &= stored is None if event_type == "DELETED" else stored is obj
        self.events.append((event_type, obj["metadata"]["name"], old["metadata"]["name"] if old else None))


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Informer], Recorder]]:
    started: list[Informer] = []

    def start(informer: Informer) -> Recorder:
        recorder = Recorder(informer)
        informer.add_handler(recorder)
        informer.start()
        started.append(informer)
        return recorder

    yield start
    for informer in started:
        await informer.stop()


async def until(predicate: Callable[[], bool], within: float = 3.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


def names(informer: Informer) -> list[str]:
    return sorted(o["metadata"]["name"] for o in informer.store.list())


def watch_requests(fake: FakeApiServer) -> list[dict[str, str]]:
    return [r.query for r in fake.requests if r.query.get("watch") == "1"]


def list_requests(fake: FakeApiServer) -> list[dict[str, str]]:
    return [r.query for r in fake.requests if r.method == "GET" and "watch" not in r.query]


async def test_watch_list_syncs_at_the_initial_events_end_bookmark(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.add(CM, cm("a"))
    fake.add(CM, cm("b"))
    informer = Informer(client, CM, settings=FAST)
    recorder = running(informer)
    await informer.wait_for_sync(2)
    assert names(informer) == ["a", "b"]
    assert informer.last_sync_resource_version == str(fake.rv)
    assert list_requests(fake) == []  # no LIST: the state came over the watch
    assert watch_requests(fake)[0]["sendInitialEvents"] == "true"
    # The same stream goes on with live events.
    fake.add(CM, cm("c"))
    await until(lambda: "c" in names(informer))
    assert recorder.events == [("ADDED", "a", None), ("ADDED", "b", None), ("ADDED", "c", None)]
    assert len(watch_requests(fake)) == 1
    assert recorder.store_was_current


async def test_rejected_watch_list_falls_back_to_paginated_list(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.reject_watch_list = True
    for i in range(5):
        fake.add(CM, cm(f"o{i}"))
    informer = Informer(client, CM, settings=ReflectorSettings(page_size=2, initial_backoff=0.01))
    running(informer)
    await informer.wait_for_sync(2)
    assert names(informer) == [f"o{i}" for i in range(5)]
    assert [q.get("limit") for q in list_requests(fake)] == ["2", "2", "2"]
    # A consistent read: with RV "0" the apiserver answers from its watch cache in one page.
    assert "resourceVersion" not in list_requests(fake)[0]
    await until(lambda: len(watch_requests(fake)) == 2)
    assert watch_requests(fake)[1]["resourceVersion"] == str(fake.rv)  # watch from the list RV
    # A relist does not ask for WatchList again once the server said it does not support it.
    fake.expire_watches()
    await until(lambda: len(list_requests(fake)) == 6)
    assert len([q for q in watch_requests(fake) if "sendInitialEvents" in q]) == 1


async def test_watch_list_without_bookmark_falls_back_and_never_resumes_from_initial_events(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.add(CM, cm("a"))
    fake.watch_list_no_bookmark = True  # the stream carries ADDED events, then ends
    informer = Informer(client, CM, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    listed = list_requests(fake)
    assert len(listed) == 1
    await until(lambda: len(watch_requests(fake)) == 2)
    # The next watch starts from the LIST's RV, not the RV of a synthetic ADDED event.
    assert watch_requests(fake)[1]["resourceVersion"] == informer.last_sync_resource_version == str(fake.rv)


async def test_410_mid_stream_relists_without_losing_changes(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    for name in ("keep", "change", "drop"):
        fake.add(CM, cm(name))
    informer = Informer(client, CM, settings=FAST)
    recorder = running(informer)
    await informer.wait_for_sync(2)
    await until(lambda: fake.open_watches == 1)
    last_rv = informer.last_sync_resource_version
    fake.watch_hang = True  # changes below reach no open watch: only a relist can see them
    fake.expire_watches()
    fake.watch_hang = False
    fake.modify(CM, {**cm("change"), "data": {"v": "2"}})
    fake.remove(CM, "default/drop")
    fake.add(CM, cm("new"))
    await until(lambda: names(informer) == ["change", "keep", "new"])
    assert informer.store.get("default/change")["data"] == {"v": "2"}  # type: ignore[index]
    relist = [q for q in watch_requests(fake) if "sendInitialEvents" in q][1]
    assert relist["resourceVersion"] == last_rv  # relist from the last RV, not from ""
    assert recorder.events[3:] == [
        ("ADDED", "new", None),
        ("MODIFIED", "change", "change"),
        ("DELETED", "drop", None),
    ]
    assert recorder.store_was_current


async def test_expired_relist_rv_falls_back_to_a_consistent_list(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.reject_watch_list = True
    fake.add(CM, cm("a"))
    informer = Informer(client, CM, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    await until(lambda: fake.open_watches == 1)
    fake.expire_rv_lists = True
    fake.expire_watches()
    fake.add(CM, cm("b"))
    await until(lambda: names(informer) == ["a", "b"])
    rvs = [q.get("resourceVersion", "") for q in list_requests(fake)]
    assert rvs[0] == "" and rvs[1] not in ("", "0") and rvs[2] == ""


async def test_relist_tombstones_reach_handlers_with_the_last_known_object(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.reject_watch_list = True
    fake.add(CM, cm("a", app="x"))
    informer = Informer(client, CM, settings=FAST)
    deleted: list[Obj] = []
    informer.add_handler(lambda t, obj, old: deleted.append(obj) if t == "DELETED" else None)
    running(informer)
    await informer.wait_for_sync(2)
    await until(lambda: fake.open_watches == 1)
    fake.watch_hang = True
    fake.expire_watches()
    fake.watch_hang = False
    fake.remove(CM, "default/a")
    await until(lambda: len(deleted) == 1)
    assert deleted[0]["metadata"]["labels"] == {"app": "x"}
    assert informer.store.get("default/a") is None
    assert isinstance(deleted[0], DeletedFinalStateUnknown) and deleted[0].key == "default/a"


async def test_owners_of_children_deleted_during_a_relist_are_enqueued(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.reject_watch_list = True
    child = cm("child")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "llm", "uid": "u1", "controller": True}
    ]
    fake.add(CM, child)
    fake.add(CM, cm("watch-deleted", app="y"))
    informer = Informer(client, CM, settings=FAST)
    seen: list[tuple[str, Obj]] = []
    informer.add_handler(lambda t, obj, old: seen.append((t, obj)) if t == "DELETED" else None)
    queued: list[Request] = []

    class Queue:
        def add(self, item: Request) -> None:
            queued.append(item)

    owner_handler = handlers.enqueue_for_owner("ome.io", "InferenceService")
    informer.add_handler(lambda t, obj, old: owner_handler(t, obj, old, Queue()) if t == "DELETED" else None)
    running(informer)
    await informer.wait_for_sync(2)
    await until(lambda: fake.open_watches == 1)
    fake.remove(CM, "default/watch-deleted")  # seen by the watch: the final state is known
    await until(lambda: len(seen) == 1)
    fake.watch_hang = True
    fake.expire_watches()
    fake.watch_hang = False
    fake.remove(CM, "default/child")  # missed while the watch was down: only the relist notices
    await until(lambda: len(seen) == 2)
    assert not isinstance(seen[0][1], DeletedFinalStateUnknown)
    assert isinstance(seen[1][1], DeletedFinalStateUnknown)
    assert queued == [Request("default", "llm")]


async def test_bookmarks_advance_the_resource_version(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    informer = Informer(client, CM, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    fake.add(resources.SECRETS, {"metadata": {"name": "s", "namespace": "default"}})  # moves the RV elsewhere
    fake.send_bookmark()
    await until(lambda: informer.last_sync_resource_version == str(fake.rv))


async def test_half_open_watch_is_reopened_from_the_last_rv(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.add(CM, cm("a"))
    informer = Informer(client, CM, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    await until(lambda: fake.open_watches == 1)
    last_rv = informer.last_sync_resource_version
    restarts = sample("ome_informer_watch_restarts_total", "configmaps")
    fake.hang_watches()  # the open watch goes silent without closing
    fake.watch_hang = False
    fake.add(CM, cm("b"))  # lost on the dead stream, replayed from history on the new one
    await until(lambda: "b" in names(informer))
    rewatch = watch_requests(fake)[-1]
    assert rewatch["resourceVersion"] == last_rv and "sendInitialEvents" not in rewatch
    assert sample("ome_informer_watch_restarts_total", "configmaps") == restarts + 1


async def test_very_short_watches_count_as_failures_and_relist(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.reject_watch_list = True
    fake.watch_close_immediately = True
    informer = Informer(client, CM, settings=FAST)
    running(informer)
    await until(lambda: len(list_requests(fake)) >= 3)
    # Each closed-at-once watch sent the reflector back to LIST instead of re-watching in a tight loop.
    plain_watches = [q for q in watch_requests(fake) if "sendInitialEvents" not in q]
    assert len(plain_watches) <= len(list_requests(fake))


async def test_default_transform_strips_managed_fields(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    obj = cm("a")
    obj["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:data": {}}}]
    fake.add(CM, obj)
    informer = Informer(client, CM, settings=FAST, transform=lambda o: {**o, "seen": True})
    running(informer)
    await informer.wait_for_sync(2)
    stored = informer.store.get("default/a")
    assert stored is not None and stored["seen"] is True
    assert "managedFields" not in stored["metadata"]


async def test_metadata_only_informer(fake: FakeApiServer, client: Client, running: Any) -> None:
    fake.add(CM, {**cm("a"), "data": {"big": "x" * 100}})
    informer = Informer(client, CM, metadata_only=True, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    stored = informer.store.get("default/a")
    assert stored is not None and stored["kind"] == "PartialObjectMetadata" and "data" not in stored
    assert fake.requests[-1].headers["Accept"] == META_ACCEPT


async def test_selectors_and_namespace_scope_the_informer(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.add(CM, cm("a", "n1", app="x"))
    fake.add(CM, cm("b", "n1"))
    fake.add(CM, cm("c", "n2", app="x"))
    informer = Informer(client, CM, namespace="n1", label_selector={"app": "x"}, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    assert names(informer) == ["a"]
    assert fake.requests[0].path == "/api/v1/namespaces/n1/configmaps"
    assert fake.requests[0].query["labelSelector"] == "app=x"


async def test_a_failing_handler_does_not_stop_the_others(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    informer = Informer(client, CM, settings=FAST)

    def broken(event_type: str, obj: Obj, old: Obj | None) -> None:
        raise RuntimeError("bug")

    informer.add_handler(broken)
    recorder = running(informer)
    await informer.wait_for_sync(2)
    fake.add(CM, cm("a"))
    await until(lambda: recorder.events == [("ADDED", "a", None)])


async def test_a_late_handler_gets_the_cached_objects_replayed(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    fake.add(CM, cm("a"))
    informer = Informer(client, CM, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    late: list[tuple[str, str]] = []
    informer.add_handler(lambda t, obj, old: late.append((t, obj["metadata"]["name"])))
    assert late == [("ADDED", "a")]


async def test_relist_is_counted_and_the_cached_objects_gauge_follows_the_store(
    fake: FakeApiServer, client: Client, running: Any
) -> None:
    widgets = Resource("metrics.test", "v1", "Widget", "widgets", True)
    fake.add(widgets, cm("a"))
    informer = Informer(client, widgets, settings=FAST)
    running(informer)
    await informer.wait_for_sync(2)
    assert sample("ome_informer_cached_objects", "widgets.metrics.test") == 1
    fake.add(widgets, cm("b"))
    await until(lambda: sample("ome_informer_cached_objects", "widgets.metrics.test") == 2)
    assert sample("ome_informer_relists_total", "widgets.metrics.test") == 0
    await until(lambda: fake.open_watches == 1)
    fake.expire_watches()
    await until(lambda: sample("ome_informer_relists_total", "widgets.metrics.test") == 1)
    assert sample("ome_informer_watch_expired_total", "widgets.metrics.test") == 1


def test_backoff_doubles_caps_jitters_and_resets() -> None:
    now = [0.0]
    rng = random.Random(1)
    backoff = Backoff(ReflectorSettings(), monotonic=lambda: now[0], rng=rng)
    delays = []
    for _ in range(8):
        delays.append(backoff.next())
        now[0] += 1
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    assert all(base <= d <= 2 * base for d, base in zip(delays, bases, strict=True))
    now[0] += 121  # two minutes without a failure
    assert 0.8 <= backoff.next() <= 1.6


def sample(name: str, resource: str) -> float:
    return REGISTRY.get_sample_value(name, {"resource": resource}) or 0.0
