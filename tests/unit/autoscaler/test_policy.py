"""AutoscalerPolicy rendering: variables, providers, fallback, holds and the policy's own conditions."""

from __future__ import annotations

from typing import Any

import pytest

from ome.config.inferenceservice_config import MetricProvider
from ome.resolution import autoscaler_policy as ap
from ome.resolution.autoscaling import Bounds, PolicyHold, PolicyRendered

Obj = dict[str, Any]

PROVIDERS = {"cluster-prometheus": MetricProvider(serverAddress="http://ome-prometheus.ome.svc:9090")}
CTX = ap.Context("llama-demo", "llama-3-2-1b-instruct", "engine", Bounds(1, 4))
QUERY = ('sum(vllm:num_requests_waiting{namespace="{{ .Namespace }}",inferenceservice="{{ .ISVCName }}",'
         'component="{{ .Component }}"})')


def _queue_depth(**trigger_metadata: str) -> Obj:
    metadata = {"query": QUERY, "threshold": "5", "ignoreNullValues": "false", **trigger_metadata}
    return {
        "metadata": {"name": "queue-depth", "namespace": "llama-demo", "generation": 3},
        "spec": {"class": "KEDA", "keda": {
            "triggers": [{"type": "prometheus", "providerRef": {"name": "cluster-prometheus"},
                          "metricType": "AverageValue", "metadata": metadata}],
            "fallback": {"failureThreshold": 3, "replicas": {"fromComponent": "MaxReplicas"}},
        }},
    }


def _outcome(policy: Obj | None, **kwargs: Any) -> Any:
    options = {"enabled": True, "keda_served": True, "providers": PROVIDERS, **kwargs}
    return ap.outcome("queue-depth", policy, CTX, **options)


def test_documented_queue_depth_policy_renders_server_query_and_fallback() -> None:
    got = _outcome(_queue_depth())
    assert isinstance(got, PolicyRendered) and got.generation == 3
    trigger = got.block["keda"]["triggers"][0]
    assert trigger["metadata"]["serverAddress"] == "http://ome-prometheus.ome.svc:9090"
    assert trigger["metadata"]["query"] == (
        'sum(vllm:num_requests_waiting{namespace="llama-demo",inferenceservice="llama-3-2-1b-instruct",'
        'component="engine"})'
    )
    assert trigger["metricType"] == "AverageValue" and "providerRef" not in trigger
    assert got.block["keda"]["fallback"] == {"failureThreshold": 3, "replicas": 4}


def test_every_variable() -> None:
    text = "{{ .Namespace }}|{{.ISVCName}}|{{ .Component }}|{{ .MinReplicas }}|{{ .MaxReplicas }}|{{ .TargetName }}"
    spec = {"class": "KEDA", "keda": {"triggers": [{"type": "cron", "metadata": {"x": text}}]}}
    block = ap.render(spec, CTX, {})
    assert block["keda"]["triggers"][0]["metadata"]["x"] == (
        "llama-demo|llama-3-2-1b-instruct|engine|1|4|llama-3-2-1b-instruct-engine"
    )


@pytest.mark.parametrize("template", ["{{ .Unknown }}", "{{ printf \"%s\" .Namespace }}", "{{ if .X }}a{{ end }}"])
def test_anything_but_a_variable_is_invalid(template: str) -> None:
    got = _outcome(_queue_depth(query=template))
    assert isinstance(got, PolicyHold) and got.reason == "PolicyInvalid"


def test_unbound_provider_holds_with_policy_invalid() -> None:
    got = _outcome(_queue_depth(), providers={})
    assert isinstance(got, PolicyHold) and got.reason == "PolicyInvalid" and "not bound" in got.detail


def test_trigger_cannot_set_the_server_address_itself() -> None:
    got = _outcome(_queue_depth(serverAddress="http://elsewhere"))
    assert isinstance(got, PolicyHold) and got.reason == "PolicyInvalid"


def test_missing_policy_holds_with_the_documented_detail() -> None:
    got = _outcome(None)
    assert got == PolicyHold("queue-depth", "PolicyNotFound",
                             'AutoscalerPolicy "queue-depth" not found in namespace llama-demo')
    assert ap.hold_event_message("engine", got) == (
        'engine autoscaler is holding last-known-good (PolicyNotFound): AutoscalerPolicy "queue-depth" '
        "not found in namespace llama-demo"
    )


def test_feature_off_holds_with_policy_not_found() -> None:
    got = _outcome(_queue_depth(), enabled=False)
    assert isinstance(got, PolicyHold) and got.reason == "PolicyNotFound"


def test_keda_policy_without_keda_holds_with_class_unavailable() -> None:
    got = _outcome(_queue_depth(), keda_served=False)
    assert isinstance(got, PolicyHold) and got.reason == "ClassUnavailable"


def test_hpa_policy_copies_metrics_and_behavior() -> None:
    spec = {"class": "HPA", "hpa": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}}}
    assert ap.render(spec, CTX, {}) == {"class": "HPA", "hpa": spec["hpa"]}


def test_fixed_fallback_value() -> None:
    spec = {"class": "KEDA", "keda": {"triggers": [{"type": "cron", "metadata": {}}],
                                      "fallback": {"failureThreshold": 2, "replicas": {"value": 2}}}}
    assert ap.render(spec, CTX, {})["keda"]["fallback"] == {"failureThreshold": 2, "replicas": 2}


def test_policy_conditions() -> None:
    assert ap.ready_condition(_queue_depth(), PROVIDERS)[:2] == ("True", "TemplatesValid")
    assert ap.ready_condition(_queue_depth(), {})[:2] == ("False", "ProviderUnknown")
    assert ap.in_use_condition(2)[:2] == ("True", "Attached")
    assert ap.in_use_condition(0)[:2] == ("False", "NoConsumers")
