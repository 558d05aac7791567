"""Which child events start an InferenceService reconcile (watch_filters.py, wired in controller.py).

At scale, Deployment status updates and pod status updates that cannot change the service's output made
the controller's queue long enough to hold a spec change's observedGeneration back by seconds.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler import controller as autoscaler_controller
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.controllers.autoscaler.reconciler import Features
from ome.controllers.inferenceservice import controller as isvc_controller
from ome.controllers.inferenceservice.watch_filters import (
    deployment_changed,
    pod_changed,
    replica_changed,
    replicas_changed,
    service_changed,
    spec_or_metadata_changed,
)
from ome.framework import transforms
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.reconcile import Request
from ome.resolution import naming

Obj = dict[str, Any]
OWNER = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "svc", "uid": "u1",
         "controller": True}


def deployment(**status: Any) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "svc-engine", "namespace": "ns", "resourceVersion": "1", "generation": 1,
                     "labels": {naming.ISVC_LABEL: "svc"}, "ownerReferences": [OWNER]},
        "spec": {"replicas": 1},
        "status": {"replicas": 1, "conditions": [
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
             "lastUpdateTime": "2026-01-01T00:00:00Z"},
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
             "message": "Deployment does not have minimum availability."}], **status},
    }


def next_version(obj: Obj) -> Obj:
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
    return new


def pod() -> Obj:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "svc-engine-abc", "namespace": "ns", "resourceVersion": "1",
                     "labels": {naming.ISVC_LABEL: "svc", naming.COMPONENT_LABEL: "engine"}},
        "spec": {"nodeName": "gpu-node-0"},
        "status": {"phase": "Pending", "containerStatuses": [
            {"name": "ome-container", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}]},
    }


def test_deployment_progress_without_availability_change_is_filtered() -> None:
    old = deployment()
    new = next_version(old)
    new["status"].update(readyReplicas=1, updatedReplicas=1)
    new["status"]["conditions"][0]["lastUpdateTime"] = "2026-01-01T00:00:05Z"
    assert not deployment_changed("MODIFIED", new, old)


def test_the_deployment_controller_s_revision_annotation_alone_is_filtered() -> None:
    old = deployment()
    revised = next_version(old)  # kube-controller-manager's first write of a new Deployment, or a rollout's
    revised["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    assert not deployment_changed("MODIFIED", revised, old)
    ours = next_version(revised)
    ours["metadata"]["annotations"] = {**revised["metadata"]["annotations"], "ome.io/desired-hash": "x"}
    assert deployment_changed("MODIFIED", ours, revised), "an annotation of ours may have drifted"


def test_deployment_available_flip_spec_and_metadata_changes_pass() -> None:
    old = deployment()
    available = next_version(old)
    available["status"]["conditions"][1] = {"type": "Available", "status": "True",
                                            "reason": "MinimumReplicasAvailable"}
    assert deployment_changed("MODIFIED", available, old)
    scaled = next_version(old)
    scaled["metadata"]["generation"] = 2
    assert deployment_changed("MODIFIED", scaled, old)
    relabelled = next_version(old)
    relabelled["metadata"]["labels"]["extra"] = "x"
    assert deployment_changed("MODIFIED", relabelled, old)
    deleting = next_version(old)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:09Z"
    assert deployment_changed("MODIFIED", deleting, old)
    assert deployment_changed("ADDED", old, None)
    assert deployment_changed("DELETED", old, None)


def test_pod_start_steps_are_filtered_but_a_failing_main_container_passes() -> None:
    old = pod()
    running = next_version(old)
    running["status"] = {"phase": "Running", "podIP": "10.0.0.1", "conditions": [
        {"type": "Ready", "status": "True"}], "containerStatuses": [
        {"name": "ome-container", "ready": True, "state": {"running": {"startedAt": "2026-01-01T00:00:03Z"}}}]}
    assert not pod_changed("MODIFIED", running, old)
    crashed = next_version(running)
    crashed["status"]["containerStatuses"][0]["state"] = {
        "terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    assert pod_changed("MODIFIED", crashed, running)
    relabelled = next_version(old)
    relabelled["metadata"]["labels"]["x"] = "y"
    assert pod_changed("MODIFIED", relabelled, old)
    assert pod_changed("ADDED", old, None)
    assert pod_changed("DELETED", old, None)


def replica() -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
        "metadata": {"name": "svc-engine", "namespace": "ns", "resourceVersion": "1", "generation": 1,
                     "ownerReferences": [OWNER]},
        "spec": {"component": "engine", "replicas": 1},
        "status": {"replicas": 1, "readyReplicas": 0, "instanceStatuses": [{"index": 0, "phase": "Creating"}]},
    }


@pytest.fixture
async def wired() -> AsyncIterator[tuple[Manager, Controller]]:
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9")) as client:
        manager = Manager(client, ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0",
                                                 install_signal_handlers=False))
        yield manager, isvc_controller.add_to_manager(manager, InferenceServiceConfig())


@pytest.mark.parametrize("kind", ["deployment", "service", "pod", "omenative-pod", "replica"])
async def test_the_controller_enqueues_only_events_that_can_change_its_output(
    wired: tuple[Manager, Controller], kind: str
) -> None:
    manager, controller = wired
    if kind == "deployment":
        informer = manager.cache.informer_for(resources.DEPLOYMENTS, label_selector=isvc_controller.CHILD_SELECTOR)
        old = deployment()
        quiet = next_version(old)
        quiet["status"]["readyReplicas"] = 1
        loud = next_version(quiet)
        loud["status"]["conditions"][1] = {"type": "Available", "status": "True"}
    elif kind == "service":
        informer = manager.cache.informer_for(resources.SERVICES, label_selector=isvc_controller.NOT_OMENATIVE_SELECTOR)
        old = service()
        quiet = next_version(old)
        loud = next_version(quiet)
        loud["spec"]["ports"] = [{"port": 9090}]
    elif kind == "replica":
        informer = manager.cache.informer_for(resources.INFERENCE_REPLICAS)
        old = replica()
        quiet = next_version(old)  # the replica controller's finalizer and an Instance row's step
        quiet["metadata"]["finalizers"] = ["ome.io/inferencereplica-cleanup"]
        quiet["status"]["instanceStatuses"][0]["operation"] = {"step": "WaitPodsReady"}
        loud = next_version(quiet)
        loud["status"]["readyReplicas"] = 1
    else:
        selector = (isvc_controller.OMENATIVE_SELECTOR if kind == "omenative-pod"
                    else isvc_controller.NOT_OMENATIVE_SELECTOR)  # the controller watches both pod informers
        informer = manager.cache.informer_for(resources.PODS, label_selector=selector,
                                              transform=transforms.slim_pod)
        old = pod()
        quiet = next_version(old)
        quiet["status"]["phase"] = "Running"
        loud = next_version(quiet)
        loud["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 1, "message": "boom"}}
    informer._notify("MODIFIED", quiet, old)
    assert len(controller.queue) == 0
    informer._notify("MODIFIED", loud, quiet)
    assert len(controller.queue) == 1


def service() -> Obj:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "svc-engine", "namespace": "ns", "resourceVersion": "1",
                         "labels": {naming.ISVC_LABEL: "svc"}, "ownerReferences": [OWNER]},
            "spec": {"clusterIP": "10.0.0.7", "ports": [{"port": 8080}]}, "status": {"loadBalancer": {}}}


def test_service_changed_drops_writes_that_leave_spec_and_metadata_as_they_were() -> None:
    old = service()
    moved = next_version(old)  # the move of its created fields: managed fields only, which the cache drops
    assert not service_changed("MODIFIED", moved, old)
    balanced = next_version(old)
    balanced["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}
    assert not service_changed("MODIFIED", balanced, old), "the controller reads no Service status"
    edited = next_version(old)
    edited["spec"]["ports"] = [{"port": 9090}]  # a Service has no generation: the spec itself is compared
    assert service_changed("MODIFIED", edited, old)
    assert_passes_annotations_and_lifecycle(service_changed, old)


def assert_passes_annotations_and_lifecycle(changed: Any, old: Obj) -> None:
    annotated = next_version(old)
    annotated["metadata"]["annotations"] = {"a": "b"}
    assert changed("MODIFIED", annotated, old)
    assert changed("ADDED", old, None)
    assert changed("DELETED", old, None)


def test_spec_or_metadata_changed_drops_status_only_updates() -> None:
    old = deployment()
    progressed = next_version(old)
    progressed["status"]["conditions"][1] = {"type": "Available", "status": "True"}
    assert not spec_or_metadata_changed("MODIFIED", progressed, old), "the autoscaler reads no status"
    scaled = next_version(old)
    scaled["metadata"]["generation"] = 2
    assert spec_or_metadata_changed("MODIFIED", scaled, old)
    assert_passes_annotations_and_lifecycle(spec_or_metadata_changed, old)


def test_replicas_changed_passes_only_what_maps_or_scales_a_workload() -> None:
    old = deployment()
    revised = next_version(old)  # the deployment controller's first write of a new Deployment
    revised["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    assert not replicas_changed("MODIFIED", revised, old), "the autoscaler reads no annotation"
    rolled = next_version(old)
    rolled["metadata"]["generation"] = 2
    rolled["spec"]["template"] = {"metadata": {"labels": {"a": "b"}}}
    assert not replicas_changed("MODIFIED", rolled, old), "a template change leaves the count as it is"
    finalized = next_version(replica())
    finalized["metadata"]["finalizers"] = ["ome.io/inferencereplica"]
    assert not replicas_changed("MODIFIED", finalized, replica())
    scaled = next_version(old)
    scaled["spec"]["replicas"] = 3
    assert replicas_changed("MODIFIED", scaled, old)
    orphaned = next_version(old)
    orphaned["metadata"]["ownerReferences"] = []
    assert replicas_changed("MODIFIED", orphaned, old)
    going = next_version(old)
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert replicas_changed("MODIFIED", going, old)
    relabelled = next_version(old)
    relabelled["metadata"]["labels"] = {**old["metadata"]["labels"], "x": "y"}
    assert replicas_changed("MODIFIED", relabelled, old)
    assert replicas_changed("ADDED", old, None)
    assert replicas_changed("DELETED", old, None)


async def test_the_autoscaler_controller_skips_workload_and_budget_status_but_not_the_hpas() -> None:
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9")) as client:
        manager = Manager(client, ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0",
                                                 install_signal_handlers=False))
        features = Features(keda_served=False, policy_enabled=False)
        entries = AutoscalerEntries()
        entries.subscribe(lambda req: None)  # the InferenceService controller's queue, not under test here
        controller = autoscaler_controller.add_to_manager(manager, InferenceServiceConfig(), features=features,
                                                          entries=entries)
        deployments = manager.cache.informer_for(resources.DEPLOYMENTS,
                                                 label_selector=autoscaler_controller.CHILD_SELECTOR)
        old = deployment()  # owned by svc
        progressed = next_version(old)
        progressed["status"]["readyReplicas"] = 1
        deployments._notify("MODIFIED", progressed, old)
        stepped = next_version(replica())
        stepped["status"]["readyReplicas"] = 1
        manager.cache.informer_for(resources.INFERENCE_REPLICAS)._notify("MODIFIED", stepped, replica())
        for res, kind in ((resources.PDBS, "PodDisruptionBudget"), (resources.HPAS, "HorizontalPodAutoscaler")):
            owner = {**OWNER, "name": kind.lower()}  # one service each, so the queue keeps them apart
            child = {"metadata": {"name": "x", "namespace": "ns", "resourceVersion": "1", "generation": 1,
                                  "ownerReferences": [owner]}, "kind": kind, "status": {}}
            moved = next_version(child)
            moved["status"] = {"currentHealthy": 1} if kind == "PodDisruptionBudget" else {"currentReplicas": 1}
            manager.cache.informer_for(res)._notify("MODIFIED", moved, child)
        assert len(controller.queue) == 1, "of the four status updates only the HPA's is reported"
        assert await controller.queue.get() == Request("ns", "horizontalpodautoscaler")
        revised = next_version(progressed)
        revised["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
        deployments._notify("MODIFIED", revised, progressed)
        assert len(controller.queue) == 0, "a workload's annotations are not read"
        scaled = next_version(revised)
        scaled["metadata"]["generation"] = 2
        scaled["spec"]["replicas"] = 4  # kubectl scale: held or floored by the autoscaler
        deployments._notify("MODIFIED", scaled, revised)
        assert await controller.queue.get() == Request("ns", "svc")


def test_replica_changed_passes_what_the_service_mirrors_or_renders_and_drops_the_rest() -> None:
    old = replica()
    rows = next_version(old)
    rows["status"]["instanceStatuses"] = [{"index": 0, "phase": "Creating", "podCount": 1}]
    rows["status"]["observedGeneration"] = 1
    assert not replica_changed("MODIFIED", rows, old)
    finalized = next_version(old)
    finalized["metadata"]["finalizers"] = ["ome.io/inferencereplica-cleanup"]
    assert not replica_changed("MODIFIED", finalized, old)
    for field, value in (("readyReplicas", 1), ("servingReplicas", 1), ("updateRevision", "svc-engine-rev-2"),
                         ("conditions", [{"type": "Ready", "status": "True"}]),
                         ("rolloutHold", {"gate": "Canary"})):
        moved = next_version(old)
        moved["status"][field] = value
        assert replica_changed("MODIFIED", moved, old), field
    for key, value in (("generation", 2), ("labels", {"x": "y"}), ("annotations", {"a": "b"}),
                       ("deletionTimestamp", "2026-01-01T00:00:00Z"), ("ownerReferences", [])):
        moved = next_version(old)
        moved["metadata"][key] = value
        assert replica_changed("MODIFIED", moved, old), key
    assert replica_changed("ADDED", old, None) and replica_changed("DELETED", old, None)
