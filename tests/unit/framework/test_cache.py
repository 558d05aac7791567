"""cache.SharedCache: shared informers, synchronous reads, loud failures for unwatched kinds."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.framework import errors, resources
from ome.framework.cache import (
    NoInformerError,
    NotSyncedError,
    PartialListError,
    SharedCache,
    deepcopy_obj,
    implies,
    requirements,
)
from ome.framework.client import Client
from ome.framework.reflector import ReflectorSettings
from ome.framework.store import OWNER_INDEX
from tests.unit.framework.fake_apiserver import FakeApiServer

Obj = dict[str, Any]
PODS = resources.PODS


def pod(name: str, ns: str = "a", owner: str | None = None, **labels: str) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "labels": labels}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    await server.start()
    for obj in (
        pod("p1", "a", owner="u1", app="x"),
        pod("p2", "a", app="y"),
        pod("p3", "b", owner="u1", app="x"),
    ):
        server.add(PODS, obj)
    server.add(resources.NODES, {"metadata": {"name": "n1"}})
    yield server
    await server.stop()


@pytest.fixture
async def cache(fake: FakeApiServer) -> AsyncIterator[SharedCache]:
    async with Client.from_configuration(Configuration(host=fake.url)) as client:
        shared = SharedCache(client, settings=ReflectorSettings(initial_backoff=0.01))
        yield shared
        await shared.stop()
    gc.unfreeze()


def names(objs: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


async def test_same_key_returns_the_same_informer(cache: SharedCache) -> None:
    first = cache.informer_for(PODS, label_selector={"app": "x"})
    assert cache.informer_for(PODS, label_selector="app=x") is first
    assert cache.informer_for(PODS) is not first
    assert cache.informer_for(PODS, metadata_only=True) is not cache.informer_for(PODS)
    assert len(cache.informers) == 3


async def test_same_key_with_another_transform_is_refused(cache: SharedCache) -> None:
    cache.informer_for(PODS)
    with pytest.raises(ValueError, match="another transform"):
        cache.informer_for(PODS, transform=lambda o: o)


async def test_reads_without_an_informer_fail_loudly(cache: SharedCache) -> None:
    with pytest.raises(NoInformerError, match="no informer for pods"):
        cache.get(PODS, "p1", "a")
    cache.informer_for(PODS, namespace="a")
    with pytest.raises(NoInformerError, match="namespace 'b'"):
        cache.list(PODS, "b")


async def test_reads_before_sync_fail(cache: SharedCache) -> None:
    cache.informer_for(PODS)
    with pytest.raises(NotSyncedError):
        cache.list(PODS)


async def test_get_and_list(cache: SharedCache) -> None:
    cache.informer_for(PODS)
    cache.informer_for(resources.NODES)
    await cache.start()
    await cache.wait_for_sync(2)
    assert cache.get(PODS, "p1", "a")["metadata"]["labels"] == {"app": "x"}
    assert cache.get(resources.NODES, "n1")["metadata"]["name"] == "n1"
    with pytest.raises(errors.NotFound):
        cache.get(PODS, "p1", "b")
    assert cache.get_or_none(PODS, "zz", "a") is None
    assert names(cache.list(PODS)) == ["p1", "p2", "p3"]
    assert names(cache.list(PODS, "a")) == ["p1", "p2"]
    assert names(cache.list(PODS, label_selector={"app": "x"})) == ["p1", "p3"]
    assert names(cache.list(PODS, "b", index=(OWNER_INDEX, "u1"))) == ["p3"]
    assert names(cache.list(PODS, index=(OWNER_INDEX, "u1"))) == ["p1", "p3"]


async def test_an_informer_added_after_start_runs(cache: SharedCache, fake: FakeApiServer) -> None:
    await cache.start()
    informer = cache.informer_for(PODS, namespace="b")
    await informer.wait_for_sync(2)
    assert names(cache.list(PODS, "b")) == ["p3"]


async def test_full_informers_are_preferred_over_metadata_only(cache: SharedCache) -> None:
    cache.informer_for(PODS, metadata_only=True)
    await cache.start()
    await cache.wait_for_sync(2)
    assert "spec" not in cache.get(PODS, "p1", "a")
    cache.informer_for(PODS)
    await cache.wait_for_sync(2)
    assert "spec" in cache.get(PODS, "p1", "a")


async def test_sync_and_relist_leave_the_process_gc_alone(cache: SharedCache, fake: FakeApiServer) -> None:
    """The GC policy is the manager's, set once; library code never collects, freezes or retunes."""
    gc.unfreeze()
    thresholds = gc.get_threshold()
    informer = cache.informer_for(PODS)
    await cache.start()
    await cache.wait_for_sync(2)
    informer.replace([pod("fresh", "a")], "999")  # what a relist delivers
    assert cache.has_synced and cache.get(PODS, "fresh", "a")
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds


async def test_wait_for_sync_times_out(cache: SharedCache, fake: FakeApiServer) -> None:
    fake.fail("GET", "/pods", 500, times=1000)
    cache.informer_for(PODS)
    await cache.start()
    with pytest.raises(TimeoutError):
        await cache.wait_for_sync(0.2)


