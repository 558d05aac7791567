"""The backend traffic policy: intent, the Envoy Gateway and Istio translations (the documented examples),
pass-throughs, the default BackendTrafficPolicy, and status.traffic with every documented message."""

from __future__ import annotations

from typing import Any

import pytest

from ome.resolution import traffic_policy as tp
from tests.unit.resolution import builders

Obj = dict[str, Any]
NOW = "2026-01-01T00:00:00Z"
DOC_ANNOTATIONS = {
    "ome.io/circuit-breaker-max-connections": "1024",
    "ome.io/circuit-breaker-max-pending-requests": "256",
    "ome.io/retry-attempts": "3",
    "ome.io/retry-on": "connect-failure,reset,5xx",
    "ome.io/retry-per-try-timeout": "30s",
    "ome.io/timeout-idle": "5m",
    "ome.io/timeout-tcp-connect": "10s",
}


def chat(**kwargs: Any) -> Obj:
    return builders.isvc("llama-chat", "llama-demo", **kwargs)


def test_intent_is_spec_traffic_or_a_traffic_annotation_but_not_service_type() -> None:
    assert not tp.has_intent(chat())
    assert not tp.has_intent(chat(annotations={"ome.io/service-type": "LoadBalancer",
                                               "ome.io/load-balancer-ip": "10.0.0.1"}))
    assert tp.has_intent(chat(traffic={"algorithm": "LeastRequest"}))
    assert tp.has_intent(chat(annotations={"ome.io/circuit-breaker-max-connections": "10"}))
    assert tp.has_intent(chat(annotations={"ome.io/dr.outlierDetection.consecutive5xxErrors": "5"}))


def test_envoy_gateway_writes_the_documented_policy_for_the_annotations() -> None:
    found = tp.translate(tp.ENVOY, chat(annotations=DOC_ANNOTATIONS), ["engine"], "cluster.local")
    assert found.policy is not None
    assert found.policy["apiVersion"] == "gateway.envoyproxy.io/v1alpha1"
    assert found.policy["kind"] == "BackendTrafficPolicy" and found.policy["metadata"]["name"] == "llama-chat"
    assert found.policy["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "llama-chat"},
                       {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "llama-chat-engine"}],
        "circuitBreaker": {"maxConnections": 1024, "maxPendingRequests": 256},
        "retry": {"numRetries": 3, "perRetry": {"timeout": "30s"},
                  "retryOn": {"triggers": ["connect-failure", "reset", "5xx"]}},
        "timeout": {"http": {"connectionIdleTimeout": "5m0s"}, "tcp": {"connectTimeout": "10s"}},
    }
    assert found.unsupported_annotations == [] and found.targeted_routes == ["llama-chat", "llama-chat-engine"]


def test_istio_writes_the_documented_destination_rule_and_lists_the_retries() -> None:
    found = tp.translate(tp.ISTIO, chat(annotations=DOC_ANNOTATIONS), ["engine"], "cluster.local")
    assert found.policy is not None
    assert (found.policy["apiVersion"], found.policy["kind"]) == ("networking.istio.io/v1", "DestinationRule")
    assert found.policy["spec"] == {
        "host": "llama-chat.llama-demo.svc.cluster.local",
        "trafficPolicy": {"connectionPool": {
            "tcp": {"maxConnections": 1024, "connectTimeout": "10s"},
            "http": {"http1MaxPendingRequests": 256, "idleTimeout": "5m0s"}}},
    }
    assert tp.unsupported_message(tp.ISTIO, found) == (
        'translator "istio" does not honor 3 operator-declared annotation(s) '
        "[ome.io/retry-attempts ome.io/retry-on ome.io/retry-per-try-timeout]")


