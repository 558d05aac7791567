"""Instance migration on the real control plane with kwok: requests on the InferenceService, surge moves
watched continuously from a pod watch, the policy, the rate cap, the audit ConfigMap and the history; reset,
stuck deletions, automatic relocation; transient scale through the InferenceReplica's scale subresource."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.controllers import inferencereplica, instancerollout
from ome.controllers.migration import setup as migration
from ome.controllers.migration.reconciler import MigrationSettings
from ome.devcluster.kwok_stages import PULL_FAILS
from ome.devcluster.nodes import gpu_node
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.manager import Manager
from ome.framework.resources import CONFIGMAPS, NODES
from ome.omenative.migration_plan import Caps
from ome.omenative.rollout_settings import RolloutSettings
from ome.omenative.settings import InferenceReplicaSettings
from tests.e2e.isvc_support import catalog, in_process_manager, manager_running
from tests.e2e.test_autoscaler import _kubectl, isvc_body, running
from tests.e2e.test_instance_rollout import events, pods_of, replica, runners, sampling, settled, until

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")


@contextlib.asynccontextmanager
async def started(kubeconfig: Path, *adds: Callable[[Manager], object]) -> AsyncIterator[Manager]:
    """An in-process manager with the given controllers, running until the test ends."""
    client = await Client.from_kubeconfig(str(kubeconfig))
    mgr = in_process_manager(client)
    for add in adds:
        add(mgr)
    try:
        async with manager_running(mgr):
            yield mgr
    finally:
        await client.close()


@pytest.fixture
async def manager(kubeconfig: Path) -> AsyncIterator[Manager]:
    # The chart's lifecycle.audit: 10 starts per 1h, so the 11th request in the window meets the cap.
    caps = Caps(max_per_window=10, window=3600.0, max_in_flight=3)
    async with started(
        kubeconfig,
        lambda m: inferencereplica.add_to_manager(m, InferenceReplicaSettings(status_encoding="Rows",
                                                                              retry_initial_delay=1.0)),
        lambda m: instancerollout.add_to_manager(m, RolloutSettings(instance_ready_timeout=120.0)),
        lambda m: migration.add_to_manager(m, MigrationSettings(caps=caps, instance_ready_timeout=120.0,
                                                                auto_migrate_attempts=3)),
    ) as mgr:
        yield mgr


async def service(client: Client, ns: str, name: str, replicas: int = 2, mode: str | None = None) -> Obj:
    """An InferenceService (no InferenceService controller here) and its engine's InferenceReplica."""
    engine: Obj = {"minReplicas": replicas, "maxReplicas": replicas}
    if mode:
        engine["lifecycle"] = {"migrationPolicy": {"mode": mode}}
    isvc = await client.create(INFERENCE_SERVICES, {
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": name},
        "spec": {"model": {"name": "m"}, "engine": engine}}, ns)
    body = replica(f"{name}-engine", {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}, replicas)
    if mode:
        body["spec"]["lifecycle"]["migrationPolicy"] = {"mode": mode}
    await client.create(INFERENCE_REPLICAS, body, ns)
    await settled(client, ns, f"{name}-engine", replicas)
    return isvc


async def node_of(client: Client, ns: str, index: int) -> str:
    pods = await pods_of(client, ns)
    return str(next(p["spec"]["nodeName"] for p in pods.values()
                    if p["metadata"]["labels"]["ome.io/instance-index"] == str(index)))


async def request(client: Client, ns: str, name: str, instance: int, from_node: str) -> str:
    rid = str(uuid.uuid4())
    value = {"schemaVersion": "v1", "component": "engine", "instance": instance, "from_node": from_node,
             "reason": "drain for maintenance", "requested_by": "e2e"}
    await client.patch(INFERENCE_SERVICES, name,
                       {"metadata": {"annotations": {f"ome.io/migration-request-v1-{rid}": json.dumps(value)}}}, ns)
    return rid


async def record(client: Client, ns: str, name: str, rid: str, phases: tuple[str, ...]) -> Obj:
    async def check() -> Obj | None:
        obj = await client.get(INFERENCE_REPLICAS, f"{name}-engine", ns)
        rec = next((r for r in (obj.get("status") or {}).get("migrations") or [] if r["requestUUID"] == rid), None)
        return rec if rec is not None and rec["phase"] in phases else None

    return await until(check, 120)  # type: ignore[no-any-return]


