"""Malformed, mistyped, huge and foreign AdmissionReviews: each gets the answer its class calls for.

The class of a body is decided here, independently of the code under test (`expected`): a review the
webhook cannot read must be denied 400 BadRequest with a reason; a review it can read gets the rule's
verdict (allowed, or 403 with the rule's message); nothing ever gets a 500 (that is a crashed rule) or
a traceback. The handlers are fuzzed directly (fast, thousands of cases), and a sample goes through the
real TLS WebhookServer to check the HTTP layer keeps the promise too.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ome.api import resources
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import registry, self_register
from tests.unit.resolution.fake_reader import FakeReader, model, runtime

READER = FakeReader(
    (resources.CLUSTER_BASE_MODELS, model("llama")), (resources.CLUSTER_SERVING_RUNTIMES, runtime("rt"))
)
HANDLERS = registry.handlers(READER)
KINDS = [
    "InferenceService",
    "ServingRuntime",
    "ClusterServingRuntime",
    "InferenceReplica",
    "BenchmarkJob",
    "Pod",
    "AutoscalerPolicy",
    "RolloutPolicy",
    "BaseModel",
    "ClusterBaseModel",
    7,
    None,
]

# What a decoded request can hold: orjson turns integers beyond 64 bits into floats.
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=25,
)
spec_keys = st.sampled_from(
    [
        "model",
        "runtime",
        "engine",
        "decoder",
        "router",
        "replicaRefs",
        "rollout",
        "deploymentMode",
        "scalingPolicy",
        "supportedModelFormats",
        "acceleratorRequirements",
        "parentRef",
        "endpoint",
        "trafficScenarios",
        "outputLocation",
        "modelSizeRange",
        "leader",
        "worker",
        "lifecycle",
    ]
)
specs = st.one_of(json_value, st.dictionaries(spec_keys, json_value, max_size=6))
objects = st.one_of(
    json_value,
    st.fixed_dictionaries(
        {
            "metadata": st.one_of(
                json_value, st.fixed_dictionaries({"name": json_value, "namespace": json_value})
            ),
            "spec": specs,
        }
    ),
)
requests = st.fixed_dictionaries(
    {
        "uid": st.one_of(st.just("u"), json_value),
        "kind": st.one_of(json_value, st.fixed_dictionaries({"kind": st.sampled_from(KINDS)})),
        "operation": st.one_of(st.sampled_from(["CREATE", "UPDATE", "DELETE", "PATCH"]), json_value),
        "object": objects,
        "oldObject": objects,
        "userInfo": st.one_of(json_value, st.fixed_dictionaries({"username": json_value})),
    }
)
reviews = st.one_of(json_value, st.fixed_dictionaries({"request": st.one_of(requests, json_value)}))


OPERATIONS = {"CREATE", "UPDATE", "DELETE", "CONNECT"}
KIND_OF_PATH = {path: "Pod" if path == registry.POD_PATH else
                next(k for k in KINDS if isinstance(k, str) and path.endswith("-" + k.lower()))
                for path in HANDLERS}  # fmt: skip


def expected(path: str, body: Any) -> str:
    """ "malformed", "pass" (DELETE or CONNECT: nothing to check) or "judged", from the admission contract."""
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict):
        return "malformed"
    kind = request.get("kind")
    if not isinstance(kind, dict) or kind.get("kind") != KIND_OF_PATH[path]:
        return "malformed"
    operation = request.get("operation")
    if not isinstance(operation, str) or operation not in OPERATIONS:
        return "malformed"
    objects = {name: request.get(name) for name in ("object", "oldObject")}
    for value in objects.values():
        if value is None:
            continue
        if not isinstance(value, dict):
            return "malformed"
        if any(
            value.get(key) is not None and not isinstance(value[key], dict) for key in ("metadata", "spec")
        ):
            return "malformed"
    if objects["object"] is None and (operation != "DELETE" or objects["oldObject"] is None):
        return "malformed"
    if operation == "UPDATE" and objects["oldObject"] is None:
        return "malformed"
    if operation == "DELETE" and path.endswith("policy"):  # the in-use guards judge deletes
        return "judged"
    return "pass" if operation in ("DELETE", "CONNECT") else "judged"


def assert_answer(path: str, body: Any, answer: Any) -> None:
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert isinstance(response["allowed"], bool) and isinstance(response["uid"], str)
    orjson.dumps(answer)  # serialisable as it stands
    status = response.get("status") or {}
    message = status.get("message", "")
    assert "Traceback" not in message and "internal error" not in message
    outcome = expected(path, body)
    if outcome == "malformed":
        assert response["allowed"] is False
        assert status["code"] == 400 and status["reason"] == "BadRequest" and message
    elif outcome == "pass":
        assert response == {"uid": response["uid"], "allowed": True}
    elif not response["allowed"]:  # judged: the rule's own denial
        assert status["code"] == 403 and status["reason"] == "Forbidden" and message
        uid = body["request"].get("uid")
        assert response["uid"] == (uid if isinstance(uid, str) else "")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(sorted(HANDLERS)), body=reviews)
def test_every_handler_answers_any_review_as_its_class_requires(path: str, body: Any) -> None:
    assert_answer(path, body, asyncio.run(HANDLERS[path](body)))


@settings(max_examples=200, deadline=None)
@given(spec=specs, kind=st.sampled_from(KINDS[:5]))
def test_a_decoded_review_with_any_spec_gets_the_rules_verdict(spec: Any, kind: str) -> None:
    obj = {"metadata": {"name": "x", "namespace": "demo"}, "spec": spec}
    body = {
        "request": {
            "uid": "u",
            "kind": {"kind": kind},
            "operation": "UPDATE",
            "object": obj,
            "oldObject": obj,
            "userInfo": {"username": "alice"},
        }
    }
    for path, handler in HANDLERS.items():
        assert_answer(path, body, asyncio.run(handler(body)))


@settings(max_examples=100, deadline=None)
@given(mode=st.one_of(json_value.filter(lambda v: v is not None), st.text(max_size=12)))
def test_an_unsupported_deployment_mode_gets_the_documented_message(mode: Any) -> None:
    if mode in ("OMENative", "RawDeployment"):
        return
    obj = {"metadata": {"name": "x", "namespace": "demo"}, "spec": {"deploymentMode": mode}}
    body = {
        "request": {"uid": "u", "kind": {"kind": "InferenceService"}, "operation": "CREATE", "object": obj}
    }
    answer = asyncio.run(HANDLERS["/validate-ome-io-v1beta1-inferenceservice"](body))["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 403
    assert answer["status"]["message"] == (
        f"spec.deploymentMode {mode!r} is not supported: use OMENative or RawDeployment"
    )


def test_huge_object_is_answered() -> None:
    engine = {"runner": {"image": "x", "env": [{"name": f"V{i}", "value": "y" * 100} for i in range(20000)]}}
    obj = {
        "metadata": {"name": "huge", "namespace": "demo"},
        "spec": {"model": {"name": "llama" * 50000}, "engine": engine},
    }
    body = {
        "request": {"uid": "u", "kind": {"kind": "InferenceService"}, "operation": "CREATE", "object": obj}
    }
    path = "/validate-ome-io-v1beta1-inferenceservice"
    answer = asyncio.run(HANDLERS[path](body))
    assert_answer(path, body, answer)
    assert len(answer["response"]["status"]["message"]) <= 16384


def test_unknown_kind_is_denied_with_a_reason() -> None:
    body = {"request": {"uid": "u", "kind": {"kind": "Pod"}, "operation": "CREATE", "object": {}}}
    answer = asyncio.run(HANDLERS["/validate-ome-io-v1beta1-benchmarkjob"](body))["response"]
    assert answer["status"] == {
        "code": 400,
        "message": "this webhook admits BenchmarkJob objects, not 'Pod'",
        "reason": "BadRequest",
    }


@pytest.fixture
async def server(tmp_path: Path) -> Any:
    ca = self_register.write_serving_certificate(tmp_path)
    srv = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path))
    for path, handler in HANDLERS.items():
        srv.register(path, handler)
    await srv.start()
    context = ssl.create_default_context(cadata=ca.decode())
    try:
        yield srv, context
    finally:
        await srv.stop()


async def test_server_answers_each_review_as_its_class_requires(server: Any) -> None:
    srv, context = server
    bodies: list[Any] = [
        {
            "request": {
                "uid": "a",
                "kind": {"kind": "InferenceService"},
                "operation": "CREATE",
                "object": "nope",
            }
        },
        {
            "request": {
                "uid": "b",
                "kind": {"kind": "InferenceService"},
                "operation": "CREATE",
                "object": {"metadata": [], "spec": {}},
            }
        },
        {
            "request": {
                "uid": "c",
                "kind": {"kind": "ServingRuntime"},
                "operation": "CREATE",
                "object": {"spec": {"supportedModelFormats": [1, "x", {"priority": []}]}},
            }
        },
        {
            "request": {
                "uid": "d",
                "kind": {"kind": "InferenceService"},
                "operation": "UPDATE",
                "object": {"spec": {"engine": []}},
                "oldObject": 5,
            }
        },
    ]
    async with aiohttp.ClientSession() as session:
        for body in bodies:
            for path in HANDLERS:
                async with session.post(
                    f"https://127.0.0.1:{srv.port}{path}", data=orjson.dumps(body), ssl=context
                ) as resp:
                    assert resp.status == 200
                    answer = orjson.loads(await resp.read())
                    assert_answer(path, body, answer)
                    assert answer["response"]["uid"] == body["request"]["uid"]


def test_a_pod_with_null_metadata_is_answered_by_the_rule() -> None:
    """Found by the fuzz test: `metadata: null` made the pod webhook raise instead of admitting the pod."""
    body = {"request": {"uid": "u", "kind": {"kind": "Pod"}, "operation": "CREATE",
                        "object": {"metadata": None, "spec": {}}, "oldObject": None, "userInfo": None}}
    assert_answer("/mutate-pods", body, asyncio.run(HANDLERS["/mutate-pods"](body)))