@pytest.mark.parametrize(("traffic", "envoy", "istio"), [
    ({"algorithm": "LeastRequest"}, {"type": "LeastRequest"}, {"simple": "LEAST_REQUEST"}),
    ({"algorithm": "RoundRobin"}, {"type": "RoundRobin"}, {"simple": "ROUND_ROBIN"}),
    ({"algorithm": "Random"}, {"type": "Random"}, {"simple": "RANDOM"}),
    ({"algorithm": "ConsistentHash", "consistentHash": {"type": "Header", "headers": [{"name": "x-session-id"}]}},
     {"type": "ConsistentHash", "consistentHash": {"type": "Header", "header": {"name": "x-session-id"}}},
     {"consistentHash": {"httpHeaderName": "x-session-id"}}),
    ({"algorithm": "ConsistentHash", "consistentHash": {"type": "Header", "headers": [
        {"name": "x-tenant-id"}, {"name": "x-session-id"}]}},
     {"type": "ConsistentHash", "consistentHash": {"type": "Headers", "headers": [
         {"name": "x-tenant-id"}, {"name": "x-session-id"}]}},
     {"consistentHash": {"httpHeaderName": "x-tenant-id"}}),
    ({"algorithm": "ConsistentHash", "consistentHash": {"type": "Cookie", "cookie": {
        "name": "session-affinity", "ttlSeconds": 3600}}},
     {"type": "ConsistentHash", "consistentHash": {"type": "Cookie", "cookie": {
         "name": "session-affinity", "ttl": "1h0m0s"}}},
     {"consistentHash": {"httpCookie": {"name": "session-affinity", "ttl": "1h0m0s"}}}),
    ({"algorithm": "ConsistentHash", "consistentHash": {"type": "SourceIP"}},
     {"type": "ConsistentHash", "consistentHash": {"type": "SourceIP"}},
     {"consistentHash": {"useSourceIp": True}}),
])
def test_algorithms_on_both_gateways(traffic: Obj, envoy: Obj, istio: Obj) -> None:
    isvc = chat(traffic=traffic)
    on_envoy = tp.translate(tp.ENVOY, isvc, ["engine"], "cluster.local").policy
    on_istio = tp.translate(tp.ISTIO, isvc, ["engine"], "cluster.local").policy
    assert on_envoy is not None and on_istio is not None
    assert on_envoy["spec"]["loadBalancer"] == envoy
    assert on_istio["spec"]["trafficPolicy"]["loadBalancer"] == istio


def test_endpoint_override_is_envoy_only() -> None:
    isvc = chat(traffic={"algorithm": "LeastRequest", "endpointOverride": {
        "type": "Header", "headers": [{"name": "x-endpoint-hostport"}]}})
    envoy = tp.translate(tp.ENVOY, isvc, ["engine"], "cluster.local")
    assert envoy.policy is not None
    assert envoy.policy["spec"]["loadBalancer"] == {
        "type": "LeastRequest", "endpointOverride": {"extractFrom": [{"header": "x-endpoint-hostport"}]}}
    istio = tp.translate(tp.ISTIO, isvc, ["engine"], "cluster.local")
    assert tp.unsupported_message(tp.ISTIO, istio) == (
        'translator "istio" does not honor 1 typed spec.traffic field(s) [spec.traffic.endpointOverride.type=Header]')


def test_routes_for_decoder_and_router() -> None:
    assert tp.target_routes(chat(), ["engine", "decoder", "router"]) == [
        "llama-chat", "llama-chat-engine", "llama-chat-decoder", "llama-chat-router"]