async def test_a_requested_move_ends_on_another_node_without_a_dip(
    client: Client, namespace: str, manager: Manager
) -> None:
    await service(client, namespace, "chat")
    source_node = await node_of(client, namespace, 0)
    async with sampling(client, namespace) as sampler:
        rid = await request(client, namespace, "chat", 0, source_node)
        done = await record(client, namespace, "chat", rid, ("Completed", "Failed"))
        await settled(client, namespace, "chat-engine", 2)
    assert done["phase"] == "Completed" and done["message"] == "migrated to instance=2", done
    assert sampler.events > 5 and sampler.min_serving >= 2, sampler  # never below desired
    isvc = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert not any(k.startswith("ome.io/migration-request-v1-") for k in isvc["metadata"].get("annotations") or {})
    obj = await client.get(INFERENCE_REPLICAS, "chat-engine", namespace)
    assert sorted(r["index"] for r in obj["status"]["instanceStatuses"]) == [1, 2]
    assert await node_of(client, namespace, 2) != source_node
    # the events, in order, on the InferenceService
    accepted = await events(client, namespace, "MigrationRequestAccepted")
    completed = await until(lambda: events(client, namespace, "MigrationCompleted"))
    assert accepted[0]["involvedObject"]["kind"] == "InferenceService"
    assert accepted[0]["message"] == (
        f"OMENative component=engine instance=0 migration accepted (uuid={rid}, source-node={source_node}, "
        "surge-index=2)"
    )
    assert completed[0]["involvedObject"]["name"] == "chat"
    assert accepted[0]["firstTimestamp"] <= completed[0]["firstTimestamp"]
    revision = obj["status"]["instanceStatuses"][-1]["runningRevision"]
    assert completed[0]["message"] == (
        f"OMENative migration uuid={rid} complete: component=engine instance=0 -> instance=2 (revision={revision})"
    )
    # the audit entry and the history
    cm = await client.get(CONFIGMAPS, "chat-ome-migration-audit", namespace)
    entries = json.loads(cm["data"]["history.json"])["entries"]
    assert [(e["requestUUID"], e["phase"], e["outcome"]) for e in entries] == [(rid, "Completed", "migrated")]
    history = (await client.get(INFERENCE_SERVICES, "chat", namespace))["status"]["migrationHistory"]
    assert history[-1]["id"] == rid and history[-1]["phase"] == "Completed"
    assert history[-1]["replacementInstance"] == 2
    # the rate cap (10 per 1h): nine more moves start in the window, the 11th request fails at once
    for _ in range(9):
        index = min(r["index"] for r in (await client.get(INFERENCE_REPLICAS, "chat-engine", namespace))
                    ["status"]["instanceStatuses"])
        moved = await request(client, namespace, "chat", index, await node_of(client, namespace, index))
        assert (await record(client, namespace, "chat", moved, ("Completed", "Failed")))["phase"] == "Completed"
        await settled(client, namespace, "chat-engine", 2)
    index = min(r["index"] for r in (await client.get(INFERENCE_REPLICAS, "chat-engine", namespace))
                ["status"]["instanceStatuses"])
    eleventh = await request(client, namespace, "chat", index, await node_of(client, namespace, index))
    failed = await record(client, namespace, "chat", eleventh, ("Failed",))
    assert failed["message"] == "migration rate cap reached (10/10 in the last 1h0m0s)"
    text = f"OMENative migration uuid={eleventh} rejected: migration rate cap reached (10/10 in the last 1h0m0s)"
    limited = await until(lambda: events(client, namespace, "RateLimited"))
    assert [(e["type"], e["message"]) for e in limited] == [("Warning", text)]
    assert text in [e["message"] for e in await events(client, namespace, "MigrationRequestRejected")]
    assert len(await events(client, namespace, "MigrationCompleted")) == 10