def test_deepcopy_obj_is_independent() -> None:
    original = pod("p", app="x")
    copied = deepcopy_obj(original)
    copied["metadata"]["labels"]["app"] = "changed"
    assert original["metadata"]["labels"] == {"app": "x"}
    assert copied == {**original, "metadata": {**original["metadata"], "labels": {"app": "changed"}}}


async def test_a_list_that_scoped_informers_cannot_answer_whole_fails_loudly(cache: SharedCache) -> None:
    cache.informer_for(PODS, namespace="a")
    cache.informer_for(PODS, label_selector={"app": "x"})
    await cache.start()
    await cache.wait_for_sync(2)
    with pytest.raises(PartialListError, match="no informer holds every pods matching no selector"):
        cache.list(PODS)  # the namespace-a informer alone would answer p1, p2: p3 silently missing
    with pytest.raises(PartialListError, match="app=y"):
        cache.list(PODS, label_selector={"app": "y"})  # app=x informer cannot hold app=y pods
    with pytest.raises(PartialListError):
        cache.list(PODS, "b")  # neither holds every pod of b
    assert names(cache.list(PODS, "a")) == ["p1", "p2"]  # the namespace informer covers its namespace
    listed = cache.list(PODS, label_selector={"app": "x"})
    assert names(listed) == ["p1", "p3"] and listed.scope == ("app=x",)
    assert names(cache.list(PODS, "b", label_selector="app=x")) == ["p3"]


async def test_existence_selectors_cover_reads_that_name_the_key(cache: SharedCache, fake: FakeApiServer) -> None:
    fake.add(PODS, pod("p4", "a"))  # no app label
    cache.informer_for(PODS, label_selector="app")
    await cache.start()
    await cache.wait_for_sync(2)
    assert names(cache.list(PODS, label_selector="app")) == ["p1", "p2", "p3"]
    assert names(cache.list(PODS, "a", label_selector={"app": "y"})) == ["p2"]
    with pytest.raises(PartialListError):
        cache.list(PODS, "a")
    with pytest.raises(ValueError, match="only k=v and k requirements"):
        cache.list(PODS, label_selector="app!=x")


async def test_index_reads_say_which_informers_answered(cache: SharedCache) -> None:
    cache.informer_for(PODS, label_selector={"app": "x"})
    cache.informer_for(PODS, namespace="a", label_selector={"app": "y"})
    await cache.start()
    await cache.wait_for_sync(2)
    listed = cache.list(PODS, "a", index=(OWNER_INDEX, "u1"))
    assert names(listed) == ["p1"]
    assert listed.scope == ("app=x", "namespace=a,app=y")


async def test_a_field_selected_informer_answers_gets_but_no_list(cache: SharedCache) -> None:
    informer = cache.informer_for(resources.NODES, field_selector="metadata.name=n1")
    assert cache.informer_for(resources.NODES) is not informer
    await cache.start()
    await cache.wait_for_sync(2)
    assert cache.get(resources.NODES, "n1")["metadata"]["name"] == "n1"
    assert names(cache.list(resources.NODES)) == ["n1"]  # answered by the unselected informer


def test_selector_requirements_and_implication() -> None:
    assert requirements("a=1,b==2, c") == [("a", "1"), ("b", "2"), ("c", None)]
    assert requirements({"b": "2", "a": "1"}) == [("a", "1"), ("b", "2")]
    assert requirements("a in (1,2)") is None and requirements("!a") is None and requirements("a!=1") is None
    assert implies([("a", "1"), ("b", "2")], [("a", None)])
    assert implies([("a", "1")], [("a", "1")]) and not implies([("a", "1")], [("a", "2")])
    assert not implies([], [("a", None)]) and implies([], []) and not implies([("a", "1")], None)


async def test_seen_version_is_the_lowest_version_the_informers_that_may_hold_the_object_have_reached(
    cache: SharedCache, fake: FakeApiServer
) -> None:
    whole = cache.informer_for(PODS)
    scoped = cache.informer_for(PODS, label_selector={"app": "x"})
    await cache.start()
    await cache.wait_for_sync(2)
    assert cache.seen_version(PODS, "a") == int(whole.last_sync_resource_version) == fake.rv
    # One informer behind the other: the lower decides (a write it selects may not be in it yet).
    scoped._reflector._rv = str(fake.rv - 1)
    assert cache.seen_version(PODS, "a") == fake.rv - 1
    scoped._reflector._rv = "not-etcd"
    assert cache.seen_version(PODS, "a") is None, "a version that is not an integer cannot tell"


async def test_seen_version_counts_only_the_informers_whose_selector_may_hold_the_labels(
    cache: SharedCache, fake: FakeApiServer
) -> None:
    cache.informer_for(PODS, label_selector="app=x")
    quiet = cache.informer_for(PODS, label_selector="app,!managed")
    await cache.start()
    await cache.wait_for_sync(2)
    quiet._reflector._rv = str(fake.rv - 5)  # no event selected by it for a while
    assert cache.seen_version(PODS, "a", {"app": "x"}) == fake.rv - 5, "app=x is selected by both"
    assert cache.seen_version(PODS, "a", {"app": "x", "managed": "yes"}) == fake.rv, "not by the quiet one"
    assert cache.seen_version(PODS, "a", {"app": "y"}) == fake.rv - 5, "only by the quiet one"
    assert cache.seen_version(PODS, "a") == fake.rv - 5, "labels unknown: every informer of the kind"