def test_pass_throughs_convert_values_win_and_the_other_prefix_is_unsupported() -> None:
    isvc = chat(annotations={"ome.io/retry-attempts": "3", "ome.io/retry-on": "connect-failure",
                             "ome.io/btp.retry.numRetries": "5", "ome.io/btp.loadBalancer.slowStart.window": "30s",
                             "ome.io/btp.healthCheck.passive.splitExternalLocalOriginErrors": "true",
                             "ome.io/dr.outlierDetection.consecutive5xxErrors": "5"})
    found = tp.translate(tp.ENVOY, isvc, ["engine"], "cluster.local")
    assert found.policy is not None
    spec = found.policy["spec"]
    assert spec["retry"]["numRetries"] == 5
    assert spec["loadBalancer"] == {"slowStart": {"window": "30s"}}
    assert spec["healthCheck"]["passive"]["splitExternalLocalOriginErrors"] is True
    assert found.unsupported_annotations == ["ome.io/dr.outlierDetection.consecutive5xxErrors"]
    istio = tp.translate(tp.ISTIO, chat(annotations={"ome.io/dr.outlierDetection.consecutive5xxErrors": "5",
                                                     "ome.io/dr.outlierDetection.baseEjectionTime": "30s"}),
                         ["engine"], "cluster.local")
    assert istio.policy is not None
    assert istio.policy["spec"]["trafficPolicy"]["outlierDetection"] == {
        "consecutive5xxErrors": 5, "baseEjectionTime": "30s"}
    assert [tp.convert(v) for v in ("12", "-3", "true", "1.5", "abc", "1")] == [12, -3, True, 1.5, "abc", 1]


def test_bad_values_are_translation_failures() -> None:
    with pytest.raises(tp.TranslationError, match="is not a whole number"):
        tp.translate(tp.ENVOY, chat(annotations={"ome.io/circuit-breaker-max-connections": "many"}), [], "c")
    with pytest.raises(tp.TranslationError, match="not a valid duration"):
        tp.translate(tp.ENVOY, chat(annotations={"ome.io/timeout-idle": "30"}), [], "c")


def test_durations_in_go_normal_form() -> None:
    assert [tp.format_duration(tp.parse_duration(v) or 0) for v in ("5m", "10s", "1m30s", "1h", "500ms", "1.5s")] == [
        "5m0s", "10s", "1m30s", "1h0m0s", "500ms", "1.5s"]
    assert tp.parse_duration("30") is None and tp.parse_duration("") is None


def test_default_policy_hashes_the_entry_route_on_the_headers() -> None:
    policy = tp.default_policy(chat(), ["x-routing-key", "X-SMG-Routing-Key"])
    assert policy["metadata"]["name"] == "llama-chat"
    assert policy["spec"] == {
        "mergeType": "StrategicMerge",
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "llama-chat"}],
        "loadBalancer": {"type": "ConsistentHash", "consistentHash": {"type": "Headers", "headers": [
            {"name": "x-routing-key"}, {"name": "X-SMG-Routing-Key"}]}},
    }


def _ready(traffic: Obj | None) -> Obj:
    assert traffic is not None
    return next(c for c in traffic["conditions"] if c["type"] == "BackendPolicyReady")


def test_status_without_intent_is_absent_and_with_intent_pending() -> None:
    assert tp.status(chat(), tp.ENVOY, None, tp.Acceptance(tp.PENDING), NOW) is None
    isvc = chat(traffic={"algorithm": "ConsistentHash", "consistentHash": {
        "type": "Header", "headers": [{"name": "x-session-id"}]}})
    found = tp.translate(tp.ENVOY, isvc, ["engine"], "cluster.local")
    traffic = tp.status(isvc, tp.ENVOY, found, tp.Acceptance(tp.PENDING), NOW)
    assert traffic is not None
    assert traffic["algorithm"] == "ConsistentHash"
    assert traffic["backendPolicyResource"] == {"apiVersion": "gateway.envoyproxy.io/v1alpha1",
                                                "kind": "BackendTrafficPolicy", "name": "llama-chat"}
    assert traffic["targetedHTTPRoutes"] == ["llama-chat", "llama-chat-engine"]
    assert _ready(traffic) == {"type": "BackendPolicyReady", "status": "Unknown", "reason": "Pending",
                               "message": "backend policy emitted; awaiting gateway acceptance",
                               "lastTransitionTime": NOW, "observedGeneration": 1}
    plain = chat(traffic={"endpointOverride": {"type": "Header", "headers": [{"name": "h"}]}})
    assert tp.status(plain, tp.ENVOY, tp.translate(tp.ENVOY, plain, [], "c"), tp.Acceptance(tp.PENDING),
                     NOW)["algorithm"] == "Default"  # type: ignore[index]


