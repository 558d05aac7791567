"""The autoscaler controller on the real control plane (the kube-controller-manager's HPA controller runs).

The manager here runs the InferenceService, InferenceReplica and autoscaler controllers, as ome-manager
does. KEDA's ScaledObject CRD is installed for the KEDA test, without the KEDA operator: what is checked is
what OME writes. The CRD is written here from KEDA's published field types (keda.sh/v1alpha1
ScaledObject: scaleTargetRef, min/maxReplicaCount, pollingInterval, cooldownPeriod, idleReplicaCount,
fallback, advanced, triggers with type and string metadata), as a structural schema: a field OME wrote
under a wrong name or type would be pruned or rejected by the apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.controllers.autoscaler import controller as autoscaler
from ome.controllers.autoscaler.entries import LEGACY_FIELD_MANAGER, AutoscalerEntries
from ome.controllers.inferencereplica import setup as inferencereplica
from ome.controllers.inferenceservice import controller as inferenceservice
from ome.devcluster.crds import install_crds
from ome.devcluster.paths import bin_dir
from ome.framework import errors
from ome.framework.client import Client
from ome.omenative.settings import InferenceReplicaSettings
from ome.resolution import autoscaler_objects
from tests.e2e.isvc_support import CHART_CONFIG, catalog, eventually, in_process_manager

Obj = dict[str, Any]
CRON: Obj = {"type": "cron", "metadata": {"timezone": "UTC", "start": "0 9 * * *", "end": "0 17 * * *",
                                          "desiredReplicas": "1"}}
POLICY_CONFIG = {"autoscalerPolicy": '{"metricProviders": {"cluster-prometheus": '
                                     '{"serverAddress": "http://ome-prometheus.ome.svc:9090"}}}'}


def _int_fields(*names: str) -> Obj:
    return {name: {"type": "integer", "format": "int32"} for name in names}


def scaled_object_crd() -> Obj:
    trigger = {
        "type": "object",
        "required": ["type", "metadata"],
        "properties": {
            "type": {"type": "string"},
            "name": {"type": "string"},
            "metricType": {"type": "string"},
            "useCachedMetrics": {"type": "boolean"},
            "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
            "authenticationRef": {"type": "object", "required": ["name"],
                                  "properties": {"name": {"type": "string"}, "kind": {"type": "string"}}},
        },
    }
    spec = {
        "type": "object",
        "required": ["scaleTargetRef", "triggers"],
        "properties": {
            "scaleTargetRef": {"type": "object", "required": ["name"], "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"},
                "envSourceContainerName": {"type": "string"}}},
            **_int_fields("minReplicaCount", "maxReplicaCount", "pollingInterval", "cooldownPeriod",
                          "idleReplicaCount", "initialCooldownPeriod"),
            "fallback": {"type": "object", "required": ["failureThreshold", "replicas"], "properties": {
                "behavior": {"type": "string"}, **_int_fields("failureThreshold", "replicas")}},
            "advanced": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "triggers": {"type": "array", "items": trigger},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "scaledobjects.keda.sh"},
        "spec": {
            "group": "keda.sh",
            "names": {"kind": "ScaledObject", "listKind": "ScaledObjectList", "plural": "scaledobjects",
                      "singular": "scaledobject", "shortNames": ["so"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                    "spec": spec,
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                }}},
            }],
        },
    }


@pytest.fixture
async def keda_crd(client: Client, tmp_path: Path) -> list[str]:
    (tmp_path / "keda.sh_scaledobjects.yaml").write_text(yaml.safe_dump(scaled_object_crd()))
    return await install_crds(client, tmp_path)


@contextlib.asynccontextmanager
async def running(client: Client, config: InferenceServiceConfig | None = None) -> AsyncIterator[Any]:
    """The three controllers, KEDA and AutoscalerPolicy detected now, as ome-manager does at startup; by
    default with a chart install's budgets."""
    config = config or CHART_CONFIG
    manager = in_process_manager(client)
    entries = AutoscalerEntries()  # the autoscaler's status entries, written by the InferenceService controller
    inferenceservice.add_to_manager(manager, config, max_concurrent_reconciles=2, autoscaler_entries=entries)
    inferencereplica.add_to_manager(manager, InferenceReplicaSettings(status_encoding="Rows"))
    features = await autoscaler.detect(client, config)
    autoscaler.add_to_manager(manager, config, features=features, entries=entries, max_concurrent_reconciles=2)
    task = asyncio.create_task(manager.run())
    try:
        yield features
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)


def isvc_body(name: str, spec: Obj) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": name}, "spec": spec}


async def _get(client: Client, res: resources.Resource, name: str, namespace: str) -> Obj | None:
    try:
        return await client.get(res, name, namespace)
    except errors.NotFound:
        return None