async def test_mode_never_rejects_with_its_event(client: Client, namespace: str, manager: Manager) -> None:
    await service(client, namespace, "pinned", replicas=1, mode="Never")
    pods = set(await pods_of(client, namespace))
    rid = await request(client, namespace, "pinned", 0, await node_of(client, namespace, 0))
    failed = await record(client, namespace, "pinned", rid, ("Failed",))
    assert failed["message"] == "migrations disabled by MigrationPolicy Mode=Never"
    rejected = await until(lambda: events(client, namespace, "MigrationRequestRejected"))
    assert rejected[0]["message"] == (
        f"OMENative migration uuid={rid} rejected: migrations disabled by MigrationPolicy Mode=Never")
    assert set(await pods_of(client, namespace)) == pods


async def test_a_request_for_a_missing_component_is_rejected_and_removed(
    client: Client, namespace: str, manager: Manager
) -> None:
    await service(client, namespace, "solo", replicas=1)
    rid = str(uuid.uuid4())
    value = {"schemaVersion": "v1", "component": "decoder", "instance": 0, "from_node": "gpu-node-1"}
    await client.patch(INFERENCE_SERVICES, "solo",
                       {"metadata": {"annotations": {f"ome.io/migration-request-v1-{rid}": json.dumps(value)}}},
                       namespace)
    rejected = await until(lambda: events(client, namespace, "MigrationRequestRejected"))
    assert rejected[0]["message"] == (
        f'OMENative migration uuid={rid} rejected: component "decoder" does not exist on this InferenceService')

    async def removed() -> bool:
        isvc = await client.get(INFERENCE_SERVICES, "solo", namespace)
        return not (isvc["metadata"].get("annotations") or {})

    await until(removed)


@pytest.fixture
async def slow_retry_manager(kubeconfig: Path) -> AsyncIterator[Manager]:
    """No automatic retry within the test, so only a reset rebuilds a Failed Instance."""
    async with started(
        kubeconfig,
        lambda m: inferencereplica.add_to_manager(m, InferenceReplicaSettings(status_encoding="Rows",
                                                                              retry_initial_delay=3600)),
        lambda m: migration.add_to_manager(m, MigrationSettings(instance_ready_timeout=120.0)),
    ) as mgr:
        yield mgr


async def test_a_reset_rebuilds_a_failed_instance(
    client: Client, namespace: str, slow_retry_manager: Manager
) -> None:
    body = replica("broken-engine", {"type": "SurgeThenDrain"}, 1, runners=runners(f"registry.invalid/{PULL_FAILS}:1"))
    body["spec"]["lifecycle"]["instanceReadyTimeout"] = "3s"
    await client.create(INFERENCE_REPLICAS, body, namespace)

    async def failed() -> Obj | None:
        obj = await client.get(INFERENCE_REPLICAS, "broken-engine", namespace)
        rows = (obj.get("status") or {}).get("instanceStatuses") or []
        return obj if rows and rows[0]["phase"] == "Failed" else None

    await until(failed)
    before = {p["metadata"]["uid"] for p in (await pods_of(client, namespace)).values()}
    assert before
    # a value other than all or indexes is rejected and removed
    await client.patch(INFERENCE_REPLICAS, "broken-engine",
                       {"metadata": {"annotations": {"ome.io/reset-instances": "All"}}}, namespace)
    rejected = await until(lambda: events(client, namespace, "InstancesResetRejected"))
    assert rejected[0]["message"] == (
        f'InferenceReplica {namespace}/broken-engine component=engine: ome.io/reset-instances="All" rejected: '
        '"All" is not a non-negative instance index; nothing reset'
    )

    async def answered() -> bool:
        obj = await client.get(INFERENCE_REPLICAS, "broken-engine", namespace)
        return "ome.io/reset-instances" not in (obj["metadata"].get("annotations") or {})

    await until(answered)
    await client.patch(INFERENCE_REPLICAS, "broken-engine",
                       {"metadata": {"annotations": {"ome.io/reset-instances": "all"}}}, namespace)
    reset = await until(lambda: events(client, namespace, "InstancesReset"))
    assert reset[0]["message"].startswith(
        f"InferenceReplica {namespace}/broken-engine component=engine: reset instance(s) 0 at operator request"
    )
    await until(answered)

    async def rebuilt() -> set[str] | None:
        uids = {p["metadata"]["uid"] for p in (await pods_of(client, namespace)).values()}
        return uids if uids and not uids & before else None

    await until(rebuilt)


