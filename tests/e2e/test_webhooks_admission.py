"""The OME webhooks registered in the real apiserver: each documented rejection and warning, reproduced
by creating and updating objects through the API, with the exact text the client receives.

The webhook server runs in the test process on 127.0.0.1 with its own certificate (self_register), and
its configurations only select this test's namespace, so other tests on the shared cluster never meet
them. Cluster-scoped objects carry the namespace in their names and are deleted at teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.api.resources import ROLLOUT_POLICIES
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import registry, rollout_group_validation, self_register

Obj = dict[str, Any]
CBM, CSR, SR, ISVC = (
    resources.CLUSTER_BASE_MODELS,
    resources.CLUSTER_SERVING_RUNTIMES,
    resources.SERVING_RUNTIMES,
    resources.INFERENCE_SERVICES,
)


@dataclass
class Env:
    client: Client
    namespace: str
    cache: SharedCache
    model: str
    warnings: list[str] = field(default_factory=list)
    cluster_objects: list[tuple[Any, str]] = field(default_factory=list)

    async def create_cluster(self, res: Any, obj: Obj) -> None:
        await self.client.create(res, obj)
        self.cluster_objects.append((res, obj["metadata"]["name"]))
        await self.cached(res, obj["metadata"]["name"])

    async def cached(self, res: Any, name: str, namespace: str | None = None) -> None:
        for _ in range(200):
            if self.cache.get_or_none(res, name, namespace) is not None:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{res.kind} {name} never reached the webhook's cache")

    async def create_isvc(self, name: str, **spec: Any) -> Obj:
        self.warnings.clear()
        body = {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": spec,
        }
        created: Obj = await self.client.create(ISVC, body, self.namespace)
        return created

    async def denial(self, name: str, **spec: Any) -> str:
        with pytest.raises(errors.ApiError) as raised:
            await self.create_isvc(name, **spec)
        assert raised.value.status == 403, raised.value
        return _webhook_message(raised.value)


def model_obj(name: str, fmt: str) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": name},
        "spec": {
            "modelFormat": {"name": fmt, "version": "1.0.0"},
            "modelFramework": {"name": "transformers", "version": "4.45.0"},
            "modelArchitecture": "LlamaForCausalLM",
            "storage": {"storageUri": "hf://meta-llama/x"},
        },
    }


def runtime_obj(name: str, fmt: str, namespace: str | None = None, *, auto: bool = True) -> Obj:
    meta: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime" if namespace else "ClusterServingRuntime",
        "metadata": meta,
        "spec": {
            "supportedModelFormats": [
                {
                    "modelFormat": {"name": fmt, "version": "1.0.0"},
                    "modelFramework": {"name": "transformers", "version": "4.45.0"},
                    "modelArchitecture": "LlamaForCausalLM",
                    "autoSelect": auto,
                    "priority": 1,
                }
            ],
            "engineConfig": {"runner": {"name": "ome-container", "image": "vllm:latest"}},
        },
    }


@pytest.fixture
async def env(client: Client, namespace: str, ome_crds: list[str], tmp_path: Path) -> AsyncIterator[Env]:
    cache = SharedCache(client)
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path))
    ca = self_register.write_serving_certificate(tmp_path)
    registry.register_webhooks(server, cache)
    # As the manager's wiring does at start: a rollout group's policyRef is admitted when the
    # RolloutPolicy CRD is served (it is, in this cluster), else RolloutPolicyRefUnsupported.
    gate = rollout_group_validation.ROLLOUT_POLICY_GATE
    gate_was, gate.enabled = gate.enabled, await client.is_served(ROLLOUT_POLICIES)
    await cache.start()
    await server.start()
    selector = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    registration = await self_register.register(
        client, port=server.port, ca_bundle=ca, name=f"webhooks-{namespace}", namespace_selector=selector
    )
    # A unique format keeps other tests' cluster runtimes from ever matching this model.
    e = Env(client, namespace, cache, model=f"llama-{namespace}")
    client.warning_handler = e.warnings.append
    try:
        await cache.wait_for_sync(30)
        await e.create_cluster(CBM, model_obj(e.model, fmt=f"fmt-{namespace}"))
        await _until_webhook_answers(e)
        yield e
    finally:
        with contextlib.suppress(errors.ApiError):
            await self_register.unregister(client, registration)
        for res, name in e.cluster_objects:
            with contextlib.suppress(errors.NotFound):
                await client.delete(res, name)
        await server.stop()
        await cache.stop()
        gate.enabled = gate_was


def _webhook_message(exc: errors.ApiError) -> str:
    """The webhook's own message: the apiserver prefixes it with the webhook that denied the request."""
    prefix = 'admission webhook "inferenceservice.ome-webhook-server.validator" denied the request: '
    assert exc.message.startswith(prefix), exc.message
    return exc.message[len(prefix) :]


async def _until_webhook_answers(e: Env) -> None:
    """A new configuration reaches the apiserver's admission chain within moments; probe until it does."""
    for attempt in range(100):
        try:
            await e.create_isvc(f"probe-{attempt}", engine={})
        except errors.ApiError as exc:
            if "at least one of spec.model or spec.runtime must be set" in exc.message:
                return
            raise
        await e.client.delete(ISVC, f"probe-{attempt}", e.namespace)
        await asyncio.sleep(0.1)
    raise AssertionError("the webhook was never called")


