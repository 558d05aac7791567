"""WrittenVersions: a cached object older than this process's own last write of it is `behind`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api import resources
from ome.framework.client import Client
from ome.framework.written import WrittenVersions
from tests.unit.framework.fake_apiserver import FakeApiServer

Obj = dict[str, Any]


def obj(uid: str, rv: str) -> Obj:
    return {"metadata": {"uid": uid, "resourceVersion": rv}}


def test_a_cache_older_than_our_write_is_behind_until_it_shows_the_write() -> None:
    written = WrittenVersions()
    assert not written.behind(obj("a", "5"))  # never written by us
    written.record(obj("a", "7"))
    written.record(obj("a", "6"))  # an earlier write answered last: the newest one counts
    assert written.behind(obj("a", "5")) and written.behind(obj("a", "6"))
    assert not written.behind(obj("b", "1"))  # another object
    assert not written.behind(obj("a", "7"))  # the watch brought it
    assert not written.behind(obj("a", "5")), "forgotten once the cache caught up"


def test_opaque_versions_never_hold_back_and_the_memory_is_bounded() -> None:
    written = WrittenVersions(max_entries=2)
    written.record(obj("a", "x1"))
    assert not written.behind(obj("a", "1"))
    written.record(obj("b", "9"))
    assert not written.behind(obj("b", "opaque"))
    for uid in ("c", "d", "e"):
        written.record(obj(uid, "9"))
    assert [written.behind(obj(uid, "1")) for uid in ("c", "d", "e")] == [False, True, True]


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