@pytest.fixture
async def escalation_manager(kubeconfig: Path) -> AsyncIterator[Manager]:
    async with started(
        kubeconfig,
        lambda m: inferencereplica.add_to_manager(m, InferenceReplicaSettings(status_encoding="Rows",
                                                                              retry_initial_delay=1.0)),
        lambda m: migration.add_to_manager(m, MigrationSettings(instance_ready_timeout=120.0,
                                                                force_delete=(1.0, 1.0))),
    ) as mgr:
        yield mgr


@contextlib.asynccontextmanager
async def node_deleted(client: Client, name: str) -> AsyncIterator[None]:
    """The Node object gone (node-gone evidence); put back afterwards for the other tests."""
    await client.delete(NODES, name)
    try:
        yield
    finally:
        with contextlib.suppress(errors.AlreadyExists):
            await client.create(NODES, gpu_node(int(name.rsplit("-", 1)[1])))


async def test_stuck_pods_on_a_deleted_node_escalate_only_without_finalizers(
    client: Client, namespace: str, escalation_manager: Manager
) -> None:
    await service(client, namespace, "stuck", replicas=1)
    pod_name = "stuck-engine-0-default-0"
    first = await node_of(client, namespace, 0)
    await client.patch(PODS, pod_name, {"metadata": {"finalizers": ["example.com/cleanup"]}}, namespace)
    async with node_deleted(client, first):
        await client.delete(PODS, pod_name, namespace, grace_period_seconds=1)
        blocked = await until(lambda: events(client, namespace, "PodDeleteBlockedByFinalizer"))
        assert blocked[0]["involvedObject"]["name"] == "stuck"
        assert blocked[0]["message"].startswith(f"OMENative component=engine instance=0: pod {pod_name} is ")
        assert blocked[0]["message"].endswith(
            "past its own deletion deadline but pinned by finalizers [example.com/cleanup]; OME never strips "
            "another controller's finalizer — the finalizer owner must resolve it"
        )
        pod = await client.get(PODS, pod_name, namespace)
        assert pod["metadata"]["finalizers"] == ["example.com/cleanup"]  # never stripped
        assert not await events(client, namespace, "PodForceDeleted")
        # without its finalizer the pod is still Terminating on a gone node: now it is force-deleted
        await client.patch(PODS, pod_name, {"metadata": {"finalizers": None}}, namespace)
        forced = await until(lambda: events(client, namespace, "PodForceDeleted"))
        assert forced[0]["type"] == "Warning"
        assert forced[0]["message"].startswith(
            f"OMENative component=engine instance=0: force-deleted stuck-Terminating pod {pod_name} on node "
            f"{first} (evidence=node-gone, "
        )
        cm = await client.get(CONFIGMAPS, "stuck-ome-migration-audit", namespace)
        entries = json.loads(cm["data"]["history.json"])["entries"]
        assert [(e["reason"], e["outcome"], e["fromNode"]) for e in entries] == [
            ("ForceDelete", "force-delete-unreachable", first)
        ]
        await settled(client, namespace, "stuck-engine", 1)  # the work that waited goes on
        assert await node_of(client, namespace, 0) != first


async def test_deleting_the_node_under_a_running_instance_relocates_it(
    client: Client, namespace: str, manager: Manager
) -> None:
    await service(client, namespace, "moved", replicas=1)
    first = await node_of(client, namespace, 0)
    async with node_deleted(client, first):
        triggered = await until(lambda: events(client, namespace, "AutoMigrationTriggered"))
        assert triggered[0]["involvedObject"]["name"] == "moved"
        obj = await client.get(INFERENCE_REPLICAS, "moved-engine", namespace)
        [rec] = obj["status"]["migrations"]
        assert (rec["phase"], rec["trigger"], rec["fromNode"]) == ("Relocated", "Auto", first)
        assert rec["message"] == f"relocation directive recorded; rebuild steered off node {first}"
        assert triggered[0]["message"] == (
            f"OMENative component=engine instance=0 relocation directive recorded: attempt 1/3, rebuild steered "
            f"off node {first} (uuid={rec['requestUUID']})"
        )
        await settled(client, namespace, "moved-engine", 1)
        assert await node_of(client, namespace, 0) != first
        pod = (await pods_of(client, namespace))["moved-engine-0-default-0"]
        required = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": [first]} in (
            required["nodeSelectorTerms"][0]["matchExpressions"]
        )