async def test_auto_selection_warning(env: Env) -> None:
    fmt = f"fmt-{env.namespace}"
    await env.client.create(SR, runtime_obj("team-runtime", fmt, env.namespace), env.namespace)
    await env.cached(SR, "team-runtime", env.namespace)
    await env.create_isvc("llama", model={"name": env.model}, engine={})
    assert env.warnings == [f"Runtime team-runtime will be auto-selected for model {env.model}"]


async def test_neither_model_nor_runtime(env: Env) -> None:
    assert await env.denial("empty", engine={}) == "at least one of spec.model or spec.runtime must be set"


async def test_model_not_found(env: Env) -> None:
    message = await env.denial("missing", model={"name": "no-such-model"}, engine={})
    assert message.startswith(f'referenced model "no-such-model" not found in namespace "{env.namespace}"')


async def test_no_supporting_runtime(env: Env) -> None:
    message = await env.denial("unserved", model={"name": env.model}, engine={})
    assert message.startswith(f"no supporting runtime found for model {env.model}")


async def test_named_runtime_without_declared_support_warns(env: Env) -> None:
    await env.client.create(
        SR, runtime_obj("other-runtime", "gguf", env.namespace, auto=False), env.namespace
    )
    await env.cached(SR, "other-runtime", env.namespace)
    await env.create_isvc("named", model={"name": env.model}, runtime={"name": "other-runtime"}, engine={})
    assert len(env.warnings) == 1
    assert env.warnings[0].startswith(
        f'runtime "other-runtime" does not declare support for model "{env.model}"'
    )


async def test_deployment_mode_combination(env: Env) -> None:
    message = await env.denial(
        "pd",
        model={"name": env.model},
        engine={"annotations": {"ome.io/deploymentMode": "OMENative"}, "runner": {"image": "x"}},
        decoder={"runner": {"image": "x"}},
    )
    assert message == (
        'InvalidDeploymentModeCombination: engine deploymentMode="OMENative" does not match decoder '
        'deploymentMode=""; when either is OMENative, both must use the same value'
    )


async def test_deployment_strategy_warning(env: Env) -> None:
    await env.create_isvc(
        "strategy",
        model={"name": env.model},
        deploymentMode="OMENative",
        engine={"runner": {"image": "x"}, "deploymentStrategy": {"type": "Recreate"}},
    )
    assert env.warnings == [
        'engine.deploymentStrategy is set but deploymentMode is "OMENative"; deploymentStrategy applies only to '
        "RawDeployment and is ignored here — use engine.lifecycle.updateStrategy.rollingUpdate for rollout pacing"
    ]


async def test_leader_without_worker(env: Env) -> None:
    message = await env.denial("lw", model={"name": env.model}, engine={"leader": {"runner": {"name": "r"}}})
    assert message.startswith("InvalidLeaderWorkerPairing")


async def test_rollout_rules(env: Env) -> None:
    # A valid plan, so the only broken rule is the mode: the plan body is checked first (v1.3's
    # ValidateCanary), and a plan ending below 100 would be CanaryInvalid instead.
    steps: list[dict[str, Any]] = [{"capacity": 1, "traffic": 10}, {"capacity": "100%", "traffic": 100}]
    groups = {"groups": [{"components": ["engine"], "canary": {"steps": steps}}]}
    message = await env.denial(
        "canary", model={"name": env.model}, engine={"runner": {"image": "x"}}, rollout=groups
    )
    assert message.endswith("(CanaryRequiresOMENative)")
    steps[-1]["traffic"] = 90
    message = await env.denial(
        "canary", model={"name": env.model}, engine={"runner": {"image": "x"}}, rollout=groups
    )
    assert message == "spec.rollout.groups[0].canary final step traffic must be 100, got 90 (CanaryInvalid)"
    message = await env.denial("scaling", model={"name": env.model}, scalingPolicy={"mode": "Proportional"})
    assert message.endswith("(ScalingModeNotImplemented)")
    zero = {"updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}
    message = await env.denial(
        "zero", model={"name": env.model}, engine={"runner": {"image": "x"}, "lifecycle": zero}
    )
    assert message.endswith("(RollingUpdateZeroBudget)")


async def test_replica_refs(env: Env) -> None:
    message = await env.denial("fronted", replicaRefs={"engine": ["llama-pool"]})
    assert message == (
        f"spec.replicaRefs.engine names InferenceReplica {env.namespace}/llama-pool, which does not "
        "exist; create it first"
    )
    for name in ("llama-pool", "other-pool"):
        await env.client.create(
            resources.INFERENCE_REPLICAS,
            {
                "apiVersion": "ome.io/v1beta1",
                "kind": "InferenceReplica",
                "metadata": {"name": name, "namespace": env.namespace},
                "spec": {"component": "engine"},
            },
            env.namespace,
        )
        await env.cached(resources.INFERENCE_REPLICAS, name, env.namespace)
    await env.create_isvc("fronted", replicaRefs={"engine": ["llama-pool"]})
    with pytest.raises(errors.ApiError) as raised:
        await env.client.patch(
            ISVC, "fronted", {"spec": {"replicaRefs": {"engine": ["other-pool"]}}}, env.namespace
        )
    assert _webhook_message(raised.value) == (
        "spec.replicaRefs is fixed at create; delete and recreate the InferenceService to front other replicas"
    )
