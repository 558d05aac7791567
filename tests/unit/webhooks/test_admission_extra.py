"""Admission rows B20, B24, B25: InferenceService annotations, runtime presets/profiles/inheritance,
BenchmarkJob embeddings scenarios; each message quoted from the v1.3 docs (or v1.3's text where the docs
name only the reason)."""

from __future__ import annotations

import base64
from typing import Any

import jsonpatch
import orjson
import pytest

from ome.api import resources
from ome.webhooks import annotation_validation, registry
from tests.unit.resolution.fake_reader import FakeReader, entry, isvc, model, runtime
from tests.unit.webhooks.reviews import call, review

CBM, CSR, SR = resources.CLUSTER_BASE_MODELS, resources.CLUSTER_SERVING_RUNTIMES, resources.SERVING_RUNTIMES
ISVC_PATH = "/validate-ome-io-v1beta1-inferenceservice"
SR_PATH = "/validate-ome-io-v1beta1-servingruntime"
CSR_PATH = "/validate-ome-io-v1beta1-clusterservingruntime"
CSR_MUTATE = "/mutate-ome-io-v1beta1-clusterservingruntime"
BJ_PATH = "/validate-ome-io-v1beta1-benchmarkjob"
Obj = dict[str, Any]


def run(path: str, kind: str, obj: Obj, reader: FakeReader | None = None) -> Obj:
    world = reader or FakeReader((CBM, model("llama")), (CSR, runtime("vllm-llama")))
    return call(registry.handlers(world)[path], review(kind, obj))


def annotated(**annotations: str) -> Obj:
    svc = isvc(model={"name": "llama"}, engine={"minReplicas": 1})
    svc["metadata"]["annotations"] = annotations
    return svc


def denied(answer: Obj) -> str:
    assert answer["allowed"] is False, answer
    return str(answer["status"]["message"])


# -- InferenceService annotations (labels-and-annotations.md intro; traffic-annotations.md) -------------


def test_docs_example_typo_names_the_closest_key() -> None:
    message = denied(run(ISVC_PATH, "InferenceService", annotated(**{"ome.io/retry-attempt": "3"})))
    assert message == (
        'unknown traffic annotation "ome.io/retry-attempt". Did you mean "ome.io/retry-attempts"? '
        "(UnknownTrafficAnnotation)"
    )


@pytest.mark.parametrize(
    ("key", "closest"),
    [
        ("ome.io/revision-histroy-limit", "ome.io/revision-history-limit"),
        ("ome.io/rollout-promot", "ome.io/rollout-promote"),
        ("ome.io/rollout-ready-timout", "ome.io/rollout-ready-timeout"),
        ("ome.io/traffic-drian", "ome.io/traffic-drain"),
    ],
)
def test_keys_within_two_edits_are_rejected(key: str, closest: str) -> None:
    message = denied(run(ISVC_PATH, "InferenceService", annotated(**{key: "1"})))
    assert f'Did you mean "{closest}"?' in message and message.endswith("(UnknownTrafficAnnotation)")


@pytest.mark.parametrize(
    "key",
    [
        "ome.io/rollout-pasued",  # the docs: a misspelling of ome.io/rollout-paused is not caught
        "ome.io/deploymentMode",
        "ome.io/totally-unrelated-at-all",
        "example.com/retry-attempt",
        "ome.io/btp.retry.numRetries",
    ],
)
def test_other_keys_are_not_this_checks_business(key: str) -> None:
    assert run(ISVC_PATH, "InferenceService", annotated(**{key: "5"}))["allowed"] is True


def test_edit_distance_counts_insertions_deletions_substitutions() -> None:
    assert annotation_validation.edit_distance("kitten", "sitting") == 3
    assert annotation_validation.closest_key("ome.io/retry-onn") == "ome.io/retry-on"
    assert annotation_validation.closest_key("ome.io/retry-xxxxx") is None


