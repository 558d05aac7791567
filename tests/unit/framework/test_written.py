"""WrittenVersions: a cached object older than this process's own last write of it is `behind`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api import resources
from ome.framework.client import Client
from ome.framework.resources import Resource
from ome.framework.written import MAX_ENTRIES, WrittenVersions
from tests.unit.framework.fake_apiserver import FakeApiServer

Obj = dict[str, Any]
IR = resources.INFERENCE_REPLICAS


def obj(uid: str, rv: str) -> Obj:
    return {"metadata": {"uid": uid, "resourceVersion": rv}}


def tracking(*tracked: Resource, max_entries: int = MAX_ENTRIES) -> WrittenVersions:
    written = WrittenVersions(max_entries)
    for res in tracked:
        written.track(res)
    return written


def test_a_cache_older_than_our_write_is_behind_until_it_shows_the_write() -> None:
    written = tracking(IR)
    assert not written.behind(obj("a", "5"))  # never written by us
    written.record(IR, obj("a", "7"))
    written.record(IR, obj("a", "6"))  # an earlier write answered last: the newest one counts
    assert written.behind(obj("a", "5")) and written.behind(obj("a", "6"))
    assert not written.behind(obj("b", "1"))  # another object
    assert not written.behind(obj("a", "7"))  # the watch brought it
    assert not written.behind(obj("a", "5")), "forgotten once the cache caught up"


def test_opaque_versions_never_hold_back_and_the_memory_is_bounded() -> None:
    written = tracking(IR, max_entries=2)
    written.record(IR, obj("a", "x1"))
    assert not written.behind(obj("a", "1"))
    written.record(IR, obj("b", "9"))
    assert not written.behind(obj("b", "opaque"))
    for uid in ("c", "d", "e"):
        written.record(IR, obj(uid, "9"))
    assert [written.behind(obj(uid, "1")) for uid in ("c", "d", "e")] == [False, True, True]


def test_only_the_tracked_kinds_are_kept() -> None:
    """A kind no reconciler asks about is never kept: under churn the client writes pods, Services and
    events by the thousand, and their entries would stay until MAX_ENTRIES pushed them out."""
    written = tracking(IR)
    written.record(resources.PODS, obj("p", "9"))
    written.record(resources.SERVICES, obj("s", "9"))
    assert written.kept() == 0
    assert not written.behind(obj("p", "1"))
    written.record(IR, obj("r", "9"))
    assert written.kept() == 1 and written.behind(obj("r", "1"))


def test_a_write_that_lets_the_object_go_forgets_it() -> None:
    """Removing the last finalizer of an object being deleted: no cache copy will ever show that
    write, so its entry would stay until pushed out."""
    written = tracking(IR)
    written.record(IR, obj("r", "9"))
    deleting = obj("r", "10")
    deleting["metadata"] |= {"deletionTimestamp": "2026-12-04T00:00:00Z", "finalizers": ["ome.io/x"]}
    written.record(IR, deleting)
    assert written.kept() == 1, "still held by a finalizer: the watch will show it"
    gone = obj("r", "11")
    gone["metadata"] |= {"deletionTimestamp": "2026-12-04T00:00:00Z", "finalizers": []}
    written.record(IR, gone)
    assert written.kept() == 0


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    server = FakeApiServer()
    await server.start()
    try:
        async with Client.from_configuration(Configuration(host=server.url)) as c:
            yield c
    finally:
        await server.stop()


async def test_the_client_records_its_writes_but_not_dry_runs(client: Client) -> None:
    client.written.track(resources.CONFIGMAPS)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    await client.create(resources.CONFIGMAPS, body, dry_run=True)
    created = await client.create(resources.CONFIGMAPS, body)
    assert not client.written.behind(created)
    stale = {**created, "metadata": dict(created["metadata"])}
    patched = await client.patch(resources.CONFIGMAPS, "c", {"data": {"a": "1"}}, "default")
    assert client.written.behind(stale)  # the cache still holds the created version
    updated = await client.update(resources.CONFIGMAPS, {**patched, "data": {"a": "2"}})
    assert client.written.behind(patched)
    assert not client.written.behind(updated)
