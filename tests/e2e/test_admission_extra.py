"""Issue 18's admission rows through the real apiserver with OME's webhooks registered (the `env` fixture of
test_webhooks_admission: the webhook server in this process on 127.0.0.1, configurations selecting only
this test's namespace), and a runtime built by inheritance served to Ready by the in-process manager.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from ome.api import resources
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import catalog, condition, create_when_served, eventually, running_manager
from tests.e2e.test_webhooks_admission import Env, env  # noqa: F401  (env is the fixture)

Obj = dict[str, Any]
ISVC, SR, CSR, RP = (
    resources.INFERENCE_SERVICES,
    resources.SERVING_RUNTIMES,
    resources.CLUSTER_SERVING_RUNTIMES,
    resources.ROLLOUT_POLICIES,
)


def _denied_by(exc: errors.ApiError, webhook: str) -> str:
    prefix = f'admission webhook "{webhook}.ome-webhook-server.validator" denied the request: '
    assert exc.status == 403 and exc.message.startswith(prefix), exc.message
    return exc.message[len(prefix) :]


def _isvc(name: str, namespace: str, spec: Obj, annotations: dict[str, str] | None = None) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        **({"annotations": annotations} if annotations else {}),
    }
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": meta, "spec": spec}


def _runtime(name: str, namespace: str | None, spec: Obj, annotations: dict[str, str]) -> Obj:
    meta: Obj = {"name": name, "annotations": annotations, **({"namespace": namespace} if namespace else {})}
    kind = "ServingRuntime" if namespace else "ClusterServingRuntime"
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


async def test_misspelled_annotation_names_the_closest_key(env: Env) -> None:  # noqa: F811
    body = _isvc(
        "typo", env.namespace, {"model": {"name": env.model}, "engine": {}}, {"ome.io/retry-attempt": "3"}
    )
    with pytest.raises(errors.ApiError) as raised:
        await env.client.create(ISVC, body, env.namespace)
    assert _denied_by(raised.value, "inferenceservice") == (
        'unknown traffic annotation "ome.io/retry-attempt". Did you mean "ome.io/retry-attempts"? '
        "(UnknownTrafficAnnotation)"
    )


async def test_rollout_rollback_value_is_checked(env: Env) -> None:  # noqa: F811
    body = _isvc(
        "rb", env.namespace, {"model": {"name": env.model}, "engine": {}}, {"ome.io/rollout-rollback": "yes"}
    )
    with pytest.raises(errors.ApiError) as raised:
        await env.client.create(ISVC, body, env.namespace)
    assert _denied_by(raised.value, "inferenceservice") == (
        'annotation "ome.io/rollout-rollback" value "yes" must be "true" or "false" (InvalidBoolValue)'
    )


async def test_child_runtime_before_its_profile_and_a_profile_left_enabled(env: Env) -> None:  # noqa: F811
    child = _runtime(
        "sglang-llama-3-2-3b", env.namespace, {"disabled": False}, {"ome.io/inherit-from": "sglang-profile"}
    )
    with pytest.raises(errors.ApiError) as raised:
        await env.client.create(SR, child, env.namespace)
    assert _denied_by(raised.value, "servingruntime") == (
        'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    )
    profile = _runtime(
        "sglang-profile", env.namespace, {"disabled": False}, {"ome.io/runtime-profile": "true"}
    )
    with pytest.raises(errors.ApiError) as raised:
        await env.client.create(SR, profile, env.namespace)
    assert _denied_by(raised.value, "servingruntime") == (
        'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'
    )
    profile["spec"]["disabled"] = True
    await env.client.create(SR, profile, env.namespace)
    await env.cached(SR, "sglang-profile", env.namespace)
    await env.client.create(SR, child, env.namespace)  # the chain resolves now


async def test_rollout_policy_in_use_is_not_deleted_without_the_annotation(env: Env) -> None:  # noqa: F811
    policy = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "RolloutPolicy",
        "metadata": {"name": "canary-strict", "namespace": env.namespace},
        "spec": {"blueGreen": {}},
    }
    await create_when_served(env.client, RP, policy, env.namespace)
    engine = {
        "annotations": {"ome.io/deploymentMode": "OMENative"},
        "runner": {"name": "ome-container", "image": "x"},
    }
    group = {"components": ["engine"], "policyRef": {"name": "canary-strict", "progression": "blueGreen"}}
    spec = {"model": {"name": env.model}, "engine": engine, "rollout": {"groups": [group]}}
    await env.client.create(ISVC, _isvc("llama-chat", env.namespace, spec), env.namespace)
    await env.cached(ISVC, "llama-chat", env.namespace)
    with pytest.raises(errors.ApiError) as raised:
        await env.client.delete(RP, "canary-strict", env.namespace)
    assert _denied_by(raised.value, "rolloutpolicy") == (
        'RolloutPolicy "canary-strict" is referenced by 1 InferenceService(s): llama-chat; remove the refs first, '
        'or set the ome.io/allow-in-use-delete="true" annotation to force deletion'
    )
    annotation = {"metadata": {"annotations": {"ome.io/allow-in-use-delete": "true"}}}
    await env.client.patch(RP, "canary-strict", annotation, namespace=env.namespace)
    await env.client.delete(RP, "canary-strict", env.namespace)


# -- inheritance served to Ready (runtime-inheritance.md's example, on the e2e catalog's model) ------------


async def test_child_runtime_serves_with_its_profiles_image_and_command(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    profile_name = f"sglang-profile-{namespace[-6:]}"
    profile_spec: Obj = {
        "disabled": True,
        "supportedModelFormats": [{"modelFormat": {"name": "other-format"}, "modelFramework": {"name": "x"}}],
        "engineConfig": {
            "runner": {
                "name": "ome-container",
                "image": "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64",
                "command": ["python3", "-m", "sglang.launch_server", "--host=0.0.0.0"],
                "ports": [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}],
            }
        },
    }
    child_spec: Obj = {
        "disabled": False,
        "supportedModelFormats": [
            {
                "modelFormat": {"name": "safetensors"},
                "modelFramework": {"name": "transformers"},
                "autoSelect": False,
            }
        ],
        "engineConfig": {"runner": {"name": "ome-container", "args": ["--tp-size=1", "--mem-frac=0.9"]}},
    }
    async with catalog(client, namespace) as cat, running_manager(client):
        await create_when_served(
            client, CSR, _runtime(profile_name, None, profile_spec, {"ome.io/runtime-profile": "true"})
        )
        try:
            child = _runtime("sglang-llama", namespace, child_spec, {"ome.io/inherit-from": profile_name})
            await client.create(SR, child, namespace)
            name = "llama-3-2-3b-instruct"
            spec = {
                "model": {"name": cat.model},
                "runtime": {"name": "sglang-llama", "kind": "ServingRuntime"},
            }
            await client.create(ISVC, _isvc(name, namespace, {**spec, "engine": {}}), namespace)

            async def ready() -> Obj | None:
                obj = await client.get(ISVC, name, namespace)
                cond = condition(obj, "Ready")
                return obj if cond is not None and cond["status"] == "True" else None

            await eventually(ready, timeout=90)
            deployment = await client.get(resources.DEPLOYMENTS, f"{name}-engine", namespace)
            container = next(
                c
                for c in deployment["spec"]["template"]["spec"]["containers"]
                if c["name"] == "ome-container"
            )
            assert container["image"] == "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"
            assert container["command"] == [
                "python3",
                "-m",
                "sglang.launch_server",
                "--host=0.0.0.0",
            ]
            assert container["args"][-2:] == ["--tp-size=1", "--mem-frac=0.9"]
        finally:
            with contextlib.suppress(errors.NotFound):
                await client.delete(CSR, profile_name)


async def test_pod_webhook_applies_runtime_profiles_and_denies_unknown_ones(env: Env) -> None:  # noqa: F811
    def pod(name: str, annotations: dict[str, str]) -> Obj:
        meta = {"name": name, "labels": {"ome.io/inferenceservice": "svc"}, "annotations": annotations}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [{"name": "ome-container", "image": "x"}]}}  # fmt: skip

    created = await env.client.create(
        resources.PODS, pod("shm", {"runtime.ome.io/shm-profile": "default"}), env.namespace
    )
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in created["spec"]["volumes"]
    assert created["metadata"]["annotations"]["ome.io/enable-prometheus-scraping"] == "false"
    with pytest.raises(errors.ApiError) as raised:
        await env.client.create(
            resources.PODS, pod("bad", {"runtime.ome.io/probe-profile": "grpc"}), env.namespace
        )
    prefix = 'admission webhook "inferenceservice.ome-webhook-server.pod-mutator" denied the request: '
    assert raised.value.message.startswith(prefix + 'unknown runtime.ome.io/probe-profile "grpc"'), (
        raised.value.message
    )
