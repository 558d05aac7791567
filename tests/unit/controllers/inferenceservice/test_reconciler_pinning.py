"""Runtime pinning in the reconciler, with the real resolution against an in-memory world."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import reconciler as rec
from ome.controllers.inferenceservice import revision_gc, runtime_pinning
from ome.framework.reconcile import Request
from ome.resolution import runtime_revisions as rr
from tests.unit.controllers.inferenceservice.fakes import (
    FakeRecorder,
    FakeWorld,
    established,
    make_reconciler,
)
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")
CONFIG_NS = "ome-system"
RUNTIME = "vllm-llama"


@pytest.fixture
def world() -> FakeWorld:
    world = FakeWorld()
    model = builders.model()
    model["spec"]["modelFramework"] = {"name": "transformers"}
    world.put(r.CLUSTER_BASE_MODELS, model)
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime(RUNTIME))
    return world


@pytest.fixture
def recorder() -> FakeRecorder:
    return FakeRecorder()


def _reconciler(world: FakeWorld, recorder: FakeRecorder) -> rec.InferenceServiceReconciler:
    return make_reconciler(world, recorder, now=datetime(2026, 1, 1, tzinfo=UTC), config_namespace=CONFIG_NS)


def _pinned_isvc(**ref: Any) -> Obj:
    obj = established(builders.isvc(runtime=RUNTIME))
    obj["spec"]["runtime"].update({"autoSync": False, **ref})
    return obj


def _isvc(world: FakeWorld) -> Obj:
    obj = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert obj is not None
    return obj


def _status(world: FakeWorld) -> Obj:
    status: Obj = _isvc(world).get("status") or {}
    return status


def _cond(world: FakeWorld, type_: str) -> Obj | None:
    return next((c for c in _status(world).get("conditions") or [] if c["type"] == type_), None)


def _revisions(world: FakeWorld) -> dict[str, Obj]:
    return {
        name: obj for (kind, ns, name), obj in world.objects.items() if kind == "controllerrevisions.apps"
    }


def _args(world: FakeWorld) -> list[str]:
    dep = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert dep is not None
    args: list[str] = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def _change_runtime(world: FakeWorld, args: list[str]) -> None:
    runtime = builders.runtime(RUNTIME)
    runtime["spec"]["engineConfig"]["runner"]["args"] = args
    world.put(r.CLUSTER_SERVING_RUNTIMES, runtime)


def _annotate(world: FakeWorld, token: str) -> None:
    _isvc(world)["metadata"].setdefault("annotations", {})[rr.SYNC_ANNOTATION] = token


async def test_pin_creates_a_revision_and_records_it_then_noop_writes_nothing(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    live = builders.runtime(RUNTIME)["spec"]
    name = f"cr-{RUNTIME}-{rr.spec_hash(live)}"
    assert _status(world)["pinnedRevisionName"] == name
    revision = _revisions(world)[name]
    assert revision["metadata"]["namespace"] == CONFIG_NS
    assert revision["metadata"]["labels"][rr.RUNTIME_OF_LABEL] == RUNTIME
    assert revision["data"] == live and revision["revision"] == 1
    assert ("create", "ControllerRevision", name) in world.writes
    assert _args(world) == ["--model", "$(MODEL_PATH)"]
    assert _cond(world, rr.RUNTIME_DRIFTED) is None
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_runtime_change_drifts_and_leaves_the_workload(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    pinned = _status(world)["pinnedRevisionName"]
    deployment_before = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    ready_before = _cond(world, "Ready")
    _change_runtime(world, ["--mem-frac=0.85"])
    _isvc(world)["spec"]["engine"] = {"minReplicas": 3}  # a change to the service waits too
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is deployment_before
    drifted = _cond(world, rr.RUNTIME_DRIFTED)
    assert drifted is not None
    assert (drifted["status"], drifted["reason"]) == ("True", "RevisionMismatch")
    assert drifted["message"] == (
        f"pinned {pinned}, live spec differs; bump ome.io/runtime-sync annotation to advance"
    )
    assert _cond(world, "Ready") == ready_before  # RuntimeDrifted does not feed Ready
    assert _status(world)["pinnedRevisionName"] == pinned
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_sync_token_rolls_forward_once(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    first = _status(world)["pinnedRevisionName"]
    _change_runtime(world, ["--mem-frac=0.85"])
    await reconciler.reconcile(REQ)
    _annotate(world, "mem-frac-0-85")
    await reconciler.reconcile(REQ)
    second = _status(world)["pinnedRevisionName"]
    assert second != first and set(_revisions(world)) == {first, second}
    assert _revisions(world)[second]["revision"] == 2
    assert _status(world)["lastRuntimeSyncToken"] == "mem-frac-0-85"
    assert _cond(world, rr.RUNTIME_DRIFTED) is None
    assert _args(world) == ["--mem-frac=0.85"]
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []
    _change_runtime(world, ["--mem-frac=0.8"])  # the spent token does not roll forward again
    await reconciler.reconcile(REQ)
    drifted = _cond(world, rr.RUNTIME_DRIFTED)
    assert drifted is not None and drifted["reason"] == "RevisionMismatch"
    assert _args(world) == ["--mem-frac=0.85"]


async def test_revision_pin_rolls_back(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    first = _status(world)["pinnedRevisionName"]
    _change_runtime(world, ["--new"])
    _annotate(world, "t1")
    await reconciler.reconcile(REQ)
    assert _args(world) == ["--new"]
    _isvc(world)["spec"]["runtime"]["revision"] = first
    await reconciler.reconcile(REQ)
    assert _status(world)["pinnedRevisionName"] == first
    assert _args(world) == ["--model", "$(MODEL_PATH)"]
    assert _cond(world, rr.RUNTIME_DRIFTED) is None  # the live spec differs, but a revision pin never drifts


async def test_missing_revision_pin_pauses(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc(revision=f"cr-{RUNTIME}-0000aaaa"))
    await _reconciler(world, recorder).reconcile(REQ)
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None
    drifted = _cond(world, rr.RUNTIME_DRIFTED)
    assert drifted is not None and drifted["reason"] == "RevisionMissing"
    assert drifted["message"] == f"explicit pin cr-{RUNTIME}-0000aaaa not found in namespace {CONFIG_NS}"
    assert _revisions(world) == {}


async def test_deleted_runtime_keeps_serving_from_the_revision(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    pinned = _status(world)["pinnedRevisionName"]
    del world.objects[("clusterservingruntimes.ome.io", "", RUNTIME)]
    _isvc(world)["spec"]["engine"] = {"deploymentStrategy": {"type": "Recreate"}}  # not paused: it rolls out
    await reconciler.reconcile(REQ)
    drifted = _cond(world, rr.RUNTIME_DRIFTED)
    assert drifted is not None and drifted["reason"] == "SourceRuntimeMissing"
    assert drifted["message"].endswith(f"; serving pinned revision {pinned}")
    runtime_ready = _cond(world, "RuntimeReady")
    assert runtime_ready is not None and runtime_ready["status"] == "False"
    deployment = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert deployment is not None and deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert _args(world) == ["--model", "$(MODEL_PATH)"]
    assert recorder.events == []
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime(RUNTIME))  # recreated: the condition goes
    await reconciler.reconcile(REQ)
    assert _cond(world, rr.RUNTIME_DRIFTED) is None


async def test_first_pin_without_the_runtime_is_a_pin_error(world: FakeWorld, recorder: FakeRecorder) -> None:
    del world.objects[("clusterservingruntimes.ome.io", "", RUNTIME)]
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    with pytest.raises(runtime_pinning.PinError):
        await _reconciler(world, recorder).reconcile(REQ)
    assert [(kind, reason) for kind, reason, _ in recorder.events] == [("Warning", "RuntimePinError")]
    assert recorder.events[0][2].startswith(f"cannot pin runtime {RUNTIME}: runtime {RUNTIME} not found")
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None
    assert "pinnedRevisionName" not in _status(world)
    runtime_ready = _cond(world, "RuntimeReady")
    assert runtime_ready is not None and runtime_ready["status"] == "False"


async def test_stop_pinning_follows_live_and_keeps_the_last_values(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    pinned = _status(world)["pinnedRevisionName"]
    _change_runtime(world, ["--new"])
    await reconciler.reconcile(REQ)
    _isvc(world)["spec"]["runtime"]["autoSync"] = True
    await reconciler.reconcile(REQ)
    assert _args(world) == ["--new"]
    assert _status(world)["pinnedRevisionName"] == pinned
    drifted = _cond(world, rr.RUNTIME_DRIFTED)
    assert drifted is not None and drifted["reason"] == "RevisionMismatch"
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []
    _isvc(world)["spec"]["runtime"]["autoSync"] = False  # resumes from the revision, not from live
    await reconciler.reconcile(REQ)
    assert _status(world)["pinnedRevisionName"] == pinned
    assert _args(world) == ["--new"]  # drifted again: the workload stays as it is


async def test_services_pinned_to_the_same_spec_share_a_revision(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, _pinned_isvc())
    other = _pinned_isvc()
    other["metadata"]["name"] = "other"
    world.put(r.INFERENCE_SERVICES, other)
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    await reconciler.reconcile(Request("demo", "other"))
    assert len(_revisions(world)) == 1
    pinned = world.get_or_none(r.INFERENCE_SERVICES, "other", "demo")
    assert (
        pinned is not None and pinned["status"]["pinnedRevisionName"] == _status(world)["pinnedRevisionName"]
    )
    assert [w for w in world.writes if w[0] == "create"] == [
        ("create", "ControllerRevision", _status(world)["pinnedRevisionName"])
    ]


async def test_a_revision_created_but_not_yet_cached_counts() -> None:
    cache, server = FakeWorld(), FakeWorld()
    revisions = runtime_pinning.Revisions(cache, CONFIG_NS)
    body = rr.revision_body(
        kind=rr.CLUSTER_SERVING_RUNTIME,
        namespace="",
        runtime=RUNTIME,
        spec={"a": 1},
        config_namespace=CONFIG_NS,
        number=1,
    )
    await revisions.create(server, body)
    assert [o["metadata"]["name"] for o in revisions.list()] == [body["metadata"]["name"]]
    await revisions.create(server, body)  # AlreadyExists is fine
    cache.put(
        r.CONTROLLER_REVISIONS,
        server.objects[("controllerrevisions.apps", CONFIG_NS, body["metadata"]["name"])],
    )
    assert len(revisions.list()) == 1


def test_revision_events_map_to_the_services_that_pin_the_runtime() -> None:
    world = FakeWorld()
    pinned = _pinned_isvc()
    following = builders.isvc(name="live", runtime=RUNTIME)
    named = builders.isvc(name="named", runtime="elsewhere")
    named["status"] = {"pinnedRevisionName": "cr-x-0000aaaa"}
    for obj in (pinned, following, named):
        world.put(r.INFERENCE_SERVICES, obj)
    mapper = runtime_pinning.pinned_services(world)
    revision = {"metadata": {"name": "cr-x-0000aaaa", "labels": {rr.RUNTIME_OF_LABEL: RUNTIME}}}
    assert set(mapper(revision)) == {Request("demo", "llama"), Request("demo", "named")}


# -- garbage collection ----------------------------------------------------------------------------------------


class _GCWriter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Obj | None]] = []

    async def apply(self, res: Any, obj: Obj, *, field_manager: str, **_: Any) -> Obj:
        self.calls.append(("apply", obj["metadata"]["name"], obj["metadata"]["annotations"]))
        return obj

    async def delete(self, res: Any, name: str, namespace: str | None = None, **_: Any) -> None:
        self.calls.append(("delete", name, None))


async def test_gc_marks_then_deletes_and_keeps_pinned() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    world = FakeWorld()

    def revision(name: str, minutes: int, marked: datetime | None = None) -> Obj:
        annotations = {rr.CREATED_BY_ANNOTATION: rr.CREATED_BY}
        if marked is not None:
            annotations[rr.GC_ELIGIBLE_SINCE_ANNOTATION] = marked.strftime("%Y-%m-%dT%H:%M:%SZ")
        created = (now - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "metadata": {
                "name": name,
                "namespace": CONFIG_NS,
                "creationTimestamp": created,
                "labels": {rr.RUNTIME_OF_LABEL: RUNTIME},
                "annotations": annotations,
            }
        }

    for i in range(10):
        world.put(r.CONTROLLER_REVISIONS, revision(f"new-{i}", i))
    world.put(r.CONTROLLER_REVISIONS, revision("pinned", 1000, marked=now - timedelta(days=3)))
    world.put(r.CONTROLLER_REVISIONS, revision("unmarked", 1001))
    world.put(r.CONTROLLER_REVISIONS, revision("expired", 1002, marked=now - timedelta(hours=25)))
    isvc = _pinned_isvc()
    isvc["status"] = {"pinnedRevisionName": "pinned"}
    world.put(r.INFERENCE_SERVICES, isvc)
    writer = _GCWriter()
    gc = revision_gc.RevisionGC(reader=world, writer=writer, config_namespace=CONFIG_NS, clock=lambda: now)
    result = await gc.reconcile(gc.request)
    assert result.requeue_after == revision_gc.RESYNC_SECONDS
    assert sorted(writer.calls, key=lambda c: c[1]) == [
        ("delete", "expired", None),
        ("apply", "pinned", {}),
        ("apply", "unmarked", {rr.GC_ELIGIBLE_SINCE_ANNOTATION: "2026-03-01T00:00:00Z"}),
    ]
