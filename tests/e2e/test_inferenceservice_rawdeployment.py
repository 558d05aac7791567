"""InferenceService controller on the real control plane with kwok GPU nodes (RawDeployment path)."""

from __future__ import annotations

import asyncio
from typing import Any

from ome.api import resources
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.reconcile import Request
from tests.e2e.isvc_support import NODE, catalog, condition, eventually, running_manager

Obj = dict[str, Any]
ISVC_LABEL = "ome.io/inferenceservice"


def isvc_body(name: str, spec: Obj, **meta: Any) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, **meta},
        "spec": spec,
    }


async def _children(client: Client, namespace: str, name: str) -> set[tuple[str, str]]:
    found = set()
    for res in (
        resources.DEPLOYMENTS,
        resources.SERVICES,
        resources.HPAS,
        resources.PDBS,
        resources.INFERENCE_REPLICAS,
    ):
        items, _ = await client.list(res, namespace, label_selector={ISVC_LABEL: name})
        found |= {(res.kind, item["metadata"]["name"]) for item in items}
    return found


async def _ready(client: Client, namespace: str, name: str) -> Obj | None:
    obj = await client.get(resources.INFERENCE_SERVICES, name, namespace)
    cond = condition(obj, "Ready")
    return obj if cond is not None and cond["status"] == "True" else None


async def test_minimal_isvc_creates_documented_objects_and_becomes_ready(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace) as cat, running_manager(client) as (ctrl, writer):
        name = "llama-3-2-1b-instruct"
        await client.create(
            resources.INFERENCE_SERVICES,
            isvc_body(name, {"model": {"name": cat.model}, "engine": {}}),
            namespace,
        )
        ready = await eventually(lambda: _ready(client, namespace, name), timeout=90)

        assert await _children(client, namespace, name) == {
            ("Deployment", f"{name}-engine"),
            ("Service", f"{name}-engine"),
            ("HorizontalPodAutoscaler", f"{name}-engine"),
            ("PodDisruptionBudget", f"{name}-engine"),  # the chart's default budget (running_manager's)
            ("Service", name),
        }
        assert ready["status"]["url"] == f"http://{name}.{namespace}.svc.cluster.local:8080"
        ingress = condition(ready, "IngressReady")
        assert ingress is not None and ingress["reason"] == "IngressDisabled"
        assert ready["status"]["modelStatus"]["transitionStatus"] == "UpToDate"

        deployment = await client.get(resources.DEPLOYMENTS, f"{name}-engine", namespace)
        assert deployment["metadata"]["labels"]["serving-runtime"] == cat.runtime
        assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 600
        pods, _ = await client.list(resources.PODS, namespace, label_selector={"app": f"{name}-engine"})
        assert pods and all(p["spec"].get("nodeName") == NODE for p in pods)  # only the model-Ready node

        writes_before = len(writer.writes)
        ctrl.queue.add(Request(namespace, name))  # a no-op reconcile: nothing changed
        await asyncio.sleep(2)
        assert writer.writes[writes_before:] == []


async def test_engine_and_router_keep_the_router_on_a_deployment(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace, router=True) as cat, running_manager(client):
        spec = {
            "model": {"name": cat.model},
            "runtime": {"name": cat.runtime},
            "engine": {
                "annotations": {"ome.io/deploymentMode": "OMENative"},
                "minReplicas": 1,
                "maxReplicas": 1,
            },
            "router": {"minReplicas": 1, "maxReplicas": 1},
        }
        await client.create(resources.INFERENCE_SERVICES, isvc_body("chat", spec), namespace)

        async def both() -> bool:
            children = await _children(client, namespace, "chat")
            return {("InferenceReplica", "chat-engine"), ("Deployment", "chat-router")} <= children

        await eventually(both)
        children = await _children(client, namespace, "chat")
        assert ("Deployment", "chat-engine") not in children
        external = await client.get(resources.SERVICES, "chat", namespace)
        assert external["spec"]["selector"] == {ISVC_LABEL: "chat", "component": "router"}
        irep = await client.get(resources.INFERENCE_REPLICAS, "chat-engine", namespace)
        assert irep["spec"]["parentRef"] == {"name": "chat"}
        assert (
            irep["spec"]["runners"][0]["template"]["spec"]["containers"][0]["image"]
            == "vllm/vllm-openai:v0.9.0"
        )


