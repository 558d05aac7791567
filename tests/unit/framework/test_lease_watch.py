"""lease_watch: every version of one Lease reaches the elector, across failures and the server's watch ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ome.framework import resources
from ome.framework.lease_watch import MAX_RETRY_AFTER, RETRY_AFTER, lease_watch

Obj = dict[str, Any]


def lease(holder: str, rv: str) -> Obj:
    return {"metadata": {"name": "ome", "namespace": "ome", "resourceVersion": rv},
            "spec": {"holderIdentity": holder}}


class ScriptedLeases:
    """Each list answers from `lists` in turn; each watch plays the next script of events, then ends (or raises)."""

    def __init__(self, lists: list[Any], watches: list[list[tuple[str, Obj]] | Exception]) -> None:
        self.lists = lists
        self.watches = watches
        self.calls: list[tuple[Any, ...]] = []

    async def list(self, res: Any, namespace: str | None = None, *,
                   field_selector: str | None = None) -> tuple[list[Obj], str]:
        self.calls.append(("list", res, namespace, field_selector))
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def watch(self, res: Any, namespace: str | None = None, *, resource_version: str,
                    timeout_seconds: int, field_selector: str | None = None) -> AsyncIterator[tuple[str, Obj]]:
        self.calls.append(("watch", res, namespace, field_selector, resource_version))
        script = self.watches.pop(0) if self.watches else None
        if script is None:
            await asyncio.Event().wait()  # the test is done: hang until cancelled
            return
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event


async def run_until(follow: Any, seen: list[Obj | None], count: int) -> None:
    task = asyncio.create_task(follow(seen.append))
    for _ in range(200):
        await asyncio.sleep(0)
        if len(seen) >= count:
            break
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_each_version_of_the_lease_is_observed_and_a_new_watch_starts_from_a_new_list() -> None:
    client = ScriptedLeases(
        lists=[([lease("a", "5")], "5"), ([lease("b", "9")], "9")],
        watches=[[("MODIFIED", lease("a", "6")), ("BOOKMARK", {"metadata": {"resourceVersion": "7"}}),
                  ("DELETED", lease("a", "8"))]],
    )
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    seen: list[Obj | None] = []
    await run_until(lease_watch(client, "ome", "ome", sleep=sleep), seen, 4)
    assert seen == [lease("a", "5"), lease("a", "6"), None, lease("b", "9")]  # the bookmark is not a version
    lists = [c for c in client.calls if c[0] == "list"]
    watches = [c for c in client.calls if c[0] == "watch"]
    assert lists[0] == ("list", resources.LEASES, "ome", "metadata.name=ome")
    assert [w[4] for w in watches] == ["5", "9"]  # each watch from its list's version
    assert sleeps == [RETRY_AFTER]


async def test_a_failed_list_or_watch_is_retried_after_a_pause_and_nothing_is_raised() -> None:
    client = ScriptedLeases(
        lists=[ConnectionError("refused"), ([], "3"), ([lease("a", "4")], "4")],
        watches=[RuntimeError("stream cut")],
    )
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    seen: list[Obj | None] = []
    await run_until(lease_watch(client, "ome", "ome", sleep=sleep), seen, 2)
    assert seen == [None, lease("a", "4")]  # no Lease yet, then the one the next list found
    assert sleeps == [RETRY_AFTER, RETRY_AFTER]


@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED"])
async def test_added_and_modified_pass_the_object(kind: str) -> None:
    client = ScriptedLeases(lists=[([], "1")], watches=[[(kind, lease("a", "2"))]])
    seen: list[Obj | None] = []

    async def sleep(seconds: float) -> None:
        await asyncio.Event().wait()

    await run_until(lease_watch(client, "ome", "ome", sleep=sleep), seen, 2)
    assert seen == [None, lease("a", "2")]


async def test_failures_in_a_row_double_the_pause_up_to_a_cap_and_a_good_list_resets_it() -> None:
    client = ScriptedLeases(lists=[PermissionError("403")] * 8 + [([], "1"), PermissionError("403")],
                            watches=[RuntimeError("cut")])
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 10:
            await asyncio.Event().wait()  # the script is played: hang until cancelled

    seen: list[Obj | None] = []
    task = asyncio.create_task(lease_watch(client, "ome", "ome", sleep=sleep)(seen.append))
    for _ in range(200):
        await asyncio.sleep(0)
        if len(sleeps) == 10:
            break
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sleeps[:8] == [1, 2, 4, 8, 16, 32, MAX_RETRY_AFTER, MAX_RETRY_AFTER]
    assert sleeps[8:10] == [RETRY_AFTER, RETRY_AFTER * 2]  # reset by the list that worked