async def test_a_transient_scale_lasts_until_its_owner_writes_the_count_again(
    client: Client, namespace: str, kubeconfig: Path
) -> None:
    """migration-and-transient-scale.md §Transient scale, with the InferenceService, InferenceReplica and
    autoscaler controllers: `kubectl scale` on the InferenceReplica; External keeps the count, a paused
    rollout holds a scale-up but not a scale-down, None sets the count back to minReplicas."""
    async with catalog(client, namespace) as cat, running(client):
        await client.create(INFERENCE_SERVICES, isvc_body("burst", {
            "model": {"name": cat.model}, "deploymentMode": "OMENative",
            "engine": {"minReplicas": 1, "maxReplicas": 3, "autoscaler": {"class": "External"}}}), namespace)
        scale = ("scale", "inferencereplica", "burst-engine", "-n", namespace)

        async def replica_now() -> Obj:
            try:
                return await client.get(INFERENCE_REPLICAS, "burst-engine", namespace)
            except errors.NotFound:
                return {}

        async def instances(count: int, wanted: int | None = None) -> Obj | None:
            obj = await replica_now()
            spec, st = obj.get("spec") or {}, obj.get("status") or {}
            ok = st.get("replicas") == count and (wanted is None or spec.get("replicas") == wanted)
            return obj if ok else None

        async def stays(count: int, wanted: int, seconds: float = 6.0) -> None:
            """The count written stays and the Instances stay at `count` for a while (nothing writes it back)."""
            end = asyncio.get_running_loop().time() + seconds
            while asyncio.get_running_loop().time() < end:
                obj = await replica_now()
                got = ((obj.get("spec") or {}).get("replicas"), (obj.get("status") or {}).get("replicas"))
                assert got == (wanted, count), obj.get("status")
                await asyncio.sleep(0.5)

        await until(lambda: instances(1), 120)
        # External: the count written through /scale lasts; the InferenceService's next pass keeps it
        await _kubectl(kubeconfig, *scale, "--replicas=2")
        await until(lambda: instances(2, 2), 90)
        await client.patch(INFERENCE_SERVICES, "burst", {"metadata": {"annotations": {"example.com/touch": "1"}}},
                           namespace)
        await stays(2, 2)

        # a paused rollout holds a scale-up ...
        await client.patch(INFERENCE_SERVICES, "burst",
                           {"metadata": {"annotations": {"ome.io/rollout-paused": "true"}}}, namespace)
        await until(lambda: _paused(replica_now, True))
        await _kubectl(kubeconfig, *scale, "--replicas=3")
        await stays(2, 3)
        # ... but not a scale-down
        await _kubectl(kubeconfig, *scale, "--replicas=1")
        await until(lambda: instances(1, 1), 90)
        await _kubectl(kubeconfig, *scale, "--replicas=2")
        await stays(1, 2)
        # resumed: the held scale-up goes ahead
        await client.patch(INFERENCE_SERVICES, "burst",
                           {"metadata": {"annotations": {"ome.io/rollout-paused": None}}}, namespace)
        await until(lambda: _paused(replica_now, False))
        await until(lambda: instances(2, 2), 90)

        # None: OME owns the count and sets it back to minReplicas within moments
        await client.patch(INFERENCE_SERVICES, "burst", [{"op": "replace", "path": "/spec/engine/autoscaler",
                                                           "value": {"class": "None"}}], namespace, patch_type="json")
        await until(lambda: instances(1, 1), 90)
        await _kubectl(kubeconfig, *scale, "--replicas=3")
        await until(lambda: instances(1, 1), 60)
        isvc = await client.get(INFERENCE_SERVICES, "burst", namespace)
        assert isvc["status"]["components"]["engine"]["scaleTargetRef"]["name"] == "burst-engine"


async def _paused(read: Any, paused: bool) -> bool:
    return bool(((await read()).get("spec") or {}).get("paused")) == paused
