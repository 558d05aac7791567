"""Malformed, mistyped, huge and foreign AdmissionReviews: always a well-formed answer, never a 500.

The handlers are fuzzed directly (fast, thousands of cases), and a sample goes through the real TLS
WebhookServer to check the HTTP layer keeps the promise too.
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

from ome.framework import resources
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
    7,
    None,
]

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
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


def assert_well_formed(answer: Any) -> None:
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert isinstance(response["allowed"], bool) and isinstance(response["uid"], str)
    if not response["allowed"]:
        assert response["status"]["code"] in (400, 403, 503)
        assert isinstance(response["status"]["message"], str) and response["status"]["message"]
        assert "Traceback" not in response["status"]["message"]
    orjson.dumps(answer)  # serialisable as it stands


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(sorted(HANDLERS)), body=reviews)
def test_every_handler_answers_any_review(path: str, body: Any) -> None:
    assert_well_formed(asyncio.run(HANDLERS[path](body)))


@settings(max_examples=200, deadline=None)
@given(spec=specs, kind=st.sampled_from(KINDS[:5]))
def test_well_typed_review_with_random_spec(spec: Any, kind: str) -> None:
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
    for handler in HANDLERS.values():
        assert_well_formed(asyncio.run(handler(body)))


def test_huge_object_is_answered() -> None:
    engine = {"runner": {"image": "x", "env": [{"name": f"V{i}", "value": "y" * 100} for i in range(20000)]}}
    obj = {
        "metadata": {"name": "huge", "namespace": "demo"},
        "spec": {"model": {"name": "llama" * 50000}, "engine": engine},
    }
    body = {
        "request": {"uid": "u", "kind": {"kind": "InferenceService"}, "operation": "CREATE", "object": obj}
    }
    answer = asyncio.run(HANDLERS["/validate-ome-io-v1beta1-inferenceservice"](body))
    assert_well_formed(answer)
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


async def test_server_never_answers_500(server: Any) -> None:
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
                    assert_well_formed(answer)
                    assert answer["response"]["uid"] == body["request"]["uid"]
