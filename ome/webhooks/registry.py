"""Every OME admission webhook in one table: the server's paths and the webhook configurations.

`register_webhooks(server, cache)` serves the handlers and makes sure the cache has informers for the
kinds they read; `webhook_configurations(client_config)` renders the Mutating- and
ValidatingWebhookConfiguration for the same table, so a path can never be served without being
configured or configured without being served. Paths and webhook names follow controller-runtime's
convention (`/validate-ome-io-v1beta1-<kind>`), as OME's Go manager names them.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from ome.api import resources
from ome.api.resources import Resource
from ome.config import inferenceservice_config as isvc_config
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.framework.cache import SharedCache
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import (
    basemodel_validation,
    benchmarkjob_validation,
    inferencereplica_validation,
    inferenceservice_defaults,
    inferenceservice_validation,
    pod_mutation,
    policy_deletion,
    servingruntime_validation,
)
from ome.webhooks.handler import Handler, mutating, validating

Obj = dict[str, Any]
ClientConfig = Callable[[str], Obj]
"""Path -> the webhook's clientConfig (a Service reference or a URL, with the CA bundle)."""

CONFIGURATION_NAME: Final = "inferenceservice.ome.io"
SERVICE_NAME: Final = "ome-webhook-server-service"
SERVICE_NAMESPACE: Final = "ome"
# Below the apiserver's 30 s cap and above the server's own 8 s handler timeout, so a slow handler is
# answered by our server (a clear denial) before the apiserver gives up on it.
TIMEOUT_SECONDS: Final = 10
CACHED_KINDS: Final = (
    resources.CLUSTER_BASE_MODELS,
    resources.BASE_MODELS,
    resources.SERVING_RUNTIMES,
    resources.CLUSTER_SERVING_RUNTIMES,
    resources.INFERENCE_SERVICES,
    resources.INFERENCE_REPLICAS,
    resources.ACCELERATOR_CLASSES,
)
"""What the handlers read: models and runtimes (resolution), services and replicas (replicaRefs), classes."""


@dataclass(frozen=True, slots=True)
class Webhook:
    name: str
    """The webhook's name inside its configuration."""
    path: str
    resource: Resource
    mutating: bool
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    object_selector: Mapping[str, Any] | None = None
    default_namespace_selector: Mapping[str, Any] | None = None
    reinvocation: str = "Never"


def _path(verb: str, res: Resource) -> str:
    return f"/{verb}-{res.group.replace('.', '-')}-{res.version}-{res.kind.lower()}"


def _hook(res: Resource, *, is_mutating: bool, operations: tuple[str, ...] = ("CREATE", "UPDATE")) -> Webhook:
    role = "defaulter" if is_mutating else "validator"
    name = f"{res.kind.lower()}.ome-webhook-server.{role}"
    return Webhook(name, _path("mutate" if is_mutating else "validate", res), res, is_mutating, operations)


_WITH_DELETE: Final = ("CREATE", "UPDATE", "DELETE")
POD_PATH: Final = "/mutate-pods"


WEBHOOKS: Final = (
    _hook(resources.INFERENCE_SERVICES, is_mutating=True),
    _hook(resources.SERVING_RUNTIMES, is_mutating=True),
    _hook(resources.CLUSTER_SERVING_RUNTIMES, is_mutating=True),
    _hook(resources.INFERENCE_SERVICES, is_mutating=False),
    _hook(resources.SERVING_RUNTIMES, is_mutating=False),
    _hook(resources.CLUSTER_SERVING_RUNTIMES, is_mutating=False),
    _hook(resources.INFERENCE_REPLICAS, is_mutating=False),
    _hook(resources.BENCHMARK_JOBS, is_mutating=False),
    _hook(resources.BASE_MODELS, is_mutating=False),
    _hook(resources.CLUSTER_BASE_MODELS, is_mutating=False),
    _hook(resources.AUTOSCALER_POLICIES, is_mutating=False, operations=_WITH_DELETE),
    _hook(resources.ROLLOUT_POLICIES, is_mutating=False, operations=_WITH_DELETE),
    # The pod webhook, named and placed as v1.3's: OME's serving pods only, never a control plane's.
    Webhook(
        "inferenceservice.ome-webhook-server.pod-mutator",
        POD_PATH,
        resources.PODS,
        True,
        ("CREATE",),
        object_selector={"matchExpressions": [{"key": "ome.io/inferenceservice", "operator": "Exists"}]},
        default_namespace_selector={
            "matchExpressions": [{"key": "control-plane", "operator": "DoesNotExist"}]
        },
        reinvocation="IfNeeded",
    ),
)