def _cond(obj: Obj | None, type_: str, where: tuple[str, ...] = ("status",)) -> Obj | None:
    node: Any = obj or {}
    for key in where:
        node = (node or {}).get(key) or {}
    return next((c for c in node.get("conditions") or [] if c.get("type") == type_), None)


async def _kubectl(kubeconfig: Path, *args: str) -> str:
    kubectl = bin_dir() / "kubectl"
    if not kubectl.is_file():
        found = shutil.which("kubectl")
        assert found is not None, f"no kubectl in {kubectl.parent} or on PATH"
        kubectl = Path(found)
    proc = await asyncio.create_subprocess_exec(
        str(kubectl), f"--kubeconfig={kubeconfig}", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def _patch_engine(client: Client, namespace: str, name: str, engine: Obj) -> None:
    await client.patch(resources.INFERENCE_SERVICES, name, [
        {"op": "replace", "path": "/spec/engine", "value": engine}], namespace, patch_type="json")


async def test_default_hpa_reports_able_to_scale_on_rawdeployment_and_omenative(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace) as cat, running(client):
        await client.create(resources.INFERENCE_SERVICES, isvc_body("raw", {"model": {"name": cat.model},
                                                                            "engine": {}}), namespace)
        await client.create(resources.INFERENCE_SERVICES, isvc_body("native", {
            "model": {"name": cat.model}, "deploymentMode": "OMENative", "engine": {}}), namespace)

        async def able(name: str) -> Obj | None:
            hpa = await _get(client, resources.HPAS, f"{name}-engine", namespace)
            cond = _cond(hpa, "AbleToScale")
            return hpa if cond is not None and cond["status"] == "True" else None

        raw = await eventually(lambda: able("raw"), timeout=90)
        native = await eventually(lambda: able("native"), timeout=90)
        assert raw["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "raw-engine"}
        assert native["spec"]["scaleTargetRef"] == {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
                                                    "name": "native-engine"}
        assert (native["spec"]["minReplicas"], native["spec"]["maxReplicas"]) == (1, 3)
        assert native["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80

        async def reported(name: str, kind: str) -> Obj | None:
            isvc = await client.get(resources.INFERENCE_SERVICES, name, namespace)
            entry = ((isvc.get("status") or {}).get("components") or {}).get("engine") or {}
            auto = entry.get("autoscaler") or {}
            if (entry.get("scaleTargetRef") or {}).get("kind") != kind or "AbleToScale" not in {
                    c["type"] for c in auto.get("conditions") or []}:
                return None
            return entry

        entry = await eventually(lambda: reported("native", "InferenceReplica"), timeout=60)
        assert {k: entry["autoscaler"][k] for k in ("class", "managedBy", "specSource")} == {
            "class": "HPA", "managedBy": "ome", "specSource": "default"}
        await eventually(lambda: reported("raw", "Deployment"), timeout=60)


async def test_kubectl_scale_inferencereplica_changes_instances_and_the_hpa_write_wins(
    client: Client, namespace: str, ome_crds: list[str], kubeconfig: Path
) -> None:
    async with catalog(client, namespace) as cat, running(client):
        await client.create(resources.INFERENCE_SERVICES, isvc_body("chat", {
            "model": {"name": cat.model}, "deploymentMode": "OMENative",
            "engine": {"minReplicas": 1, "maxReplicas": 3}}), namespace)

        async def instances(count: int) -> Obj | None:
            replica = await _get(client, resources.INFERENCE_REPLICAS, "chat-engine", namespace)
            status = (replica or {}).get("status") or {}
            return replica if status.get("replicas") == count else None

        await eventually(lambda: instances(1), timeout=90)
        await _kubectl(kubeconfig, "scale", "inferencereplica", "chat-engine", "-n", namespace, "--replicas=2")
        replica = await eventually(lambda: instances(2), timeout=60)
        assert replica["spec"]["replicas"] == 2  # within the HPA's bounds: the count stays
        pods, _ = await client.list(resources.PODS, namespace, label_selector={"ome.io/inferenceservice": "chat"})
        assert len(pods) >= 2

        await _kubectl(kubeconfig, "scale", "inferencereplica", "chat-engine", "-n", namespace, "--replicas=5")

        async def clamped() -> Obj | None:
            got = await _get(client, resources.INFERENCE_REPLICAS, "chat-engine", namespace)
            return got if (got or {}).get("spec", {}).get("replicas") == 3 else None

        await eventually(clamped, timeout=90)  # the HPA's later write wins: back to maxReplicas
        await eventually(lambda: instances(3), timeout=60)

        await _kubectl(kubeconfig, "scale", "inferencereplica", "chat-engine", "-n", namespace, "--replicas=0")

        async def floored() -> Obj | None:
            got = await _get(client, resources.INFERENCE_REPLICAS, "chat-engine", namespace)
            return got if (got or {}).get("spec", {}).get("replicas") == 1 else None

        await eventually(floored, timeout=60)  # OMENative keeps at least one Instance
        await eventually(lambda: instances(1), timeout=60)


async def test_keda_scaled_object_and_switching_hpa_keda_none_leaves_only_the_right_object(
    client: Client, namespace: str, ome_crds: list[str], keda_crd: list[str], kubeconfig: Path
) -> None:
    async with catalog(client, namespace) as cat, running(client) as features:
        assert features.keda_served
        await client.create(resources.INFERENCE_SERVICES, isvc_body("chat", {
            "model": {"name": cat.model}, "engine": {}}), namespace)
        await eventually(lambda: _get(client, resources.HPAS, "chat-engine", namespace), timeout=60)

        keda = {"pollingInterval": 15, "cooldownPeriod": 120, "idleReplicaCount": 0, "triggers": [CRON],
                "fallback": {"failureThreshold": 3, "replicas": 2}}
        await _patch_engine(client, namespace, "chat", {"minReplicas": 1, "maxReplicas": 2,
                                                        "autoscaler": {"class": "KEDA", "keda": keda}})

        async def only_scaled_object() -> Obj | None:
            so = await _get(client, autoscaler_objects.SCALED_OBJECTS, "scaledobject-chat-engine", namespace)
            hpa = await _get(client, resources.HPAS, "chat-engine", namespace)
            return so if so is not None and hpa is None else None

        so = await eventually(only_scaled_object, timeout=60)
        assert so["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-engine"}
        assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (1, 2)
        assert so["spec"]["triggers"] == [CRON]  # survived the structural schema as written
        assert (so["spec"]["pollingInterval"], so["spec"]["cooldownPeriod"], so["spec"]["idleReplicaCount"]) == (
            15, 120, 0)
        # Copied as stored: the InferenceService CRD defaults fallback.behavior to static.
        assert so["spec"]["fallback"] == {"failureThreshold": 3, "replicas": 2, "behavior": "static"}
        assert so["metadata"]["ownerReferences"][0]["kind"] == "InferenceService"

        await _patch_engine(client, namespace, "chat", {"minReplicas": 2, "autoscaler": {"class": "None"}})

        async def nothing_and_held(replicas: int) -> bool:
            so = await _get(client, autoscaler_objects.SCALED_OBJECTS, "scaledobject-chat-engine", namespace)
            hpa = await _get(client, resources.HPAS, "chat-engine", namespace)
            dep = await _get(client, resources.DEPLOYMENTS, "chat-engine", namespace)
            return so is None and hpa is None and (dep or {}).get("spec", {}).get("replicas") == replicas

        await eventually(lambda: nothing_and_held(2), timeout=60)
        await _kubectl(kubeconfig, "scale", "deployment", "chat-engine", "-n", namespace, "--replicas=4")
        await eventually(lambda: nothing_and_held(2), timeout=60)  # held at minReplicas after kubectl scale
        isvc = await client.get(resources.INFERENCE_SERVICES, "chat", namespace)
        auto = isvc["status"]["components"]["engine"]["autoscaler"]
        assert (auto["class"], auto["managedBy"], auto["specSource"]) == ("None", "none", "isvc")


async def test_autoscaler_policy_by_name_applies_when_enabled(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    config = parse(POLICY_CONFIG)
    await client.create(resources.AUTOSCALER_POLICIES, {
        "apiVersion": "ome.io/v1beta1", "kind": "AutoscalerPolicy", "metadata": {"name": "cpu-60"},
        "spec": {"class": "HPA", "hpa": {
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 60}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}}},
    }, namespace)
    async with catalog(client, namespace) as cat, running(client, config) as features:
        assert features.policy_enabled
        await client.create(resources.INFERENCE_SERVICES, isvc_body("chat", {
            "model": {"name": cat.model}, "engine": {"maxReplicas": 4, "autoscalerPolicyRef": {"name": "cpu-60"}}}),
            namespace)

        hpa = await eventually(lambda: _get(client, resources.HPAS, "chat-engine", namespace), timeout=60)
        assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
        assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 300
        assert hpa["spec"]["maxReplicas"] == 4

        async def resolved() -> Obj | None:
            isvc = await client.get(resources.INFERENCE_SERVICES, "chat", namespace)
            auto = (((isvc.get("status") or {}).get("components") or {}).get("engine") or {}).get("autoscaler")
            return auto if _cond({"status": auto or {}}, "AutoscalerResolved") else None

        auto = await eventually(resolved, timeout=60)
        cond = _cond({"status": auto}, "AutoscalerResolved")
        assert cond is not None and (cond["status"], cond["reason"]) == ("True", "RenderedFromPolicy")
        assert (auto["specSource"], auto["policy"]["name"]) == ("policy", "cpu-60")

        async def policy_status() -> Obj | None:
            policy = await client.get(resources.AUTOSCALER_POLICIES, "cpu-60", namespace)
            status = policy.get("status") or {}
            return status if status.get("attachedComponents") == 1 else None

        status = await eventually(policy_status, timeout=60)
        ready, in_use = _cond({"status": status}, "Ready"), _cond({"status": status}, "InUse")
        assert ready is not None and (ready["status"], ready["reason"]) == ("True", "TemplatesValid")
        assert in_use is not None and (in_use["status"], in_use["reason"]) == ("True", "Attached")


async def test_autoscaler_policy_reference_is_ignored_with_a_condition_when_not_enabled(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace) as cat, running(client) as features:
        assert not features.policy_enabled
        # No webhook runs in-process: this is a reference stored before the feature was turned off.
        await client.create(resources.INFERENCE_SERVICES, isvc_body("chat", {
            "model": {"name": cat.model}, "engine": {"autoscalerPolicyRef": {"name": "cpu-60"}}}), namespace)

        async def held() -> Obj | None:
            isvc = await client.get(resources.INFERENCE_SERVICES, "chat", namespace)
            auto = (((isvc.get("status") or {}).get("components") or {}).get("engine") or {}).get("autoscaler")
            cond = _cond({"status": auto or {}}, "AutoscalerResolved")
            return cond if cond is not None else None

        cond = await eventually(held, timeout=60)
        assert (cond["status"], cond["reason"]) == ("False", "PolicyNotFound")
        assert cond["message"].startswith("holding last-known-good scaler: ")
        assert await _get(client, resources.HPAS, "chat-engine", namespace) is None
        events, _ = await client.list(resources.EVENTS, namespace)
        assert any(e.get("reason") == "AutoscalerPolicyHold" for e in events)


async def test_omenative_pdb_counts_pods(client: Client, namespace: str, ome_crds: list[str]) -> None:
    async with catalog(client, namespace) as cat, running(client):
        await client.create(resources.INFERENCE_SERVICES, isvc_body("chat", {
            "model": {"name": cat.model}, "deploymentMode": "OMENative",
            "engine": {"minReplicas": 2, "maxReplicas": 3, "leader": {}, "worker": {"size": 2}}}), namespace)

        async def budget(expected: int) -> Obj | None:
            pdb = await _get(client, resources.PDBS, "chat-engine", namespace)
            return pdb if (pdb or {}).get("spec", {}).get("minAvailable") == expected else None

        pdb = await eventually(lambda: budget(5), timeout=90)  # 2 Instances x 3 pods, the chart's maxUnavailable 1
        assert "maxUnavailable" not in pdb["spec"]
        assert pdb["spec"]["selector"]["matchLabels"]["ome.io/managed-by"] == "OMENative"
        await client.patch(resources.INFERENCE_REPLICAS, "chat-engine", {"spec": {"replicas": 3}}, namespace,
                           subresource="scale")
        await eventually(lambda: budget(8), timeout=120)  # follows the count: 3 x 3 - 1


async def test_entries_an_earlier_autoscaler_wrote_under_its_own_manager_are_taken_over(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    """Earlier versions applied `status.components.<c>.autoscaler` under the autoscaler's own field manager;
    the InferenceService controller, now the one writer, takes the entry over and a field only that manager
    held (one the entry no longer has) goes, so the manager is left with nothing."""
    async with catalog(client, namespace) as cat:
        await client.create(resources.INFERENCE_SERVICES, isvc_body("old", {"model": {"name": cat.model},
                                                                            "engine": {}}), namespace)
        stale = {"class": "HPA", "managedBy": "ome", "specSource": "default", "shadowedPolicyRef": {"name": "gone"}}
        await client.apply(resources.INFERENCE_SERVICES, {
            "apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "old", "namespace": namespace},
            "status": {"components": {"engine": {"autoscaler": stale}}}},
            field_manager=LEGACY_FIELD_MANAGER, subresource="status")
        async with running(client):

            async def taken_over() -> Obj | None:
                isvc = await client.get(resources.INFERENCE_SERVICES, "old", namespace)
                auto = (((isvc.get("status") or {}).get("components") or {}).get("engine") or {}).get("autoscaler")
                managers = {(m.get("manager"), m.get("subresource")) for m in isvc["metadata"].get("managedFields") or []}
                if not auto or "shadowedPolicyRef" in auto or (LEGACY_FIELD_MANAGER, "status") in managers:
                    return None
                return auto

            auto = await eventually(taken_over, timeout=90)
            assert (auto["class"], auto["specSource"]) == ("HPA", "default")
