"""Out-of-band edits of children are repaired; status and defaults others write are not; and one
reconcile renders and reports with one config."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

import pytest

from ome.api import resources as r
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import converge, status
from ome.framework.reconcile import Request
from ome.resolution import workloads as workloads_module
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.controllers.inferenceservice.test_reconciler import resolvers  # noqa: F401 - fixture
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")


def engine(world: FakeWorld) -> Obj:
    dep = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert dep is not None
    return dep


def container(dep: Obj) -> Obj:
    found: Obj = dep["spec"]["template"]["spec"]["containers"][0]
    return found


async def settled() -> tuple[FakeWorld, Any]:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = make_reconciler(world, FakeRecorder())
    await reconciler.reconcile(REQ)
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []
    return world, reconciler


async def test_an_edited_engine_image_is_put_back_by_the_next_reconcile() -> None:
    world, reconciler = await settled()
    image = container(engine(world))["image"]
    container(engine(world))["image"] = "someone/else:latest"  # kubectl edit: the hash annotation stays
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply", "Deployment", "llama-engine")]
    assert container(engine(world))["image"] == image
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


@pytest.mark.parametrize(
    ("kind", "name", "edit"),
    [
        (r.SERVICES, "llama-engine", lambda o: o["spec"].update(selector={"app": "other"})),
        (r.SERVICES, "llama", lambda o: o["metadata"]["labels"].clear()),
        (r.DEPLOYMENTS, "llama-engine", lambda o: o["spec"]["template"]["spec"].update(containers=[])),
    ],
)
async def test_every_child_is_repaired(kind: r.Resource, name: str, edit: Any) -> None:
    world, reconciler = await settled()
    child = world.get_or_none(kind, name, "demo")
    assert child is not None
    edit(child)
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply", kind.kind, name)]


async def test_status_and_defaults_from_kube_controller_manager_make_no_write() -> None:
    world, reconciler = await settled()
    for _ in range(3):  # KCM keeps updating status while the reconciles go on
        dep = engine(world)
        dep["status"] = {"replicas": 1, "updatedReplicas": 1, "observedGeneration": 2}
        dep["spec"].update(revisionHistoryLimit=10, progressDeadlineSeconds=600)
        dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "2"
        container(dep).update(imagePullPolicy="IfNotPresent", terminationMessagePolicy="File")
        await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_a_field_the_apiserver_does_not_keep_is_not_reapplied_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(converge, "TOLERATED", converge.Tolerated())  # what it learns stays in this test
    world, reconciler = await settled()

    class Mutating:
        """An apply answered by a mutating webhook that pins images by digest."""

        def __init__(self) -> None:
            self.applies = 0

        async def apply(self, res: r.Resource, obj: Obj, **kwargs: Any) -> Obj:
            self.applies += 1
            stored = await world.apply(res, obj, **kwargs)
            if obj["kind"] == "Deployment":
                container(stored)["image"] += "@sha256:0"
            return stored

        async def delete(self, *args: Any, **kwargs: Any) -> None:
            await world.delete(*args, **kwargs)

    writer = Mutating()
    reconciler._writer = writer  # noqa: SLF001
    container(engine(world))["image"] = "edited:1"
    for _ in range(3):
        await reconciler.reconcile(REQ)
    assert writer.applies == 1


async def test_one_reconcile_renders_and_reports_with_one_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ConfigMap edit between two concurrent reconciles never splits one of them between configs."""
    first, second = InferenceServiceConfig(), InferenceServiceConfig()
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc("a"))
    world.put(r.INFERENCE_SERVICES, builders.isvc("b"))
    used: dict[str, list[int]] = {"a": [], "b": []}

    def spy(fn: Any, position: int) -> Any:
        def wrapper(isvc: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
            config = args[position]
            used[isvc["metadata"]["name"]].append(1 if config is first else 2)
            return fn(isvc, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(workloads_module, "render_component", spy(workloads_module.render_component, 1))
    monkeypatch.setattr(status, "compute", spy(status.compute, 1))

    class Source:
        def __init__(self) -> None:
            self.configs = [first, second]

        async def current(self) -> InferenceServiceConfig:
            return self.configs.pop(0) if len(self.configs) > 1 else self.configs[0]

    gate = asyncio.Event()

    class HeldWriter:
        async def apply(self, res: r.Resource, obj: Obj, **kwargs: Any) -> Obj:
            if obj["metadata"]["name"].startswith("a") and not gate.is_set():
                await gate.wait()  # a's first write is slow: b's reconcile runs meanwhile
            return await world.apply(res, obj, **kwargs)

        async def delete(self, *args: Any, **kwargs: Any) -> None:
            await world.delete(*args, **kwargs)

    reconciler = make_reconciler(world, FakeRecorder(), writer=HeldWriter(), config_source=Source())
    a = asyncio.create_task(reconciler.reconcile(Request("demo", "a")))
    await asyncio.sleep(0)
    await reconciler.reconcile(Request("demo", "b"))  # reads the edited config
    gate.set()
    await a
    assert used["a"] and set(used["a"]) == {1}
    assert used["b"] and set(used["b"]) == {2}


def test_converge_reports_why() -> None:
    desired = converge.stamp({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                              "spec": {"selector": {"app": "x"}}})
    assert converge.reasons(desired, None) == ["created"]
    cached = {**desired, "spec": {"selector": {"app": "y"}, "clusterIP": "10.0.0.1"}}
    assert converge.reasons(desired, cached) == ["spec.selector.app"]


def _ready(isvc: Obj | None) -> bool:
    conds = ((isvc or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def _available(world: FakeWorld, value: str) -> None:
    engine(world)["status"] = {"replicas": 1, "availableReplicas": 1 if value == "True" else 0,
                               "conditions": [{"type": "Available", "status": value}]}


async def test_a_status_change_back_while_the_cache_lags_our_write_is_still_written() -> None:
    """Found by the fault suite: the Deployment was briefly unavailable, the service's status said so,
    and the reconcile after the Deployment recovered compared with a cache that had not shown that write
    (the service's own status events start no reconcile): Ready stayed False for good."""
    world, reconciler = await settled()
    _available(world, "True")
    await reconciler.reconcile(REQ)
    assert _ready(world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo"))
    world.unshown.add(r.INFERENCE_SERVICES.name)  # the cache keeps showing the Ready service
    _available(world, "False")
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    assert not _ready(world.held(r.INFERENCE_SERVICES, "llama", "demo"))
    _available(world, "True")
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]


async def test_a_cache_that_shows_an_earlier_write_of_ours_is_still_behind_the_last_one() -> None:
    """Found by the fault suite (node deletion, 20 services): three status writes in a row while the
    cache lagged (unavailable, available, unavailable); the cache then showed the second write, and the
    reconcile after the Deployment came back compared with it (Ready, no change) instead of the third
    (not Ready), which the cache showed next: Ready stayed False for good."""
    world, reconciler = await settled()
    _available(world, "True")
    await reconciler.reconcile(REQ)
    assert _ready(world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo"))
    world.unshown.add(r.INFERENCE_SERVICES.name)  # the watch shows none of the next writes yet
    seen = []
    for value in ("False", "True", "False"):
        _available(world, value)
        await reconciler.reconcile(REQ)
        seen.append(copy.deepcopy(world.held(r.INFERENCE_SERVICES, "llama", "demo")))
    assert [_ready(s) for s in seen] == [False, True, False]
    world.put(r.INFERENCE_SERVICES, copy.deepcopy(seen[1]))  # it shows the second write (Ready) only
    _available(world, "True")
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    world.deliver()
    assert _ready(world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo"))


async def not_ready_written_unshown() -> tuple[FakeWorld, Any]:
    """A Ready service whose Deployment went unavailable: the not-Ready status is written, and the cache
    does not show it yet."""
    world, reconciler = await settled()
    _available(world, "True")
    await reconciler.reconcile(REQ)
    world.unshown.add(r.INFERENCE_SERVICES.name)
    _available(world, "False")
    await reconciler.reconcile(REQ)
    return world, reconciler


async def test_our_status_write_is_held_only_until_the_cache_shows_it() -> None:
    """The written status is the baseline only while the cache lags it; the service's informer event
    that shows it (or its deletion) drops it, so an idle service holds nothing (4.9 MiB at N=1000)."""
    world, reconciler = await not_ready_written_unshown()
    assert reconciler.status_writes_held == 1
    stale = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert stale is not None
    reconciler.forget_shown_status("MODIFIED", stale, None)  # another event, still before our write
    assert reconciler.status_writes_held == 1
    world.deliver()
    shown = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert shown is not None
    reconciler.forget_shown_status("MODIFIED", shown, stale)
    assert reconciler.status_writes_held == 0
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_a_status_write_the_cache_already_shows_is_not_held() -> None:
    """The watch event of the write can come before the apply's answer: nothing is left to drop then."""
    world, reconciler = await settled()
    _available(world, "True")
    await reconciler.reconcile(REQ)
    _available(world, "False")
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    assert reconciler.status_writes_held == 0


async def test_a_deleted_service_drops_its_held_status_write() -> None:
    world, reconciler = await not_ready_written_unshown()
    assert reconciler.status_writes_held == 1
    last = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert last is not None
    reconciler.forget_shown_status("DELETED", last, None)
    assert reconciler.status_writes_held == 0


async def test_a_pass_that_read_the_service_before_the_event_that_dropped_our_write_still_writes() -> None:
    """Found by the canary e2e: the informer's event showed our status write (not Ready) and dropped it
    while a pass that had read the older, Ready copy was running; that pass computed Ready, compared with
    what it had read, and skipped the write: not Ready stayed."""
    world, reconciler = await not_ready_written_unshown()
    ready = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")  # the cache still shows Ready
    assert ready is not None and _ready(ready)
    world.deliver()
    shown = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert shown is not None and not _ready(shown)
    reconciler.forget_shown_status("MODIFIED", shown, None)
    assert reconciler.status_writes_held == 0
    world.read_once(r.INFERENCE_SERVICES, ready)  # the next pass read the cache before that event
    _available(world, "True")
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    assert _ready(world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo"))
