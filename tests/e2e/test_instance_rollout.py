"""Instance rollouts on the real control plane with kwok, sampled continuously from a pod watch."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import CONTROLLER_REVISIONS, EVENTS, INFERENCE_REPLICAS, PODS
from ome.controllers import inferencereplica, instancerollout
from ome.devcluster.kwok_stages import PULL_FAILS
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.resources import Resource as ResourceType
from ome.omenative.rollout_retry import RetryPolicy
from ome.omenative.rollout_settings import RolloutSettings
from ome.omenative.settings import InferenceReplicaSettings
from tests.e2e.watching import watching

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")


def template(image: str = "vllm:1", env: list[Obj] | None = None) -> Obj:
    container: Obj = {
        "name": "ome-container",
        "image": image,
        "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
    }
    if env:
        container["env"] = env
    return {
        "metadata": {"labels": {"team": "llm"}},
        "spec": {"containers": [container], "tolerations": [{"operator": "Exists"}]},
    }


def runners(image: str = "vllm:1", env: list[Obj] | None = None, workers: int = 0) -> list[Obj]:
    if not workers:
        return [{"name": "default", "size": 1, "template": template(image, env)}]
    return [
        {"name": "leader", "size": 1, "template": template(image, env)},
        {"name": "worker", "size": workers, "template": template(image, env)},
    ]


def replica(name: str, strategy: Obj, replicas: int = 3, **spec: Any) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": name},
        "spec": {
            "component": "engine",
            "parentRef": {"name": name.removesuffix("-engine")},
            "replicas": replicas,
            "runners": spec.pop("runners", runners()),
            "lifecycle": {"updateStrategy": strategy, "instanceReadyTimeout": "120s"},
            **spec,
        },
    }


@pytest.fixture
async def manager(kubeconfig: Path) -> AsyncIterator[Manager]:
    client = await Client.from_kubeconfig(str(kubeconfig))
    mgr = Manager(
        client,
        ManagerOptions(
            metrics_bind_address="0", health_probe_bind_address="0", install_signal_handlers=False
        ),
    )
    inferencereplica.add_to_manager(
        mgr, InferenceReplicaSettings(status_encoding="Rows", retry_initial_delay=1.0)
    )
    policy = RetryPolicy(max_attempts=2, initial_delay=1.0, multiplier=1.0, max_delay=2.0)
    instancerollout.add_to_manager(mgr, RolloutSettings(retry=policy, instance_ready_timeout=120.0))
    task = asyncio.create_task(mgr.run())
    yield mgr
    mgr.stop()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(task, 30)
    await client.close()


async def until(check: Callable[[], Awaitable[Any]], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.3)
    raise AssertionError(f"condition not met in {timeout}s; last={last!r}")


def condition(obj: Obj, type_: str = "Ready") -> Obj:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


async def settled(client: Client, ns: str, name: str, replicas: int = 3) -> Obj:
    async def check() -> Obj | None:
        obj = await client.get(INFERENCE_REPLICAS, name, ns)
        st = obj.get("status") or {}
        rows = st.get("instanceStatuses") or []
        ok = (
            condition(obj).get("reason") == "AllInstancesReady"
            and len(rows) == replicas
            and st.get("currentRevision") == st.get("updateRevision")
            and all(r.get("runningRevision") == st.get("updateRevision") for r in rows)
        )
        return obj if ok else None

    return await until(check)  # type: ignore[no-any-return]


async def set_runners(client: Client, ns: str, name: str, value: list[Obj]) -> str:
    """Change the pod template; returns the update revision it makes."""
    prior = ((await client.get(INFERENCE_REPLICAS, name, ns)).get("status") or {}).get("updateRevision")
    await client.patch(INFERENCE_REPLICAS, name, {"spec": {"runners": value}}, ns)

    async def new_revision() -> str | None:
        st = (await client.get(INFERENCE_REPLICAS, name, ns)).get("status") or {}
        return st["updateRevision"] if st.get("updateRevision") not in (prior, None) else None

    return await until(new_revision)  # type: ignore[no-any-return]


@dataclass
class Sampler:
    """Serving Instances as the pod watch sees them, after every event: the minimum, and the most
    Instances that ran extra live pods at once."""

    pods: dict[str, Obj] = field(default_factory=dict)
    min_serving: int = 1 << 30
    max_surging: int = 0
    events: int = 0

    def observe(self, event: str, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        if event == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod
        serving: set[str] = set()
        live: dict[str, int] = {}
        for p in self.pods.values():
            if p["metadata"].get("deletionTimestamp"):
                continue
            index = p["metadata"]["labels"].get("ome.io/instance-index", "")
            live[index] = live.get(index, 0) + 1
            ready = any(
                c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or []
            )
            if ready:
                serving.add(index)
        self.min_serving = min(self.min_serving, len(serving))
        self.max_surging = max(self.max_surging, sum(1 for n in live.values() if n > 1))
        self.events += 1


@contextlib.asynccontextmanager
async def sampling(client: Client, ns: str) -> AsyncIterator[Sampler]:
    sampler = Sampler()
    async with watching(client, PODS, ns, sampler.observe) as items:
        sampler.pods = {p["metadata"]["name"]: p for p in items}
        yield sampler


async def pods_of(client: Client, ns: str) -> dict[str, Obj]:
    items, _ = await client.list(PODS, ns)
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


async def events(client: Client, ns: str, reason: str) -> list[Obj]:
    items, _ = await client.list(EVENTS, ns)
    return [e for e in items if e.get("reason") == reason]


async def test_surge_then_drain_never_drops_below_desired_and_ends_on_the_new_revision(
    client: Client, namespace: str, manager: Manager
) -> None:
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    await client.create(INFERENCE_REPLICAS, replica("surge-engine", strategy), namespace)
    before = await settled(client, namespace, "surge-engine")
    old = before["status"]["currentRevision"]
    async with sampling(client, namespace) as sampler:
        new = await set_runners(client, namespace, "surge-engine", runners("vllm:2"))
        after = await settled(client, namespace, "surge-engine")
    assert sampler.events > 10 and sampler.min_serving >= 3, sampler
    assert sampler.max_surging == 1  # maxSurge: 1
    rows = after["status"]["instanceStatuses"]
    assert {r["runningRevision"] for r in rows} == {new} and all(r.get("activeOrdinal") == 1 for r in rows)
    pods = await pods_of(client, namespace)
    assert sorted(pods) == [f"surge-engine-{i}-default-1" for i in range(3)]
    assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {"vllm:2"}
    assert await client.get(CONTROLLER_REVISIONS, old, namespace)  # the old revision is kept
    # A second change goes back to ordinal 0.
    await set_runners(client, namespace, "surge-engine", runners("vllm:3"))
    await settled(client, namespace, "surge-engine")
    assert sorted(await pods_of(client, namespace)) == [f"surge-engine-{i}-default-0" for i in range(3)]


async def test_recreate_pod_keeps_within_max_unavailable(
    client: Client, namespace: str, manager: Manager
) -> None:
    strategy = {"type": "RecreatePod", "rollingUpdate": {"maxUnavailable": 1}}
    await client.create(INFERENCE_REPLICAS, replica("recreate-engine", strategy), namespace)
    await settled(client, namespace, "recreate-engine")
    async with sampling(client, namespace) as sampler:
        await set_runners(client, namespace, "recreate-engine", runners("vllm:2"))
        await settled(client, namespace, "recreate-engine")
    assert sampler.min_serving == 2, sampler  # one Instance out of service at a time, never two
    assert sampler.max_surging == 0
    pods = await pods_of(client, namespace)
    assert sorted(pods) == [f"recreate-engine-{i}-default-0" for i in range(3)]
    assert {p["metadata"]["labels"]["ome.io/instance-incarnation"] for p in pods.values()} == {"2"}


async def test_in_place_if_possible_keeps_the_pods(client: Client, namespace: str, manager: Manager) -> None:
    strategy = {"type": "InPlaceIfPossible", "rollingUpdate": {"maxUnavailable": 1}}
    await client.create(INFERENCE_REPLICAS, replica("inplace-engine", strategy), namespace)
    await settled(client, namespace, "inplace-engine")
    uids = {n: p["metadata"]["uid"] for n, p in (await pods_of(client, namespace)).items()}
    async with sampling(client, namespace) as sampler:
        new = await set_runners(client, namespace, "inplace-engine", runners("vllm:2"))
        await settled(client, namespace, "inplace-engine")
    assert sampler.min_serving == 2, sampler  # each pod leaves rotation while its containers restart
    pods = await pods_of(client, namespace)
    assert {n: p["metadata"]["uid"] for n, p in pods.items()} == uids  # same pods, same names
    assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {"vllm:2"}
    assert {p["metadata"]["labels"]["ome.io/revision-hash"] for p in pods.values()} == {
        new.rsplit("-", 1)[-1]
    }


async def test_in_place_only_refuses_a_non_image_change(
    client: Client, namespace: str, manager: Manager
) -> None:
    strategy = {"type": "InPlaceOnly", "rollingUpdate": {"maxUnavailable": 1}}
    await client.create(INFERENCE_REPLICAS, replica("only-engine", strategy, replicas=2), namespace)
    before = await settled(client, namespace, "only-engine", 2)
    pods = await pods_of(client, namespace)
    await set_runners(
        client, namespace, "only-engine", runners(env=[{"name": "LOG_LEVEL", "value": "debug"}])
    )

    async def refused() -> list[Obj]:
        return await events(client, namespace, "InPlaceUpdateNotPossible")

    found = await until(refused)
    await asyncio.sleep(2)  # nothing moves, and each refusal is announced once
    messages = sorted(e["message"] for e in await refused())
    assert messages == [
        f"OMENative component=engine instance={i} rejected update: InPlaceOnly strategy but diff exceeds container "
        "images"
        for i in range(2)
    ], found
    obj = await client.get(INFERENCE_REPLICAS, "only-engine", namespace)
    assert {r["runningRevision"] for r in obj["status"]["instanceStatuses"]} == {
        before["status"]["currentRevision"]
    }
    assert await pods_of(client, namespace) == pods or set(await pods_of(client, namespace)) == set(pods)
    assert condition(obj)["reason"] == "RolloutInProgress"


async def test_partition_stages_the_rollout(client: Client, namespace: str, manager: Manager) -> None:
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 3, "partition": 1}}
    await client.create(INFERENCE_REPLICAS, replica("staged-engine", strategy), namespace)
    before = await settled(client, namespace, "staged-engine")
    new = await set_runners(client, namespace, "staged-engine", runners("vllm:2"))
    expected = f"Staged at partition 1: 2/3 Instances on {new}, 1 held on the prior revision"

    async def staged() -> Obj | None:
        obj = await client.get(INFERENCE_REPLICAS, "staged-engine", namespace)
        return obj if condition(obj).get("message") == expected else None

    obj = await until(staged)
    rows = {r["index"]: r["runningRevision"] for r in obj["status"]["instanceStatuses"]}
    assert rows == {0: before["status"]["currentRevision"], 1: new, 2: new}
    assert condition(obj)["status"] == "True" and condition(obj)["reason"] == "Staged"
    # Setting the partition to 0 finishes the rollout.
    strategy["rollingUpdate"]["partition"] = 0
    await client.patch(
        INFERENCE_REPLICAS, "staged-engine", {"spec": {"lifecycle": {"updateStrategy": strategy}}}, namespace
    )
    await settled(client, namespace, "staged-engine")


async def test_a_failing_revision_is_retried_then_held_while_old_instances_serve(
    client: Client, namespace: str, manager: Manager
) -> None:
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    await client.create(INFERENCE_REPLICAS, replica("held-engine", strategy), namespace)
    before = await settled(client, namespace, "held-engine")
    old = before["status"]["currentRevision"]
    async with sampling(client, namespace) as sampler:
        bad = await set_runners(
            client, namespace, "held-engine", runners(f"registry.invalid/{PULL_FAILS}:v1")
        )

        async def held() -> Obj | None:
            obj = await client.get(INFERENCE_REPLICAS, "held-engine", namespace)
            blocks = obj["status"].get("retryBlocks") or []
            return obj if blocks and blocks[0]["state"] == "Held" else None

        obj = await until(held)
    assert sampler.min_serving >= 3, sampler
    st = obj["status"]
    assert st["retryBlocks"][0]["targetRevision"] == bad and st["retryBlocks"][0]["attemptsStarted"] == 2
    assert st["rolloutHold"]["gate"] == "Held" and st["rolloutHold"]["target"] == bad
    assert {r["runningRevision"] for r in st["instanceStatuses"]} == {old}

    async def stalled() -> bool:  # the replica controller's next status pass reads the held block
        obj = await client.get(INFERENCE_REPLICAS, "held-engine", namespace)
        return condition(obj, "RolloutStalled").get("status") == "True"

    await until(stalled)
    warned = await until(lambda: events(client, namespace, "RetryHeld"))
    assert warned[0]["type"] == "Warning" and warned[0]["message"] == (
        f"InferenceReplica {namespace}/held-engine component=engine update to revision {bad} held after 2 failed "
        "attempt(s) (last failure: ImagePullBackOff); publish a corrected revision or raise lifecycle.updateRetry "
        "limits"
    )
    # Release by hash: the block goes, the annotation goes, and OME tries the revision again.
    digest = bad.rsplit("-", 1)[-1]
    await client.patch(
        INFERENCE_REPLICAS,
        "held-engine",
        {"metadata": {"annotations": {"ome.io/release-held-revision": digest}}},
        namespace,
    )
    released = await until(lambda: events(client, namespace, "RetryBlockReleased"))
    assert released[0]["message"] == (
        f"InferenceReplica {namespace}/held-engine component=engine: Held retryBlock for revision {bad} removed at "
        "operator request (ome.io/release-held-revision annotation)"
    )

    async def annotation_gone() -> bool:
        obj = await client.get(INFERENCE_REPLICAS, "held-engine", namespace)
        return "ome.io/release-held-revision" not in (obj["metadata"].get("annotations") or {})

    await until(annotation_gone)
    await until(lambda: _count(events(client, namespace, "RetryHeld"), 2))  # tried again, held again
    # A newer, good revision replaces the hold and the rollout finishes.
    good = await set_runners(client, namespace, "held-engine", runners("vllm:2"))
    done = await settled(client, namespace, "held-engine")
    assert done["status"]["currentRevision"] == good and not done["status"].get("retryBlocks")
    assert not done["status"].get("rolloutHold")


async def _count(found: Awaitable[list[Obj]], n: int) -> bool:
    return sum(int(e.get("count") or 1) for e in await found) >= n


async def test_pause_holds_the_rollout_and_resume_continues(
    client: Client, namespace: str, manager: Manager
) -> None:
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    await client.create(INFERENCE_REPLICAS, replica("paused-engine", strategy), namespace)
    before = await settled(client, namespace, "paused-engine")
    await client.patch(
        INFERENCE_REPLICAS, "paused-engine", {"spec": {"paused": True, "replicas": 4}}, namespace
    )
    pods = set(await pods_of(client, namespace))
    await set_runners(client, namespace, "paused-engine", runners("vllm:2"))
    await asyncio.sleep(3)
    obj = await client.get(INFERENCE_REPLICAS, "paused-engine", namespace)
    assert {r["runningRevision"] for r in obj["status"]["instanceStatuses"]} == {
        before["status"]["currentRevision"]
    }
    assert set(await pods_of(client, namespace)) == pods  # no update started, no new Instance either
    assert len(obj["status"]["instanceStatuses"]) == 3
    with contextlib.suppress(errors.NotFound):
        await client.patch(INFERENCE_REPLICAS, "paused-engine", {"spec": {"paused": None}}, namespace)
    await settled(client, namespace, "paused-engine", 4)


async def test_leader_and_workers_surge_whole_at_a_new_index(
    client: Client, namespace: str, manager: Manager
) -> None:
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    body = replica("gang-engine", strategy, replicas=1, runners=runners(workers=2))
    await client.create(INFERENCE_REPLICAS, body, namespace)
    await settled(client, namespace, "gang-engine", 1)
    assert sorted(await pods_of(client, namespace)) == [
        "gang-engine-0-leader-0",
        "gang-engine-0-worker-0",
        "gang-engine-0-worker-1",
    ]
    async with sampling(client, namespace) as sampler:
        new = await set_runners(client, namespace, "gang-engine", runners("vllm:2", workers=2))
        done = await settled(client, namespace, "gang-engine", 1)
    assert sampler.min_serving >= 1, sampler  # the old gang served until the new one did
    rows = done["status"]["instanceStatuses"]
    assert [(r["index"], r["incarnation"], r["runningRevision"]) for r in rows] == [(1, 1, new)]
    pods = await pods_of(client, namespace)
    assert sorted(pods) == ["gang-engine-1-leader-0", "gang-engine-1-worker-0", "gang-engine-1-worker-1"]
    assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {"vllm:2"}


RESOURCE_QUOTAS = ResourceType("", "v1", "ResourceQuota", "resourcequotas", True)


async def test_a_quota_refused_surge_waits_as_quota_exceeded_then_finishes_once_raised(
    client: Client, namespace: str, manager: Manager
) -> None:
    """The API server's ResourceQuota admission refuses the surge pod: the Instance's update waits with
    `operation.waiting: QuotaExceeded` while the old pod serves, and moves on once the quota is raised."""
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    await client.create(INFERENCE_REPLICAS, replica("quota-engine", strategy, replicas=1), namespace)
    await settled(client, namespace, "quota-engine", replicas=1)
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods"},
             "spec": {"hard": {"pods": "1"}}}
    await client.create(RESOURCE_QUOTAS, quota, namespace)

    async def enforced() -> bool:  # KCM's quota controller has counted the namespace's pods
        st = (await client.get(RESOURCE_QUOTAS, "pods", namespace)).get("status") or {}
        return (st.get("used") or {}).get("pods") == "1"

    await until(enforced)
    async with sampling(client, namespace) as sampler:
        await set_runners(client, namespace, "quota-engine", runners("vllm:2"))

        async def waiting() -> Obj | None:
            obj = await client.get(INFERENCE_REPLICAS, "quota-engine", namespace)
            [row] = obj["status"]["instanceStatuses"]
            return row if (row.get("operation") or {}).get("waiting") == "QuotaExceeded" else None

        row = await until(waiting)
        assert row["phase"] == "Updating" and row["operation"]["step"] == "Surge"
        # Held long enough that a retry on the work queue's error backoff would now wait ~20 s; the
        # quota watch (and the bounded recheck) make the raise seen at once instead.
        await asyncio.sleep(20)
        await client.patch(RESOURCE_QUOTAS, "pods", {"spec": {"hard": {"pods": "2"}}}, namespace)
        raised = time.monotonic()

        async def surged() -> bool:
            with contextlib.suppress(errors.NotFound):
                return bool(await client.get(PODS, "quota-engine-0-default-1", namespace))
            return False

        await until(surged, timeout=30)
        resumed_in = time.monotonic() - raised
        after = await settled(client, namespace, "quota-engine", replicas=1)
    assert resumed_in < 8, f"the surge pod came {resumed_in:.1f}s after the quota was raised"
    assert sampler.min_serving >= 1, sampler
    [row] = after["status"]["instanceStatuses"]
    assert row.get("activeOrdinal") == 1 and "operation" not in row


async def test_a_quota_refused_create_waits_as_quota_exceeded_then_starts_once_raised(
    client: Client, namespace: str, manager: Manager
) -> None:
    """The InferenceReplica controller's own Create: a ResourceQuota admits one pod of two, the second
    Instance waits with `operation.waiting: QuotaExceeded` (no error backoff), and starts within seconds
    of the quota being raised (the ResourceQuota watch)."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods"},
             "spec": {"hard": {"pods": "1"}}}
    await client.create(RESOURCE_QUOTAS, quota, namespace)

    async def enforced() -> bool:  # KCM's quota controller has filled the quota's status
        st = (await client.get(RESOURCE_QUOTAS, "pods", namespace)).get("status") or {}
        return (st.get("hard") or {}).get("pods") == "1"

    await until(enforced)
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    await client.create(INFERENCE_REPLICAS, replica("made-engine", strategy, replicas=2), namespace)

    async def waiting() -> Obj | None:
        obj = await client.get(INFERENCE_REPLICAS, "made-engine", namespace)
        rows = (obj.get("status") or {}).get("instanceStatuses") or []
        return next((r for r in rows if (r.get("operation") or {}).get("waiting") == "QuotaExceeded"), None)

    row = await until(waiting)
    assert row["phase"] == "Creating" and row["operation"]["type"] == "Create"
    await asyncio.sleep(20)  # long enough that an error backoff would now wait ~20 s
    await client.patch(RESOURCE_QUOTAS, "pods", {"spec": {"hard": {"pods": "2"}}}, namespace)
    raised = time.monotonic()
    name = f"made-engine-{row['index']}-default-0"

    async def made() -> bool:
        with contextlib.suppress(errors.NotFound):
            return bool(await client.get(PODS, name, namespace))
        return False

    await until(made, timeout=30)
    started_in = time.monotonic() - raised
    after = await settled(client, namespace, "made-engine", replicas=2)
    assert started_in < 8, f"the pod came {started_in:.1f}s after the quota was raised"
    assert all("operation" not in r for r in after["status"]["instanceStatuses"])