def test_docs_missing_retry_on_message() -> None:
    message = denied(run(ISVC_PATH, "InferenceService", annotated(**{"ome.io/retry-attempts": "3"})))
    assert message == (
        'annotation "ome.io/retry-attempts" set to 3 requires "ome.io/retry-on" to specify retry conditions '
        "(MissingRetryOn)"
    )


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("ome.io/rollout-promote", "ABC123", "InvalidRolloutPromoteTarget"),
        ("ome.io/rollout-promote", "abc12", "InvalidRolloutPromoteTarget"),
        ("ome.io/rollout-rollback", "yes", "InvalidBoolValue"),
        ("ome.io/rollout-ready-timeout", "20", "InvalidDuration"),
        ("ome.io/revision-history-limit", "ten", "InvalidIntValue"),
        ("ome.io/revision-history-limit", "0", "InvalidIntValue"),
        ("ome.io/timeout-idle", "5 minutes", "InvalidDuration"),
        ("ome.io/circuit-breaker-max-connections", "1k", "InvalidIntValue"),
        ("ome.io/retry-on", "5xx,,reset", "InvalidRetryOn"),
        ("ome.io/retry-on", "503", "InvalidRetryOn"),
        ("ome.io/managed-by-conflict-acked", "True", "InvalidBoolValue"),
    ],
)
def test_values_of_known_keys_are_checked(key: str, value: str, reason: str) -> None:
    message = denied(run(ISVC_PATH, "InferenceService", annotated(**{key: value})))
    assert message.startswith(f'annotation "{key}"') and message.endswith(f"({reason})")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ome.io/rollout-promote", "7f9c4d2b"),
        ("ome.io/rollout-promote", "full"),
        ("ome.io/rollout-rollback", "false"),
        ("ome.io/rollout-ready-timeout", "20m"),
        ("ome.io/rollout-ready-timeout", "1h30m"),
        ("ome.io/revision-history-limit", "3"),
        ("ome.io/rollout-paused", "anything"),  # the webhook doesn't check this value (docs)
        ("ome.io/rollout-repin", "whatever"),
    ],
)
def test_valid_values_pass(key: str, value: str) -> None:
    assert run(ISVC_PATH, "InferenceService", annotated(**{key: value}))["allowed"] is True


def test_short_ready_timeout_is_admitted_with_the_warning() -> None:
    answer = run(ISVC_PATH, "InferenceService", annotated(**{"ome.io/rollout-ready-timeout": "30s"}))
    assert answer["allowed"] is True
    assert (
        'annotation "ome.io/rollout-ready-timeout"=30s is less than 1 minute; most LLM runtimes need longer to '
        "reach Ready (RolloutTimeoutTooShort)"
    ) in answer["warnings"]


def test_docs_sticky_routing_warning() -> None:
    svc = annotated(**{"ome.io/circuit-breaker-per-endpoint-max-connections": "4"})
    svc["spec"]["traffic"] = {"algorithm": "ConsistentHash"}
    answer = run(ISVC_PATH, "InferenceService", svc)
    assert answer["allowed"] is True
    assert answer["warnings"][0] == (
        'annotation "ome.io/circuit-breaker-per-endpoint-max-connections"=4 combined with '
        "traffic.algorithm=ConsistentHash usually defeats sticky routing; set to 1 to keep sessions on a single pod"
    )


# -- runtimes: profiles and inheritance (runtime-inheritance.md "What admission checks") ----------------


def profile(disabled: bool) -> Obj:
    rt = runtime("sglang-profile", disabled=disabled)
    rt["metadata"]["annotations"] = {"ome.io/runtime-profile": "true"}
    return rt


def child(parent: str = "sglang-profile", name: str = "sglang-llama-3-2-3b") -> Obj:
    rt = runtime(name, entry(auto=False), namespace="llama-demo", disabled=False)
    rt["metadata"]["annotations"] = {"ome.io/inherit-from": parent}
    return rt


def test_docs_profile_without_disabled_is_rejected() -> None:
    message = denied(run(CSR_PATH, "ClusterServingRuntime", profile(disabled=False)))
    assert message == 'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'
    assert run(CSR_PATH, "ClusterServingRuntime", profile(disabled=True))["allowed"] is True


def test_docs_child_applied_before_its_profile() -> None:
    message = denied(run(SR_PATH, "ServingRuntime", child(), FakeReader()))
    assert message == 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'


def test_docs_child_after_its_profile_is_admitted() -> None:
    answer = run(SR_PATH, "ServingRuntime", child(), FakeReader((CSR, profile(disabled=True))))
    assert answer["allowed"] is True, answer


