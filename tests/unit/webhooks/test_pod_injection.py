"""The pod webhook's container injections (labels-and-annotations.md, "Pods", v1.3) through the AdmissionReview
handler, with the `modelInit`, `servingSidecar`, `fineTunedAdapter` and `metricsAggregator` entries parsed
from an inferenceservice-config as the manager reads it."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import orjson

from ome.config.inferenceservice_config import parse
from ome.webhooks import pod_mutation, registry
from tests.unit.resolution.fake_reader import FakeReader
from tests.unit.webhooks.reviews import call, review

Obj = dict[str, Any]
PATH = "/mutate-pods"
AGENT = {"image": "ghcr.io/moirai-internal/ome-agent:v1.3.0", "compartmentId": "ocid1.compartment.x",
         "authType": "InstancePrincipal", "region": "us-chicago-1", "cpuRequest": "100m", "cpuLimit": "1",
         "memoryRequest": "100Mi", "memoryLimit": "1Gi"}
CONFIG = {"modelInit": json.dumps({**AGENT, "vaultId": "ocid1.vault.x"}),
          "servingSidecar": json.dumps(AGENT), "fineTunedAdapter": json.dumps(AGENT),
          "metricsAggregator": json.dumps({"enableMetricAggregation": "false", "enablePrometheusScraping": "true"})}
WEIGHTS = {"lora-1": {"metadata": {"name": "lora-1"},
                      "spec": {"storage": {"storageUri": "oci://n/ns/b/bucket/o/adapters/lora-1"},
                               "configuration": {}, "hyperParameters": {"strategy": "lora"}}},
           "on-pvc": {"metadata": {"name": "on-pvc"},
                      "spec": {"storage": {"storageUri": "pvc://store/adapters"}, "configuration": {},
                               "hyperParameters": {"strategy": "lora"}}}}


def pod(annotations: dict[str, str], labels: dict[str, str] | None = None, gpus: str | None = None) -> Obj:
    main: Obj = {"name": "ome-container", "image": "x", "securityContext": {"runAsUser": 1000}}
    if gpus:
        main["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "demo",
                         "labels": {"ome.io/inferenceservice": "svc", **(labels or {})},
                         "annotations": annotations},
            "spec": {"containers": [main]}}


def answer(obj: Obj, config: dict[str, str] | None = None) -> Obj:
    settings = pod_mutation.pod_settings(parse(CONFIG if config is None else config), WEIGHTS.get)
    return call(registry.handlers(FakeReader(), settings)[PATH], review("Pod", obj))


def mutated(obj: Obj, config: dict[str, str] | None = None) -> Obj:
    got = answer(obj, config)
    assert got["allowed"] is True, got
    patch = orjson.loads(base64.b64decode(got["patch"])) if got.get("patch") else []
    result: Obj = jsonpatch.JsonPatch(patch).apply(obj)
    return result


def env(container: Obj) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or []}


def test_model_init_gets_the_model_and_the_decryption_settings() -> None:
    """`ome.io/inject-model-init` "Adds the `model-init` init container ... as the `modelInit` key of
    `inferenceservice-config` configures it. The container gets `ome.io/base-model-name`,
    `ome.io/base-model-format`, the three decryption keys below, and the pod label `base-model-type`, or
    `Serving` without it." """
    annotations = {"ome.io/inject-model-init": "true", "ome.io/base-model-name": "llama",
                   "ome.io/base-model-format": "safetensors",
                   "ome.io/base-model-decryption-key-name": "key", "ome.io/base-model-decryption-secret-name": "sec"}
    got = mutated(pod(annotations))
    [init] = got["spec"]["initContainers"]
    assert init["name"] == "model-init" and init["image"] == AGENT["image"]
    assert init["args"] == ["enigma", "--config", "/ome-agent.yaml", "--debug"]
    values = env(init)
    assert values["OME_AGENT_MODEL_NAME"] == "llama" and values["OME_AGENT_MODEL_FRAMEWORK"] == "safetensors"
    assert (values["OME_AGENT_KEY_NAME"], values["OME_AGENT_SECRET_NAME"]) == ("key", "sec")
    assert values["OME_AGENT_DISABLE_MODEL_DECRYPTION"] == "false"  # "The default is `"false"`."
    assert values["OME_AGENT_MODEL_TYPE"] == "Serving"
    assert values["OME_AGENT_VAULT_ID"] == "ocid1.vault.x"
    assert init["securityContext"] == {"runAsUser": 1000}
    assert init["volumeMounts"] == [{"name": "model-empty-dir", "mountPath": "/opt/ml/model"},
                                    {"name": "llama", "mountPath": "/mnt/model"}]
    labelled = mutated(pod(annotations, labels={"base-model-type": "Custom"}))
    assert env(labelled["spec"]["initContainers"][0])["OME_AGENT_MODEL_TYPE"] == "Custom"
    # `"true"`, exactly.
    assert "initContainers" not in mutated(pod({**annotations, "ome.io/inject-model-init": "True"}))["spec"]


def test_a_tensorrt_llm_model_needs_a_gpu_limit() -> None:
    """"For a TensorRT-LLM model it also gets the format version and the GPU count, and the webhook denies a
    pod whose `ome-container` has no `nvidia.com/gpu` limit." """
    annotations = {"ome.io/inject-model-init": "true", "ome.io/base-model-name": "llama",
                   "ome.io/base-model-format": "TensorRT-LLM", "ome.io/base-model-format-version": "0.11"}
    values = env(mutated(pod(annotations, gpus="8"))["spec"]["initContainers"][0])
    assert (values["OME_AGENT_MODEL_FRAMEWORK"], values["OME_AGENT_TENSORRTLLM_VERSION"],
            values["OME_AGENT_NUM_OF_GPU"]) == ("tensorrtllm", "0.11", "8")
    denied = answer(pod(annotations))
    assert denied["allowed"] is False
    assert denied["status"]["message"] == "NVIDIA GPU resource not set for main container"


