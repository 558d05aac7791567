"""bench/scale_phases.py: the time to Ready comes from one list and then a watch (listed again when the
watch ends with an error), and a component's CPU seconds count its children's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest

from ome.api import resources
from ome.framework import errors

Obj = dict[str, Any]


def _svc(name: str, version: str, ready: bool) -> Obj:
    return {"metadata": {"name": name, "resourceVersion": version}, "ready": ready}


class FakeClient:
    """Answers lists from `lists` and watches from `watches`, in order; a watch script entry that is an
    exception is raised after its events."""

    def __init__(self, lists: list[tuple[list[Obj], str]], watches: list[list[Any]]) -> None:
        self.lists, self.watches = lists, watches
        self.listed = 0
        self.watched_from: list[str] = []

    async def list(self, res: Any, namespace: str) -> tuple[list[Obj], str]:
        self.listed += 1
        return self.lists.pop(0)

    async def watch(self, res: Any, namespace: str, *, resource_version: str,
                    timeout_seconds: int) -> AsyncIterator[tuple[str, Obj]]:
        self.watched_from.append(resource_version)
        for event in self.watches.pop(0):
            if isinstance(event, Exception):
                raise event
            yield event


async def _follow(phases: ModuleType, client: FakeClient, want: int) -> dict[str, float]:
    seen: dict[str, float] = {}

    def on_object(obj: Obj, now: float) -> None:
        if obj["ready"]:
            seen.setdefault(obj["metadata"]["name"], now)

    await phases.follow(client, resources.INFERENCE_SERVICES, "ns", on_object, lambda: len(seen) >= want,
                        started=0.0, timeout=1e12, what="not Ready")
    return seen


async def test_objects_ready_in_the_list_or_on_the_watch_are_seen_and_the_watch_resumes(
    phases: ModuleType,
) -> None:
    client = FakeClient(
        lists=[([_svc("a", "5", True), _svc("b", "5", False)], "10")],
        watches=[
            [("BOOKMARK", {"metadata": {"resourceVersion": "12"}})],  # a clean end: resumed from 12
            [("MODIFIED", _svc("b", "13", False)), ("MODIFIED", _svc("b", "14", True))],
        ],
    )
    seen = await _follow(phases, client, 2)
    assert set(seen) == {"a", "b"}
    assert client.listed == 1
    assert client.watched_from == ["10", "12"]


async def test_a_watch_that_fails_is_followed_by_a_new_list(phases: ModuleType) -> None:
    client = FakeClient(
        lists=[([_svc("a", "5", False)], "10"), ([_svc("a", "30", True)], "30")],
        watches=[[("MODIFIED", _svc("a", "11", False)), errors.Gone(410, "Expired", "too old resource version")]],
    )
    seen = await _follow(phases, client, 1)
    assert set(seen) == {"a"}
    assert client.listed == 2  # the change made while no watch was open comes from the second list


async def test_a_check_that_raises_ends_the_wait(phases: ModuleType) -> None:
    client = FakeClient(lists=[([_svc("a", "5", False)], "10")], watches=[[]])

    def dead() -> None:
        raise SystemExit("manager exited (1)")

    with pytest.raises(SystemExit, match="manager exited"):
        await phases.follow(client, resources.INFERENCE_SERVICES, "ns", lambda o, t: None, lambda: False,
                            started=0.0, timeout=1e12, what="not Ready", check=dead)


def test_a_process_tree_counts_the_cpu_of_its_children(phases: ModuleType) -> None:
    # The child spends CPU, says so, and waits on its stdin: it is alive while it is measured.
    burn = "import sys\nn = 0\nfor i in range(3_000_000): n += i\nprint('done', flush=True)\nsys.stdin.read()"
    with subprocess.Popen([sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as child:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "done"
        own, tree = phases.cpu_seconds(os.getpid()), phases.tree_cpu_seconds(os.getpid())
        spent = phases.cpu_seconds(child.pid)
        child.stdin.close()
    assert spent > 0
    assert tree >= own + spent - 0.02  # the parent's own clock moved on between the two reads


def test_cpu_figures_are_per_component_with_the_machine_share(phases: ModuleType) -> None:
    spent = phases.cpu_delta({"etcd": 5.0, "kube-apiserver": 30.0}, {"etcd": 1.0, "kube-apiserver": 10.0})
    assert spent == {"etcd": 4.0, "kube-apiserver": 20.0}
    line = phases.format_cpu(spent, 12.0)
    assert line.startswith("etcd 4.0, kube-apiserver 20.0; total 24.0 CPU s over 12.0 s (2.00 of ")


def test_the_apiserver_figures_are_requests_by_verb_and_resource_and_watch_events_by_kind(
    phases: ModuleType,
) -> None:
    text = "\n".join([
        "# TYPE apiserver_request_total counter",
        'apiserver_request_total{code="201",component="apiserver",group="",resource="services",scope="resource",'
        'subresource="",verb="POST",version="v1"} 3',
        'apiserver_request_total{code="409",component="apiserver",group="",resource="services",scope="resource",'
        'subresource="",verb="POST",version="v1"} 1',
        'apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",'
        'subresource="status",verb="PATCH",version="v1"} 7',
        'apiserver_watch_events_total{group="",resource="pods",version="v1"} 12',
        'apiserver_watch_events_sizes_sum{group="",resource="pods",version="v1"} 2048',
        'apiserver_watch_events_sizes_bucket{group="",resource="pods",version="v1",le="1024"} 3',
    ])
    counts = phases.parse_apiserver_metrics(text)
    assert counts == {"POST services": 4, "PATCH pods/status": 7, "watch events pods": 12, "watch KiB pods": 2}
    line = phases.format_counts(counts)
    assert line.startswith("requests: PATCH pods/status 7, POST services 4\n")
    assert line.endswith("watch events sent: pods 12 (0.0 MiB)")
