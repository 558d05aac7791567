"""kubectl-ome's cluster, quota, accelerator, traffic, placement, admin and runtime commands against the
real control plane. No controller runs: the tests write specs and statuses themselves, then run the
plugin as a subprocess, as `kubectl ome ...` would."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import (
    ACCELERATOR_QUOTAS,
    CLUSTER_SERVING_RUNTIMES,
    INFERENCE_SERVICES,
    SERVING_RUNTIMES,
    TRAFFIC_MAPS,
    WORKLOAD_CLUSTERS,
)
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.resources import SCALED_OBJECTS

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")
ROOT = Path(__file__).resolve().parents[2]


async def kubectl_ome(kubeconfig: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ome.kubectl_ome.cli", "--kubeconfig", str(kubeconfig), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 90)
    return int(proc.returncode or 0), out.decode(), err.decode()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, status: str, reason: str, generation: int) -> Obj:
    return {"type": type_, "status": status, "reason": reason, "message": "m", "observedGeneration": generation,
            "lastTransitionTime": _now()}


async def test_cluster_status(client: Client, kubeconfig: Path) -> None:
    names = []
    for name, ready in (("e2e-worker-a", "True"), ("e2e-worker-b", "False")):
        wc = await client.create(WORKLOAD_CLUSTERS, {
            "apiVersion": "ome.io/v1beta1", "kind": "WorkloadCluster", "metadata": {"name": name},
            "spec": {"clusterSource": {"kubeConfig": {"secretRef": {"name": "kc", "namespace": "ome"}}}}})
        wc["status"] = {"conditions": [condition("Ready", ready, "Reachable", 1)]}
        await client.update_status(WORKLOAD_CLUSTERS, wc)
        names.append(name)
    try:
        # A spec change leaves worker-b's Ready condition one generation behind.
        await client.patch(WORKLOAD_CLUSTERS, "e2e-worker-b",
                           {"spec": {"clusterSource": {"kubeConfig": {"key": "other"}}}})
        rc, out, err = await kubectl_ome(kubeconfig, "cluster", "status")
        assert (rc, err) == (0, ""), err
        lines = out.splitlines()
        assert lines[1].split()[:4] == ["@", "observation", "Complete", "-"]
        assert "e2e-worker-a     KubeConfigSecret   True      Current     Reported" in lines
        assert "e2e-worker-b     KubeConfigSecret   False     Stale       Reported" in lines
        rc, out, _ = await kubectl_ome(kubeconfig, "cluster", "status", "e2e-worker-a", "-o", "json")
        report = json.loads(out)
        assert (rc, report["kind"], report["observation"]) == (0, "ClusterStatusReport", "Complete")
        assert report["clusters"][0]["connectionState"] == "ReportedReady"
        rc, out, _ = await kubectl_ome(kubeconfig, "cluster", "status", "e2e-missing")
        assert rc == 0 and "@ availability   NotFound" in out
        rc, _, err = await kubectl_ome(kubeconfig, "cluster", "status", "Bad_Name")
        assert (rc, err) == (1, "error: invalid WorkloadCluster name\n")
    finally:
        for name in names:
            await client.delete(WORKLOAD_CLUSTERS, name)


async def test_quota_tree_validate_and_status(client: Client, kubeconfig: Path) -> None:
    def budget(nominal: str) -> list[Obj]:
        return [{"resourceName": "nvidia.com/gpu", "resourceFlavor": "a100", "nominal": nominal}]

    objects = [
        ("root", {"role": "Cohort"}),
        ("ml-research", {"role": "Cohort", "parentRef": {"name": "root"}, "budgets": budget("24")}),
        ("team-alpha", {"role": "ClusterQueue", "parentRef": {"name": "ml-research"}, "budgets": budget("16")}),
        ("team-beta", {"role": "ClusterQueue", "parentRef": {"name": "ml-research"}, "budgets": budget("8")}),
    ]
    for name, spec in objects:
        await client.create(ACCELERATOR_QUOTAS, {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorQuota",
                                                 "metadata": {"name": name}, "spec": spec})
    try:
        rc, out, err = await kubectl_ome(kubeconfig, "quota", "tree")
        assert (rc, err) == (0, "")
        assert out.splitlines()[3:] == [
            "Snapshot: Complete; 4 items / 1 pages; NoProblemsDetected",
            "root [Cohort]",
            "  ml-research [Cohort]",
            "    budget nvidia.com/gpu/a100=24 (Declared)",
            "    team-alpha [ClusterQueue] tenant=team-alpha",
            "      budget nvidia.com/gpu/a100=16 (Declared)",
            "    team-beta [ClusterQueue] tenant=team-beta",
            "      budget nvidia.com/gpu/a100=8 (Declared)",
        ]
        rc, out, err = await kubectl_ome(kubeconfig, "quota", "validate")
        assert (rc, err) == (0, "") and "Result: NoProblemsDetected" in out
        await client.patch(ACCELERATOR_QUOTAS, "team-alpha", {"spec": {"budgets": budget("20")}})
        rc, out, err = await kubectl_ome(kubeconfig, "quota", "validate", "team-beta")
        assert rc == 2 and out.endswith("! ml-research: ContainmentViolated (Computed; whole snapshot)\n")
        assert err == "error: advisory quota validation found violations in the complete snapshot\n"

        alpha = await client.get(ACCELERATOR_QUOTAS, "team-alpha")
        alpha["status"] = {
            "observedGeneration": alpha["metadata"]["generation"], "parent": "ml-research",
            "budgets": [{"resourceName": "nvidia.com/gpu", "resourceFlavor": "a100", "nominal": "16",
                         "admitted": "12", "reserved": "14"}],
            "conditions": [condition("Ready", "True", "Admitted", alpha["metadata"]["generation"])],
        }
        await client.update_status(ACCELERATOR_QUOTAS, alpha)
        rc, out, err = await kubectl_ome(kubeconfig, "quota", "status", "team-alpha")
        assert (rc, err) == (0, "")
        assert "  budget nvidia.com/gpu/a100 nominal=16 admitted=12\n" in out
        assert "  Ready=True reason=Admitted Current\n" in out
        assert max(len(line) for line in out.splitlines()) <= 80
        rc, _, err = await kubectl_ome(kubeconfig, "quota", "status", "nope")
        assert (rc, err) == (1, "error: AcceleratorQuota target unavailable: NotFound\n")
    finally:
        for name, _ in reversed(objects):
            await client.delete(ACCELERATOR_QUOTAS, name)


async def make_chat(client: Client, ns: str, *, placement: Obj | None = None) -> Obj:
    await client.create(SERVING_RUNTIMES, {
        "apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime", "metadata": {"name": "vllm", "namespace": ns},
        "spec": {"containers": [{"name": "ome-container", "image": "vllm:1"}],
                 "engineConfig": {"runner": {"name": "ome-container", "resources": {
                     "requests": {"cpu": "10", "memory": "160Gi", "nvidia.com/gpu": "4"}}}}}})
    spec: Obj = {"runtime": {"name": "vllm", "kind": "ServingRuntime"}, "engine": {"minReplicas": 1},
                 "acceleratorSelector": {"acceleratorClass": "nvidia-h100"}, "traffic": {"algorithm": "RoundRobin"}}
    if placement is not None:
        spec["placement"] = placement
    isvc = await client.create(INFERENCE_SERVICES, {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
                                                     "metadata": {"name": "chat", "namespace": ns}, "spec": spec})
    generation = isvc["metadata"]["generation"]
    isvc["status"] = {
        "observedGeneration": generation,
        "url": f"http://chat.{ns}.svc.cluster.local:8080",
        "traffic": {"algorithm": "RoundRobin",
                    "backendPolicyResource": {"apiVersion": "gateway.envoyproxy.io/v1alpha1",
                                              "kind": "BackendTrafficPolicy", "name": "chat"},
                    "targetedHTTPRoutes": ["chat"],
                    "conditions": [condition("BackendPolicyReady", "True", "AcceptedByGateway", generation)]},
    }
    updated: Obj = await client.update_status(INFERENCE_SERVICES, isvc)
    return updated


async def test_accelerator_and_traffic_reports(client: Client, namespace: str, kubeconfig: Path) -> None:
    await make_chat(client, namespace)
    ns = ("-n", namespace)
    rc, out, err = await kubectl_ome(kubeconfig, "accelerator", "explain", "chat", *ns)
    assert (rc, err) == (0, "")
    assert out.splitlines()[1].split() == ["engine", "Explicit", "nvidia-h100", "Missing", "base:cpu=10,+2", "1"]
    rc, out, _ = await kubectl_ome(kubeconfig, "accelerator", "explain", "chat", *ns, "-o", "json")
    assert [i["code"] for i in json.loads(out)["content"]["issues"]] == ["SelectionNotReported"]

    rc, out, err = await kubectl_ome(kubeconfig, "traffic", "status", "chat", *ns)
    assert (rc, err) == (0, "")
    rows = {line.split()[0]: line.split()[2:] for line in out.splitlines()[1:]}
    assert rows["STATE"] == ["Reported", "Computed/Unverifiable"]
    assert rows["TRANSLATOR"] == ["envoy-gateway", "Computed/Current"]
    assert rows["POLICY-READY"] == ["True/AcceptedByGateway", "Reported/Current"]
    rc, out, err = await kubectl_ome(kubeconfig, "traffic", "explain", "chat", *ns)
    assert (rc, err) == (0, "")
    assert out.splitlines()[1].split() == ["SUMMARY", "Consistent", "-", "Computed/Current"]
    rc, _, err = await kubectl_ome(kubeconfig, "traffic", "explain", "nope", *ns)
    assert (rc, err) == (1, f'error: get InferenceService "{namespace}/nope": not found\n')


async def test_traffic_drain_guarded_and_placement(client: Client, namespace: str, kubeconfig: Path) -> None:
    await make_chat(client, namespace, placement={"mode": "All", "clusterSelector": "pool=gpu"})
    ns = ("-n", namespace)
    drain = ("traffic", "drain", "chat", *ns, "--workload-cluster", "worker-a", "--id", "maintenance-a",
             "--reason", "planned maintenance")
    before = await client.get(INFERENCE_SERVICES, "chat", namespace)
    rc, out, err = await kubectl_ome(kubeconfig, *drain, "--dry-run=server", "--yes")
    assert rc == 0, err
    assert err.startswith("ALPHA guarded traffic action (not TrafficMap convergence)\n")
    assert "overrides     0 -> 1" in out and "dry-run       server" in out
    after = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    rc, out, err = await kubectl_ome(kubeconfig, *drain, stdin=b"y\n")  # a pipe is not a terminal
    assert (rc, out) == (1, "") and err.endswith("error: action not confirmed; noninteractive input requires --yes\n")

    rc, out, err = await kubectl_ome(kubeconfig, *drain, "--yes", "-o", "json")
    assert rc == 0, err
    assert json.loads(out)["traffic"] == {"overrideID": "maintenance-a", "cluster": "worker-a",
                                          "overridesBefore": 0, "overridesAfter": 1}
    stored = (await client.get(INFERENCE_SERVICES, "chat", namespace))["metadata"]["annotations"]
    assert json.loads(stored["ome.io/traffic-drain"]) == {
        "maintenance-a": {"cluster": "worker-a", "reason": "planned maintenance"}}
    rc, _, err = await kubectl_ome(kubeconfig, *drain, "--yes")
    assert (rc, err) == (1, "error: traffic drain refused: override ID already exists\n")
    rc, _, err = await kubectl_ome(kubeconfig, "traffic", "undrain", "chat", *ns, "--id", "maintenance-a", "--yes")
    assert rc == 0, err
    annotations = (await client.get(INFERENCE_SERVICES, "chat", namespace))["metadata"].get("annotations") or {}
    assert "ome.io/traffic-drain" not in annotations

    # placement: the service is placed on two homes; worker-c does not match its selector.
    isvc = await client.get(INFERENCE_SERVICES, "chat", namespace)
    isvc["status"]["placement"] = {"phase": "Placed", "candidates": [
        {"cluster": "e2e-pw-a", "phase": "Admitted", "endpoint": "https://chat.a.example.com/v1"},
        {"cluster": "e2e-pw-b", "phase": "Admitted", "endpoint": "https://chat.b.example.com"}]}
    isvc = await client.update_status(INFERENCE_SERVICES, isvc)
    clusters = []
    for name, pool in (("e2e-pw-a", "gpu"), ("e2e-pw-b", "gpu"), ("e2e-pw-c", "cpu")):
        await client.create(WORKLOAD_CLUSTERS, {
            "apiVersion": "ome.io/v1beta1", "kind": "WorkloadCluster", "metadata": {"name": name, "labels": {"pool": pool}},
            "spec": {"clusterSource": {"kubeConfig": {"secretRef": {"name": "kc", "namespace": "ome"}}}}})
        clusters.append(name)
    try:
        rc, out, err = await kubectl_ome(kubeconfig, "placement", "status", "chat", *ns)
        assert (rc, err) == (0, "")
        assert "Placement            Placed (reported)\n" in out
        assert "Reported home        e2e-pw-a (Admitted)\nHome origin          https://chat.a.example.com\n" in out
        rc, out, err = await kubectl_ome(kubeconfig, "placement", "explain", "chat", *ns)
        assert (rc, err) == (0, "")
        assert "Cluster              e2e-pw-c\nSelector compat...   False\n" in out
        assert "Cluster              e2e-pw-a\nSelector compat...   True\n" in out
        rc, out, err = await kubectl_ome(kubeconfig, "placement", "endpoint", "chat", *ns)
        assert (rc, err) == (0, "") and "TrafficMap state     Unavailable\nTrafficMap reason    NotFound\n" in out
        await client.create(TRAFFIC_MAPS, {
            "apiVersion": "ome.io/v1beta1", "kind": "TrafficMap", "metadata": {"name": "chat", "namespace": namespace},
            "spec": {"service": "chat", "observedISVCGeneration": isvc["metadata"]["generation"], "entries": [
                {"cluster": "e2e-pw-a", "endpoint": "https://chat.a.example.com", "weight": 0, "healthy": True,
                 "drainRefs": ["maintenance-a"]}]}})
        rc, out, err = await kubectl_ome(kubeconfig, "placement", "endpoint", "chat", *ns)
        assert (rc, err) == (0, "")
        assert "Routing freshness    Current\n" in out and "Route evidence       drains=1;" in out
    finally:
        for name in clusters:
            await client.delete(WORKLOAD_CLUSTERS, name)


async def test_admin_doctor_against_real_discovery(client: Client, namespace: str, kubeconfig: Path) -> None:
    rc, out, err = await kubectl_ome(kubeconfig, "admin", "doctor", "-n", namespace, "-o", "json")
    assert rc == 0, err  # OME's CRDs are installed: no required API is missing
    report = json.loads(out)["content"]
    apis = {a["resource"]: a for a in report["apis"]}
    assert apis["inferenceservices"]["availability"] == "Available"
    assert apis["pods"]["availability"] == "Available"
    # KEDA's CRD is there only when another test of this run installed it: doctor must say which.
    keda = await client.is_served(SCALED_OBJECTS)
    assert apis["scaledobjects"]["availability"] == ("Available" if keda else "NotDiscoverableAtVersion")
    assert report["reads"][0]["reason"] == "NotFound"  # no ome-controller-manager Deployment
    assert report["summary"]["state"] == "Incomplete"
    rc, out, err = await kubectl_ome(kubeconfig, "admin", "doctor", "-n", namespace, "--isvc", "nope")
    assert (rc, out, err) == (1, "", "error: doctor collection failed\n")
    rc, out, err = await kubectl_ome(kubeconfig, "admin", "recommendations", "--alfred-namespace", namespace)
    assert rc == 0, err
    assert "ConfigMap config         NotFound\nLatest cycle             NotRead\n" in out


async def test_runtime_tree_and_effective_through_inheritance(
    client: Client, namespace: str, kubeconfig: Path
) -> None:
    base, child = f"{namespace}-base"[-50:], f"{namespace}-llama"[-50:]
    await client.create(CLUSTER_SERVING_RUNTIMES, {
        "apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": base},
        "spec": {"containers": [{"name": "ome-container", "image": "vllm:1"}]}})
    await client.create(CLUSTER_SERVING_RUNTIMES, {
        "apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime",
        "metadata": {"name": child, "annotations": {"ome.io/inherit-from": base}}, "spec": {}})
    await client.create(SERVING_RUNTIMES, {
        "apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime",
        "metadata": {"name": "team", "namespace": namespace, "annotations": {"ome.io/inherit-from": child}},
        "spec": {}})
    for name, runtime in (("chat", child), ("dev", "team")):
        await client.create(INFERENCE_SERVICES, {
            "apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtime": {"name": runtime}, "engine": {"minReplicas": 1}}})
    try:
        rc, out, err = await kubectl_ome(kubeconfig, "runtime", "tree", child, "-n", namespace)
        assert (rc, err) == (0, "")
        lines = out.splitlines()
        head = lines.index(f"Head: ClusterServingRuntime/{child}")
        assert lines[head + 1 : head + 4] == [
            f"ClusterServingRuntime/{base}",
            f"`-- ClusterServingRuntime/{child} [selected]",
            f"    `-- InferenceService/{namespace}/chat",
        ]
        assert f"Context: Namespaced/{namespace} (resolution: Complete)" in lines
        assert "        `-- InferenceService/dev" in lines

        rc, out, err = await kubectl_ome(kubeconfig, "runtime", "effective", "dev", "-n", namespace, "-o", "json")
        assert rc == 0, err
        content = json.loads(out)["content"]
        assert content["inheritanceChain"] == [f"CSR/{base}", f"CSR/{child}", f"SR/{namespace}/team"]
        assert content["live"]["state"] == "Available" and len(content["live"]["hash"]) == 8
        assert content["service"]["liveRelation"] == "Equal"
    finally:
        for name in (child, base):
            try:
                await client.delete(CLUSTER_SERVING_RUNTIMES, name)
            except errors.NotFound:
                pass