async def test_deleted_runtime_sets_runtime_ready_false_and_keeps_the_deployment(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace) as cat, running_manager(client):
        spec = {"model": {"name": cat.model}, "runtime": {"name": cat.runtime}, "engine": {}}
        await client.create(resources.INFERENCE_SERVICES, isvc_body("svc", spec), namespace)
        await eventually(lambda: _ready(client, namespace, "svc"), timeout=90)
        await client.delete(resources.CLUSTER_SERVING_RUNTIMES, cat.runtime)

        async def runtime_not_ready() -> Obj | None:
            obj = await client.get(resources.INFERENCE_SERVICES, "svc", namespace)
            cond = condition(obj, "RuntimeReady")
            return obj if cond is not None and cond["status"] == "False" else None

        obj = await eventually(runtime_not_ready)
        assert condition(obj, "RuntimeReady")["reason"] == "RuntimeNotFound"  # type: ignore[index]
        await client.get(resources.DEPLOYMENTS, "svc-engine", namespace)  # still there
        events, _ = await client.list(resources.EVENTS, namespace)
        assert any(e["reason"] == "RuntimeNotFound" and e["type"] == "Warning" for e in events)


async def test_ttl_deletes_the_service_and_not_a_recreated_one(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace) as cat, running_manager(client):
        spec = {"model": {"name": cat.model}, "engine": {}, "ttlSecondsAfterCreation": 2}
        first = await client.create(resources.INFERENCE_SERVICES, isvc_body("short", spec), namespace)

        async def gone() -> bool:
            try:
                obj = await client.get(resources.INFERENCE_SERVICES, "short", namespace)
            except errors.NotFound:
                return True
            return bool(obj["metadata"]["uid"] != first["metadata"]["uid"])

        await eventually(gone, timeout=60)

        async def announced() -> bool:  # the recorder writes events in the background
            events, _ = await client.list(resources.EVENTS, namespace)
            return any(
                e["reason"] == "TTLExpired"
                and e["type"] == "Normal"
                and e["message"] == "Deleted because ttlSecondsAfterCreation=2 has passed"
                for e in events
            )

        await eventually(announced, timeout=30)

        spec["ttlSecondsAfterCreation"] = 3600
        second = await client.create(resources.INFERENCE_SERVICES, isvc_body("short", spec), namespace)
        await asyncio.sleep(3)
        still = await client.get(resources.INFERENCE_SERVICES, "short", namespace)
        assert still["metadata"]["uid"] == second["metadata"]["uid"]