def test_docs_self_inheritance_is_a_cycle() -> None:
    message = denied(run(SR_PATH, "ServingRuntime", child(parent="sglang-llama-3-2-3b"), FakeReader()))
    assert message == "inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]"


def test_chain_deeper_than_five_is_rejected() -> None:
    reader = FakeReader((CSR, runtime("r0")))
    for i in range(1, 5):
        rt = runtime(f"r{i}")
        rt["metadata"]["annotations"] = {"ome.io/inherit-from": f"r{i - 1}"}
        reader.put(CSR, rt)
    sixth = runtime("r5")
    sixth["metadata"]["annotations"] = {"ome.io/inherit-from": "r4"}
    assert denied(run(CSR_PATH, "ClusterServingRuntime", sixth, reader)).startswith(
        "inheritance chain exceeds max depth 5"
    )


def test_isvc_naming_a_runtime_with_a_broken_chain_is_rejected_with_the_chain_error() -> None:
    reader = FakeReader((CBM, model("llama")), (SR, child()))
    svc = isvc(
        namespace="llama-demo", model={"name": "llama"}, runtime={"name": "sglang-llama-3-2-3b"}, engine={}
    )
    message = denied(run(ISVC_PATH, "InferenceService", svc, reader))
    assert message.startswith("Runtime sglang-llama-3-2-3b does not support model llama:")
    assert message.endswith(
        'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    )


# -- runtimes: the sglang-pd preset (labels-and-annotations.md, runtime annotations) ----------------------


def preset_runtime(value: str, **spec: Any) -> Obj:
    rt = runtime("pd", **spec)
    rt["metadata"]["annotations"] = {"ome.io/engine": value}
    return rt


def test_unknown_engine_preset_is_denied() -> None:
    message = denied(run(CSR_PATH, "ClusterServingRuntime", preset_runtime("vllm-pd")))
    assert '"ome.io/engine"' in message and "sglang-pd" in message


def test_sglang_pd_preset_fills_unset_fields_and_keeps_the_runtimes_own() -> None:
    own = {"runner": {"name": "ome-container", "image": "my/router:1"}}
    answer = run(CSR_MUTATE, "ClusterServingRuntime", preset_runtime("sglang-pd", routerConfig=own))
    patch = jsonpatch.JsonPatch(orjson.loads(base64.b64decode(answer["patch"])))
    spec = patch.apply(preset_runtime("sglang-pd", routerConfig=own))["spec"]
    engine, decoder, router = (spec[k]["runner"] for k in ("engineConfig", "decoderConfig", "routerConfig"))
    assert engine["image"] == decoder["image"] == "lmsysorg/sglang:latest"
    assert engine["ports"][0]["containerPort"] == decoder["ports"][0]["containerPort"] == 30000
    assert "--disaggregation-mode=prefill" in engine["args"]
    assert "--disaggregation-bootstrap-port=8998" in engine["args"]
    assert "--disaggregation-mode=decode" in decoder["args"]
    assert router["image"] == "my/router:1"  # the runtime's own field wins
    assert router["ports"][0]["containerPort"] == 30080


def test_no_preset_without_the_annotation() -> None:
    answer = run(CSR_MUTATE, "ClusterServingRuntime", runtime("plain"))
    patch = orjson.loads(base64.b64decode(answer["patch"])) if answer.get("patch") else []
    assert not any(op["path"].startswith("/spec/engineConfig") for op in patch)


# -- BenchmarkJob text-to-embeddings (benchmarks.md "Traffic scenarios") --------------------------------


def job(**spec: Any) -> Obj:
    base: Obj = {
        "endpoint": {"inferenceService": {"name": "svc", "namespace": "demo"}},
        "task": "text-to-embeddings",
        "outputLocation": {"storageUri": "pvc://results/x"},
    }
    base.update(spec)
    return {"metadata": {"name": "b", "namespace": "demo"}, "spec": base}


def test_embeddings_take_only_the_two_number_form() -> None:
    assert run(BJ_PATH, "BenchmarkJob", job(trafficScenarios=["E(64,64)"]))["allowed"] is True
    assert "invalid traffic scenarios" in denied(
        run(BJ_PATH, "BenchmarkJob", job(trafficScenarios=["E(64)"]))
    )


def test_embeddings_without_scenarios_are_rejected() -> None:
    assert "trafficScenarios" in denied(run(BJ_PATH, "BenchmarkJob", job()))
    assert run(BJ_PATH, "BenchmarkJob", job(task="text-to-text"))["allowed"] is True


# -- AutoscalerPolicy / RolloutPolicy in-use delete protection (row B26) ---------------------------------

ASP_PATH = "/validate-ome-io-v1beta1-autoscalerpolicy"
RP_PATH = "/validate-ome-io-v1beta1-rolloutpolicy"
ISVCS = resources.INFERENCE_SERVICES


def policy(kind: str, name: str, **annotations: str) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": "llama-demo",
        **({"annotations": annotations} if annotations else {}),
    }
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": {}}