def handlers(reader: inferenceservice_validation.Reader,
             pod_settings: pod_mutation.PodSettings | pod_mutation.PodSettingsSource | None = None,
             ) -> dict[str, Handler]:
    """Path -> AdmissionReview handler, for the server and for tests that call handlers directly.
    `pod_settings`: what the pod webhook reads from inferenceservice-config (None: the chart's defaults)."""
    isvc, sr, csr = (
        resources.INFERENCE_SERVICES,
        resources.SERVING_RUNTIMES,
        resources.CLUSTER_SERVING_RUNTIMES,
    )
    by_path: dict[str, Handler] = {
        _path("mutate", isvc): mutating(isvc.kind, inferenceservice_defaults.default_inference_service),
        _path("validate", isvc): validating(
            isvc.kind, partial(inferenceservice_validation.validate, reader=reader)
        ),
        _path("validate", resources.INFERENCE_REPLICAS): validating(
            resources.INFERENCE_REPLICAS.kind, inferencereplica_validation.validate
        ),
        _path("validate", resources.BENCHMARK_JOBS): validating(
            resources.BENCHMARK_JOBS.kind, benchmarkjob_validation.validate
        ),
        _path("validate", resources.AUTOSCALER_POLICIES): validating(
            resources.AUTOSCALER_POLICIES.kind,
            partial(policy_deletion.validate_autoscaler_policy, reader=reader),
            judges_delete=True,
        ),
        _path("validate", resources.ROLLOUT_POLICIES): validating(
            resources.ROLLOUT_POLICIES.kind,
            partial(policy_deletion.validate_rollout_policy, reader=reader),
            judges_delete=True,
        ),
    }
    for model in (resources.BASE_MODELS, resources.CLUSTER_BASE_MODELS):
        by_path[_path("validate", model)] = validating(
            model.kind, partial(basemodel_validation.validate, kind=model.kind))
    pods = pod_settings or pod_mutation.PodSettings()
    by_path[POD_PATH] = mutating(resources.PODS.kind, partial(pod_mutation.mutate_pod, settings=pods))
    for res in (sr, csr):
        by_path[_path("mutate", res)] = mutating(res.kind, inferenceservice_defaults.default_serving_runtime)
        by_path[_path("validate", res)] = validating(
            res.kind, partial(servingruntime_validation.validate, reader=reader)
        )
    return by_path


def register_webhooks(server: WebhookServer, cache: SharedCache,
                      config: InferenceServiceConfig | None = None,
                      config_namespace: str | None = None) -> None:
    """Serve every OME webhook on `server`, reading from `cache` (informers are added for what they read)."""
    for res in CACHED_KINDS:
        cache.informer_for(res)
    # The pod webhook follows inferenceservice-config (watched in its namespace; `config`, the manager's
    # start config, until the cache has it), and reads FineTunedWeights from the cache.
    cache.informer_for(resources.FINE_TUNED_WEIGHTS)
    namespace = config_namespace or isvc_config.config_namespace()
    cache.informer_for(resources.CONFIGMAPS, namespace=namespace,
                       field_selector=f"metadata.name={isvc_config.CONFIGMAP_NAME}")
    pods = pod_mutation.PodSettingsSource(
        lambda: cache.get_or_none(resources.CONFIGMAPS, isvc_config.CONFIGMAP_NAME, namespace),
        config or InferenceServiceConfig(),
        lambda name: cache.get_or_none(resources.FINE_TUNED_WEIGHTS, name))
    for path, handler in handlers(cache, pods).items():
        server.register(path, handler)


def service_client_config(
    ca_bundle: bytes | None = None,
    *,
    name: str = SERVICE_NAME,
    namespace: str = SERVICE_NAMESPACE,
    port: int = 443,
) -> ClientConfig:
    """clientConfig for the in-cluster Service in front of the manager's webhook server."""

    def config(path: str) -> Obj:
        cfg: Obj = {"service": {"name": name, "namespace": namespace, "path": path, "port": port}}
        if ca_bundle:
            cfg["caBundle"] = base64.b64encode(ca_bundle).decode("ascii")
        return cfg

    return config


def url_client_config(base_url: str, ca_bundle: bytes) -> ClientConfig:
    """clientConfig for a server the apiserver reaches by URL, such as a manager outside the cluster."""
    bundle = base64.b64encode(ca_bundle).decode("ascii")
    return lambda path: {"url": base_url.rstrip("/") + path, "caBundle": bundle}


def webhook_configurations(
    client_config: ClientConfig,
    *,
    name: str = CONFIGURATION_NAME,
    namespace_selector: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[Obj, Obj]:
    """(MutatingWebhookConfiguration, ValidatingWebhookConfiguration) for every webhook in WEBHOOKS."""
    metadata: Obj = {"name": name, **({"labels": dict(labels)} if labels else {})}
    mutating_hooks = [_entry(h, client_config, namespace_selector) for h in WEBHOOKS if h.mutating]
    validating_hooks = [_entry(h, client_config, namespace_selector) for h in WEBHOOKS if not h.mutating]
    group = "admissionregistration.k8s.io/v1"
    return (
        {
            "apiVersion": group,
            "kind": "MutatingWebhookConfiguration",
            "metadata": metadata,
            "webhooks": mutating_hooks,
        },
        {
            "apiVersion": group,
            "kind": "ValidatingWebhookConfiguration",
            "metadata": dict(metadata),
            "webhooks": validating_hooks,
        },
    )


def _entry(hook: Webhook, client_config: ClientConfig, namespace_selector: Mapping[str, Any] | None) -> Obj:
    entry: Obj = {
        "name": hook.name,
        "clientConfig": client_config(hook.path),
        "rules": [
            {
                "apiGroups": [hook.resource.group],
                "apiVersions": [hook.resource.version],
                "operations": list(hook.operations),
                "resources": [hook.resource.plural],
            }
        ],
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": TIMEOUT_SECONDS,
    }
    selector = namespace_selector if namespace_selector is not None else hook.default_namespace_selector
    if selector is not None:
        entry["namespaceSelector"] = dict(selector)
    if hook.object_selector is not None:
        entry["objectSelector"] = dict(hook.object_selector)
    if hook.mutating:
        entry["reinvocationPolicy"] = hook.reinvocation
    return entry