async def test_fine_tuned_merged_weights_render_the_adapter_init_container(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    import contextlib

    from ome.config.inferenceservice_config import parse

    config = parse({"fineTunedAdapter": (
        '{"image": "ghcr.io/moirai-internal/ome-agent:v1.3.0", "authType": "InstancePrincipal",'
        ' "compartmentId": "ocid1.compartment.oc1..dummy", "memoryRequest": "4Gi", "memoryLimit": "4Gi",'
        ' "cpuRequest": "1", "cpuLimit": "1"}')})
    ftw_name = f"finance-{namespace[-6:]}"
    ftw = {"apiVersion": "ome.io/v1beta1", "kind": "FineTunedWeight", "metadata": {"name": ftw_name},
           "spec": {"baseModelRef": {"name": "llama"}, "modelType": "LoRA",
                    "hyperParameters": {"strategy": "lora"}, "configuration": {"merged_weights": True},
                    "storage": {"storageUri": "oci://n/mycompany/b/fine-tuned/o/finance"}}}
    async with catalog(client, namespace) as cat, running_manager(client, config):
        await client.create(resources.FINE_TUNED_WEIGHTS, ftw)
        try:
            spec = {"model": {"name": cat.model, "fineTunedWeights": [ftw_name]}, "engine": {}}
            await client.create(resources.INFERENCE_SERVICES, isvc_body("tuned", spec), namespace)

            async def deployment() -> Obj | None:
                with contextlib.suppress(errors.NotFound):
                    return await client.get(resources.DEPLOYMENTS, "tuned-engine", namespace)
                return None

            dep = await eventually(deployment, timeout=60)
            template = dep["spec"]["template"]
            assert [c["name"] for c in template["spec"]["initContainers"]] == ["fine-tuned-adapter"]
            env = {e["name"]: e["value"] for e in template["spec"]["initContainers"][0]["env"]}
            assert env["OME_AGENT_MODEL_OBJECT_NAME"] == "finance-merged-weight"
            assert template["metadata"]["labels"]["fine-tuned-serving-with-merged-weights"] == "true"
            assert not any(k.startswith("models.ome.io/") for k in template["spec"].get("nodeSelector") or {})
            await eventually(lambda: _ready(client, namespace, "tuned"), timeout=90)
        finally:
            with contextlib.suppress(errors.NotFound):
                await client.delete(resources.FINE_TUNED_WEIGHTS, ftw_name)


async def test_config_map_edit_applies_at_the_next_reconcile(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    import contextlib

    from ome.config.config_source import ConfigSource
    from ome.config.inferenceservice_config import InferenceServiceConfig

    def configmap(grace: int) -> Obj:
        deploy = f'{{"defaultDeploymentMode": "RawDeployment", "terminationGracePeriodSeconds": {grace}}}'
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inferenceservice-config"},
                "data": {"deploy": deploy}}

    await client.create(resources.CONFIGMAPS, configmap(600), namespace)
    source = ConfigSource(client, namespace, InferenceServiceConfig(), ttl=0)
    async with catalog(client, namespace) as cat, running_manager(client, config_source=source):
        spec = {"model": {"name": cat.model}, "engine": {}}
        await client.create(resources.INFERENCE_SERVICES, isvc_body("cfg", spec), namespace)

        async def grace() -> int | None:
            with contextlib.suppress(errors.NotFound):
                dep = await client.get(resources.DEPLOYMENTS, "cfg-engine", namespace)
                value: int = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
                return value
            return None

        assert await eventually(grace, timeout=60) == 600
        await client.apply(resources.CONFIGMAPS, {**configmap(120), "metadata": {
            "name": "inferenceservice-config", "namespace": namespace}}, field_manager="e2e", force=True)
        # The edit alone starts no reconcile (as documented); a change to the service does.
        await client.patch(resources.INFERENCE_SERVICES, "cfg", {"metadata": {"labels": {"touched": "yes"}}},
                           namespace)
        await eventually(lambda: _equals(grace, 120), timeout=60)


async def _equals(check: Any, expected: Any) -> bool:
    return bool(await check() == expected)


async def test_ingress_creation_on_routes_through_an_ingress(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    from ome.config.inferenceservice_config import parse

    config = parse({"ingress": '{"disableIngressCreation": false, "ingressDomain": "example.com",'
                               ' "ingressClassName": "nginx"}'})
    async with catalog(client, namespace) as cat, running_manager(client, config):
        spec = {"model": {"name": cat.model}, "engine": {}}
        await client.create(resources.INFERENCE_SERVICES, isvc_body("routed", spec), namespace)
        ready = await eventually(lambda: _ready(client, namespace, "routed"), timeout=90)
        assert ready["status"]["url"] == f"http://routed.{namespace}.example.com:8080"
        ing = await client.get(resources.INGRESSES, "routed", namespace)
        assert ing["spec"]["ingressClassName"] == "nginx"
        [rule] = ing["spec"]["rules"]
        assert rule["host"] == f"routed.{namespace}.example.com"
        assert rule["http"]["paths"][0]["backend"]["service"] == {"name": "routed-engine",
                                                                  "port": {"number": 8080}}
        with_children = await _children(client, namespace, "routed")
        assert ("Service", "routed") not in with_children  # the external Service is not made


async def test_accelerator_class_sets_node_selector_and_gpus(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    import contextlib

    from tests.e2e.isvc_support import create_when_served, runtime_body

    suffix = namespace[-6:]
    klass, rt = f"h100-{suffix}", f"vllm-h100-{suffix}"
    await create_when_served(client, resources.ACCELERATOR_CLASSES, {
        "apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": klass},
        "spec": {"vendor": "nvidia", "family": "hopper", "model": "h100",
                 "discovery": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
                 "capabilities": {"memoryGB": "80Gi"}, "resources": [{"name": "nvidia.com/gpu", "quantity": "2"}],
                 "cost": {"perHour": "4.5"}}})
    body = runtime_body(rt)
    body["spec"]["acceleratorRequirements"] = {"acceleratorClasses": [klass]}
    await create_when_served(client, resources.CLUSTER_SERVING_RUNTIMES, body)
    try:
        async with catalog(client, namespace) as cat, running_manager(client):
            spec = {"model": {"name": cat.model}, "runtime": {"name": rt}, "engine": {},
                    "acceleratorSelector": {"policy": "Cheapest"}}
            await client.create(resources.INFERENCE_SERVICES, isvc_body("accel", spec), namespace)
            await eventually(lambda: _ready(client, namespace, "accel"), timeout=90)
            dep = await client.get(resources.DEPLOYMENTS, "accel-engine", namespace)
            pod_spec = dep["spec"]["template"]["spec"]
            assert pod_spec["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
            runner = next(c for c in pod_spec["containers"] if c["name"] == "ome-container")
            assert runner["resources"]["limits"]["nvidia.com/gpu"] == "2"
    finally:
        for res, name in ((resources.CLUSTER_SERVING_RUNTIMES, rt), (resources.ACCELERATOR_CLASSES, klass)):
            with contextlib.suppress(errors.NotFound):
                await client.delete(res, name)