def test_an_entry_missing_what_the_container_needs_denies_the_pod() -> None:
    """"When an injection fails, the webhook denies the pod" (here: no modelInit vaultId)."""
    config = {**CONFIG, "modelInit": json.dumps(AGENT)}
    got = answer(pod({"ome.io/inject-model-init": "true"}), config)
    assert got["allowed"] is False
    assert got["status"]["message"] == ("failed to validate ModelInitInjector: Key: 'ModelInitInjector.VaultId' "
                                        "Error:Field validation for 'VaultId' failed on the 'required' tag")


def test_serving_sidecar_gets_the_strategy() -> None:
    """`ome.io/inject-serving-sidecar` "Adds the sidecar that the `servingSidecar` key of
    `inferenceservice-config` configures. The sidecar gets `ome.io/fine-tuned-weight-ft-strategy`." """
    got = mutated(pod({"ome.io/inject-serving-sidecar": "true", "ome.io/fine-tuned-weight-ft-strategy": "lora"}))
    sidecar = got["spec"]["containers"][1]
    assert sidecar["name"] == "serving-sidecar"
    assert sidecar["args"] == ["serving-agent", "--config", "/ome-agent.yaml", "--debug"]
    assert env(sidecar)["OME_AGENT_UNZIPPED_FINE_TUNED_WEIGHT_DIRECTORY"] == "/opt/ml/lora"
    assert [m["mountPath"] for m in sidecar["volumeMounts"]] == ["/mnt/finetuned/download", "/opt/ml/lora"]
    assert sidecar["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"},
                                    "requests": {"cpu": "100m", "memory": "100Mi"}}
    without = answer(pod({"ome.io/inject-serving-sidecar": "true"}))
    assert without["allowed"] is False
    assert without["status"]["message"] == "failed to get the fine-tuned weight FT strategy for the serving sidecar"


def test_oke_workload_identity_needs_a_service_account() -> None:
    config = {**CONFIG, "servingSidecar": json.dumps({**AGENT, "authType": "OkeWorkloadIdentity"})}
    annotations = {"ome.io/inject-serving-sidecar": "true", "ome.io/fine-tuned-weight-ft-strategy": "lora"}
    got = answer(pod(annotations), config)
    assert got["status"]["message"] == "a service account should be specified when using OKEWorkloadIdentity"
    with_account = pod(annotations)
    with_account["spec"]["serviceAccountName"] = "sa"
    assert mutated(with_account, config)["spec"]["automountServiceAccountToken"] is True


def test_fine_tuned_adapter_downloads_oci_weights_only_when_the_pod_lacks_it() -> None:
    """`ome.io/inject-fine-tuned-adapter`: "The webhook adds an init container that downloads the adapter from
    OCI Object Storage." """
    got = mutated(pod({"ome.io/inject-fine-tuned-adapter": "lora-1", "ome.io/fine-tuned-weight-ft-strategy": "lora"}))
    [init] = got["spec"]["initContainers"]
    assert init["name"] == "fine-tuned-adapter"
    assert env(init)["OME_AGENT_MODEL_BUCKET_NAME"] == "bucket"
    assert env(init)["OME_AGENT_MODEL_OBJECT_NAME"] == "adapters/lora-1"
    on_pvc = mutated(pod({"ome.io/inject-fine-tuned-adapter": "on-pvc"}))
    assert "initContainers" not in on_pvc["spec"]
    rendered = pod({"ome.io/inject-fine-tuned-adapter": "lora-1"})
    rendered["spec"]["initContainers"] = [{"name": "fine-tuned-adapter", "image": "mine"}]
    assert mutated(rendered)["spec"]["initContainers"] == [{"name": "fine-tuned-adapter", "image": "mine"}]


def test_metrics_aggregator_entry_sets_the_scraping_defaults() -> None:
    """`ome.io/enable-prometheus-scraping`: "When it's absent, the webhook sets it from
    `enablePrometheusScraping` in the same key" ... "`"true"` sets `prometheus.io/port` to 9091"."""
    got = mutated(pod({}))["metadata"]["annotations"]
    assert got["ome.io/enable-prometheus-scraping"] == "true"
    assert (got["prometheus.io/port"], got["prometheus.io/path"]) == ("9091", "/metrics")
    assert parse({"metricsAggregator": '{"enableMetricAggregation": true}'}).metrics_aggregator \
        .enable_metric_aggregation == "true"


def test_metric_aggregation_configures_the_pods_queue_proxy() -> None:
    """`ome.io/enable-metric-aggregation`: "`"true"` configures a container named `queue-proxy`, when the pod
    has one, to aggregate metrics from the port and path in `prometheus.ome.io/port` and
    `prometheus.ome.io/path`, and exposes them on port 9088. OME never creates a `queue-proxy` container." """
    with_proxy = pod({"ome.io/enable-metric-aggregation": "true", "prometheus.ome.io/port": "30000"})
    with_proxy["spec"]["containers"].append({"name": "queue-proxy", "image": "qp"})
    got = mutated(with_proxy)
    proxy = got["spec"]["containers"][1]
    assert env(proxy) == {"CONTAINER_PROMETHEUS_METRICS_PORT": "30000",
                          "CONTAINER_PROMETHEUS_METRICS_PATH": "/metrics",
                          "AGGREGATE_PROMETHEUS_METRICS_PORT": "9088"}
    without = mutated(pod({"ome.io/enable-metric-aggregation": "true"}))
    assert [c["name"] for c in without["spec"]["containers"]] == ["ome-container"]
