"""The reflector's first sync: WatchList events reach the store as they arrive (no one bulk replace
holding the event loop at the bookmark) and the handlers once the sync is whole, while later relists
stay atomic; a first attempt that broke off is repaired by the sync that follows.

A scripted client stands in for the apiserver, so each test says exactly which events arrive when.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

from ome.framework import errors, resources
from ome.framework.client import Client
from ome.framework.informer import DeletedFinalStateUnknown, Informer
from ome.framework.reflector import INITIAL_EVENTS_END, ReflectorSettings

Obj = dict[str, Any]
FAST = ReflectorSettings(initial_backoff=0.001, max_backoff=0.002)
CM = resources.CONFIGMAPS


def cm(name: str, rv: int) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}}


def bookmark(rv: int) -> Obj:
    return {"metadata": {"resourceVersion": str(rv), "annotations": {INITIAL_EVENTS_END: "true"}}}


Step = tuple[str, Obj] | Exception


class ScriptedClient:
    """Answers each watch with the next script (events, or an exception to raise), then blocks."""

    def __init__(self, watches: list[list[Step]], lists: list[tuple[list[Obj], str]] | None = None) -> None:
        self.watches = watches
        self.lists = lists or []
        self.watch_calls: list[Obj] = []
        self.gate = asyncio.Event()
        """Set to let the script go on past a `("PAUSE", {})` step."""
        self.paused = asyncio.Event()

    async def watch(self, res: Any, namespace: Any = None, **kwargs: Any) -> AsyncIterator[tuple[str, Obj]]:
        self.watch_calls.append(kwargs)
        script = self.watches.pop(0) if self.watches else None
        if script is None:
            await asyncio.Event().wait()  # an open, quiet watch
            return
        for step in script:
            if isinstance(step, Exception):
                raise step
            if step[0] == "PAUSE":
                self.paused.set()
                await self.gate.wait()
                continue
            yield step

    async def list(self, res: Any, namespace: Any = None, **kwargs: Any) -> tuple[list[Obj], str]:
        items, rv = self.lists.pop(0)
        return [dict(i) for i in items], rv


def informer_over(client: ScriptedClient) -> tuple[Informer, list[tuple[str, str, bool]]]:
    informer = Informer(cast(Client, client), CM, settings=FAST)
    seen: list[tuple[str, str, bool]] = []
    informer.add_handler(lambda t, obj, old: seen.append(
        (t, obj["metadata"]["name"], isinstance(obj, DeletedFinalStateUnknown))
    ))
    return informer, seen


async def test_first_watch_list_stores_objects_before_the_bookmark_and_tells_handlers_at_it() -> None:
    client = ScriptedClient([[("ADDED", cm("a", 5)), ("ADDED", cm("b", 3)), ("ADDED", cm("gone", 4)),
                              ("DELETED", cm("gone", 6)), ("PAUSE", {}), ("BOOKMARK", bookmark(7))]])
    informer, seen = informer_over(client)
    informer.start()
    try:
        await asyncio.wait_for(client.paused.wait(), 2)
        # Mid-stream: stored already, but not synced, and no handler told (it could not read the cache).
        assert sorted(informer.store.keys()) == ["ns/a", "ns/b"]
        assert seen == []
        assert not informer.has_synced
        late: list[str] = []  # a handler registered mid-sync: no replay now, no repeat later
        informer.add_handler(lambda t, obj, old: late.append(f"{t} {obj['metadata']['name']}"))
        assert late == []
        client.gate.set()
        await informer.wait_for_sync(2)
        assert seen == [("ADDED", "a", False), ("ADDED", "b", False)]  # once each, "gone" never
        assert late == ["ADDED a", "ADDED b"]
        assert informer.last_sync_resource_version == "7"
    finally:
        await informer.stop()


async def test_a_relist_after_the_first_sync_stays_atomic() -> None:
    client = ScriptedClient([
        [("ADDED", cm("a", 5)), ("ADDED", cm("b", 6)), ("BOOKMARK", bookmark(7))],
        [errors.Gone(410, "Expired", "too old")],
        # The relist: b changed and a is gone; nothing may show before the bookmark.
        [("ADDED", cm("b", 9)), ("ADDED", cm("c", 8)), ("PAUSE", {}), ("BOOKMARK", bookmark(10))],
    ])
    informer, seen = informer_over(client)
    informer.start()
    try:
        await asyncio.wait_for(client.paused.wait(), 2)
        assert sorted(informer.store.keys()) == ["ns/a", "ns/b"]
        assert informer.store.get("ns/b")["metadata"]["resourceVersion"] == "6"  # type: ignore[index]
        assert seen == [("ADDED", "a", False), ("ADDED", "b", False)]
        client.gate.set()
        for _ in range(200):
            if informer.last_sync_resource_version == "10":
                break
            await asyncio.sleep(0.005)
        assert sorted(informer.store.keys()) == ["ns/b", "ns/c"]
        assert seen[2:] == [("ADDED", "c", False), ("MODIFIED", "b", False), ("DELETED", "a", True)]
        assert client.watch_calls[2]["resource_version"] == "7"  # relisted from the last RV
    finally:
        await informer.stop()


async def test_a_first_watch_list_that_broke_off_is_repaired_by_the_list_that_follows() -> None:
    # The stream ends before its bookmark after a and b; the fallback LIST no longer has b.
    client = ScriptedClient(
        [[("ADDED", cm("a", 5)), ("ADDED", cm("b", 6)), errors.TransportError(0, "Cut", "stream cut")]],
        lists=[([cm("a", 5), cm("c", 8)], "9")],
    )
    informer, seen = informer_over(client)
    informer.start()
    try:
        await informer.wait_for_sync(2)
        assert sorted(informer.store.keys()) == ["ns/a", "ns/c"]
        # b, stored by the broken attempt, is dropped by the LIST; handlers never heard of it.
        assert seen == [("ADDED", "a", False), ("ADDED", "c", False)]
        assert informer.last_sync_resource_version == "9"
    finally:
        await informer.stop()