def delete(path: str, obj: Obj, reader: FakeReader) -> Obj:
    return call(registry.handlers(reader)[path], review(obj["kind"], None, old=obj, operation="DELETE"))


def test_docs_autoscaler_policy_in_use_delete_message() -> None:
    svc = isvc("llama-3-2-1b-instruct", "llama-demo", engine={"autoscalerPolicyRef": {"name": "queue-depth"}})
    other = isvc("other", "llama-demo", engine={"autoscalerPolicyRef": {"name": "cpu-60"}})
    elsewhere = isvc("x", "another-ns", engine={"autoscalerPolicyRef": {"name": "queue-depth"}})
    reader = FakeReader((ISVCS, svc), (ISVCS, other), (ISVCS, elsewhere))
    message = denied(delete(ASP_PATH, policy("AutoscalerPolicy", "queue-depth"), reader))
    assert message == (
        'AutoscalerPolicy "queue-depth" is referenced by 1 component(s): llama-3-2-1b-instruct/engine; remove the '
        'refs first, or set the ome.io/allow-in-use-delete="true" annotation to force deletion'
    )
    forced = policy("AutoscalerPolicy", "queue-depth", **{"ome.io/allow-in-use-delete": "true"})
    assert delete(ASP_PATH, forced, reader)["allowed"] is True
    assert delete(ASP_PATH, policy("AutoscalerPolicy", "unused"), reader)["allowed"] is True


def test_docs_rollout_policy_in_use_delete_message_names_at_most_ten() -> None:
    group = {"components": ["engine"], "policyRef": {"name": "canary-strict", "progression": "canary"}}
    reader = FakeReader((ISVCS, isvc("llama-chat", "llama-demo", rollout={"groups": [group]})))
    message = denied(delete(RP_PATH, policy("RolloutPolicy", "canary-strict"), reader))
    assert message == (
        'RolloutPolicy "canary-strict" is referenced by 1 InferenceService(s): llama-chat; remove the refs first, '
        'or set the ome.io/allow-in-use-delete="true" annotation to force deletion'
    )
    for i in range(11):
        reader.put(ISVCS, isvc(f"svc-{i:02d}", "llama-demo", rollout={"groups": [group]}))
    message = denied(delete(RP_PATH, policy("RolloutPolicy", "canary-strict"), reader))
    assert "referenced by 12 InferenceService(s): llama-chat, svc-00," in message
    assert "svc-08 and 2 more; remove the refs first" in message


def test_a_service_being_deleted_no_longer_holds_the_policy() -> None:
    svc = isvc("going", "llama-demo", engine={"autoscalerPolicyRef": {"name": "queue-depth"}})
    svc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    reader = FakeReader((ISVCS, svc))
    assert delete(ASP_PATH, policy("AutoscalerPolicy", "queue-depth"), reader)["allowed"] is True


def test_policy_webhooks_are_registered_for_delete() -> None:
    _, validating = registry.webhook_configurations(registry.service_client_config())
    by_name = {h["name"]: h for h in validating["webhooks"]}
    for name in (
        "autoscalerpolicy.ome-webhook-server.validator",
        "rolloutpolicy.ome-webhook-server.validator",
    ):
        assert by_name[name]["rules"][0]["operations"] == ["CREATE", "UPDATE", "DELETE"]


def test_runtime_only_isvc_naming_a_broken_chain_is_rejected_with_the_chain_error() -> None:
    svc = isvc(namespace="llama-demo", runtime={"name": "sglang-llama-3-2-3b"}, engine={})
    message = denied(run(ISVC_PATH, "InferenceService", svc, FakeReader((SR, child()))))
    assert message == 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