def test_status_reasons_and_messages() -> None:
    isvc = chat(annotations={"ome.io/btp.retry.numRetries": "5"})
    found = tp.translate(tp.ENVOY, isvc, [], "c")
    assert _ready(tp.status(isvc, tp.ENVOY, found, tp.Acceptance(tp.PENDING), NOW))["message"] == (
        "backend policy emitted with 1 pass-through field(s) ([retry.numRetries]); awaiting gateway acceptance")
    assert _ready(tp.status(isvc, tp.NOOP, None, tp.Acceptance(tp.PENDING), NOW))["reason"] == "NoTranslatorAvailable"
    assert _ready(tp.status(isvc, tp.NOOP, None, tp.Acceptance(tp.PENDING), NOW))["message"] == (
        "no Gateway-implementation backend policy CRD installed; traffic intent ignored")
    accepted = _ready(tp.status(isvc, tp.ISTIO, found, tp.Acceptance(tp.ACCEPTED_BY_GATEWAY), NOW))
    assert (accepted["status"], accepted["reason"], accepted["message"]) == (
        "True", "AcceptedByGateway", "backend policy accepted by gateway controller")
    rejected = _ready(tp.status(isvc, tp.ISTIO, found, tp.Acceptance(tp.GATEWAY_REJECTED, "Invalid"), NOW))
    assert (rejected["status"], rejected["reason"], rejected["message"]) == (
        "False", "GatewayRejected", "backend policy rejected by gateway controller: Invalid")
    failed = _ready(tp.status(isvc, tp.ENVOY, found, tp.Acceptance(tp.PENDING), NOW, error="bad value"))
    assert (failed["status"], failed["reason"], failed["message"]) == ("False", "TranslationFailed", "bad value")
    istio = chat(annotations=DOC_ANNOTATIONS)
    traffic = tp.status(istio, tp.ISTIO, tp.translate(tp.ISTIO, istio, [], "c"), tp.Acceptance(tp.PENDING), NOW)
    assert traffic is not None and traffic["backendPolicyResource"]["kind"] == "DestinationRule"
    unsupported = next(c for c in traffic["conditions"] if c["type"] == "BackendPolicyUnsupportedFields")
    assert (unsupported["status"], unsupported["reason"]) == ("True", "UnsupportedField")


def test_condition_keeps_its_transition_time_while_the_status_holds() -> None:
    isvc = chat(traffic={"algorithm": "Random"})
    found = tp.translate(tp.ENVOY, isvc, [], "c")
    first = tp.status(isvc, tp.ENVOY, found, tp.Acceptance(tp.PENDING), NOW)
    isvc["status"] = {"traffic": first}
    again = tp.status(isvc, tp.ENVOY, found, tp.Acceptance(tp.PENDING), "2026-01-02T00:00:00Z")
    assert again == first


def test_acceptance_reads_the_policy_status() -> None:
    reconciled = {"status": {"conditions": [{"type": "Reconciled", "status": "True"}]}}
    assert tp.observe(tp.ISTIO, reconciled).state == tp.ACCEPTED_BY_GATEWAY
    refused = {"status": {"conditions": [{"type": "Reconciled", "status": "False", "reason": "Invalid",
                                          "message": "bad host"}]}}
    assert tp.observe(tp.ISTIO, refused) == tp.Acceptance(tp.GATEWAY_REJECTED, "Invalid", "bad host")
    # Envoy Gateway reports under status.ancestors, which v1.3 does not read: the condition stays Pending.
    ancestors = {"status": {"ancestors": [{"conditions": [{"type": "Accepted", "status": "True"}]}]}}
    assert tp.observe(tp.ENVOY, ancestors).state == tp.PENDING


def test_conflict_message_names_the_hand_authored_policy() -> None:
    existing = {"metadata": {"name": "llama-chat", "namespace": "llama-demo"}}
    assert tp.conflict_message({}, existing) == (
        "backend policy with the OME-managed name exists but is not owned by this InferenceService: "
        "llama-demo/llama-chat already exists with no controller owner reference (hand-authored)")
