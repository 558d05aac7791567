"""The reconciler with ingress creation on and Gateway API: routes once components are ready, IngressReady
from the routes' parent status, the URLs, the default and the intent policy, mode switches and conflicts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.controllers.inferenceservice import routing
from ome.framework import errors
from ome.framework.reconcile import Request, RetryError
from ome.resolution import components
from ome.resolution import traffic_policy as tp
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("fixed_resolution")
NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
REQ = Request("demo", "llama")
ENVOY = routing.RoutingFacts(http_routes=True, translator=tp.ENVOY)


def gateway_config(**entry: Any) -> InferenceServiceConfig:
    base = {"disableIngressCreation": False, "enableGatewayAPI": True, "ingressDomain": "example.com",
            "omeIngressGateway": "envoy-gateway-system/ome-gateway", "sharedHostPrefix": "llm"}
    return parse({"ingress": json.dumps({**base, **entry})})


def reconciler(world: FakeWorld, recorder: FakeRecorder, config: InferenceServiceConfig,
               facts: routing.RoutingFacts = ENVOY) -> Any:
    return make_reconciler(world, recorder, config=config, now=NOW, routing_facts=facts)


def available(world: FakeWorld, name: str = "llama-engine") -> None:
    dep = world.get_or_none(r.DEPLOYMENTS, name, "demo")
    assert dep is not None
    dep["status"] = {"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}


def ingress_ready(world: FakeWorld) -> tuple[str, str, str]:
    obj = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert obj is not None
    cond = next(c for c in obj["status"]["conditions"] if c["type"] == "IngressReady")
    return cond["status"], cond.get("reason", ""), cond.get("message", "")


def accept(world: FakeWorld, name: str) -> None:
    route = world.get_or_none(r.HTTP_ROUTES, name, "demo")
    assert route is not None
    route["status"] = {"parents": [{"parentRef": ref, "controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
                                    "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted"}]}
                                   for ref in route["spec"]["parentRefs"]]}


def names(world: FakeWorld, res: r.Resource) -> set[str]:
    return {name for (kind, _, name) in world.objects if kind == res.name}


async def test_routes_wait_for_the_engine_then_for_the_gateway() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    rc = reconciler(world, recorder, gateway_config())
    await rc.reconcile(REQ)
    assert names(world, r.HTTP_ROUTES) == set()
    assert ingress_ready(world) == ("False", "ComponentNotReady", "engine component not ready for HTTPRoute creation")
    assert names(world, tp.BACKEND_TRAFFIC_POLICIES) == {"llama"}  # the default policy comes at once
    available(world)
    await rc.reconcile(REQ)
    assert names(world, r.HTTP_ROUTES) == {"llama", "llama-engine"}
    assert ingress_ready(world) == ("False", "ParentStatusNotAvailable",
                                    "engine HTTPRoute awaiting gateway programming")
    await rc.reconcile(REQ)  # the route watch brings the route back: no gateway has reported
    assert ingress_ready(world) == ("False", "ParentStatusNotAvailable", "Engine HttpRouteNotReady")
    accept(world, "llama-engine")
    await rc.reconcile(REQ)
    assert ingress_ready(world) == ("False", "ParentStatusNotAvailable", "TopLevel HttpRouteNotReady")
    accept(world, "llama")
    writes = len(world.writes)
    await rc.reconcile(REQ)
    assert ingress_ready(world) == ("True", "", "")
    status = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")["status"]  # type: ignore[index]
    assert status["url"] == "http://llm.example.com/demo/llama/"
    assert status["address"] == {"url": "http://llama-engine.demo.svc.cluster.local"}
    assert status["addresses"] == [{"url": "http://llm.example.com/demo/llama/"},
                                   {"name": "cluster-local", "url": "http://llama-engine.demo.svc.cluster.local"}]
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["status"] == "True"
    assert "traffic" not in status  # no intent: no status.traffic, even with the default policy
    assert names(world, r.SERVICES) == {"llama-engine"}  # no external Service with ingress on
    before = len(world.writes)
    await rc.reconcile(REQ)
    assert world.writes[before:] == [] and before > writes  # a no-op reconcile writes nothing


async def test_rejected_route_reports_the_gateway_reason() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    rc = reconciler(world, recorder, gateway_config())
    await rc.reconcile(REQ)
    available(world)
    await rc.reconcile(REQ)
    route = world.get_or_none(r.HTTP_ROUTES, "llama-engine", "demo")
    assert route is not None
    route["status"] = {"parents": [{"parentRef": route["spec"]["parentRefs"][0], "conditions": [
        {"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners",
         "message": "No listeners included by this parent ref allowed this attachment."}]}]}
    await rc.reconcile(REQ)
    assert ingress_ready(world) == ("False", "NotAllowedByListeners",
                                    "Engine No listeners included by this parent ref allowed this attachment.")


async def test_missing_gateway_api_crds_are_a_clear_condition() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    rc = reconciler(world, recorder, gateway_config(), routing.RoutingFacts())
    await rc.reconcile(REQ)
    status, reason, message = ingress_ready(world)
    assert (status, reason) == ("False", "GatewayAPINotInstalled")
    assert "install the Gateway API CRDs, then restart the controller" in message


async def test_default_policy_needs_envoy_gateway() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    rc = reconciler(world, recorder, gateway_config(), routing.RoutingFacts(http_routes=True, translator=tp.ISTIO))
    await rc.reconcile(REQ)
    available(world)
    await rc.reconcile(REQ)
    accept(world, "llama")
    accept(world, "llama-engine")
    await rc.reconcile(REQ)
    assert names(world, r.HTTP_ROUTES) == {"llama", "llama-engine"}  # the routes are still written
    assert ingress_ready(world)[:2] == ("False", "BackendTrafficPolicyNotInstalled")


async def test_switching_modes_leaves_only_the_current_mode_objects() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    gateway = reconciler(world, recorder, gateway_config())
    await gateway.reconcile(REQ)
    available(world)
    await gateway.reconcile(REQ)
    assert names(world, r.HTTP_ROUTES) == {"llama", "llama-engine"}
    plain_ingress = reconciler(world, recorder, gateway_config(enableGatewayAPI=False))
    await plain_ingress.reconcile(REQ)
    assert names(world, r.HTTP_ROUTES) == set() and names(world, tp.BACKEND_TRAFFIC_POLICIES) == set()
    assert names(world, r.INGRESSES) == {"llama"}
    off = reconciler(world, recorder, InferenceServiceConfig())
    await off.reconcile(REQ)
    assert names(world, r.INGRESSES) == set()
    assert names(world, r.SERVICES) == {"llama", "llama-engine"}  # the external Service is back


async def test_traffic_intent_replaces_the_default_policy_and_updates() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    isvc = builders.isvc(traffic={"algorithm": "LeastRequest"})
    world.put(r.INFERENCE_SERVICES, isvc)
    rc = reconciler(world, recorder, gateway_config())
    await rc.reconcile(REQ)
    policy = world.get_or_none(tp.BACKEND_TRAFFIC_POLICIES, "llama", "demo")
    assert policy is not None and policy["spec"]["loadBalancer"] == {"type": "LeastRequest"}
    assert "mergeType" not in policy["spec"]
    stored = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert stored is not None
    traffic = stored["status"]["traffic"]
    assert traffic["algorithm"] == "LeastRequest" and traffic["conditions"][0]["reason"] == "Pending"
    stored["spec"]["traffic"] = {"algorithm": "Random"}
    stored["metadata"]["generation"] = 2
    await rc.reconcile(REQ)
    policy = world.get_or_none(tp.BACKEND_TRAFFIC_POLICIES, "llama", "demo")
    assert policy is not None and policy["spec"]["loadBalancer"] == {"type": "Random"}
    stored = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert stored is not None
    del stored["spec"]["traffic"]
    await rc.reconcile(REQ)
    policy = world.get_or_none(tp.BACKEND_TRAFFIC_POLICIES, "llama", "demo")
    assert policy is not None and policy["spec"]["mergeType"] == "StrategicMerge"  # the default is back
    assert "traffic" not in world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")["status"]  # type: ignore[index]


async def test_istio_writes_a_destination_rule_with_ingress_off_and_deletes_it_without_intent() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc(annotations={"ome.io/circuit-breaker-max-connections": "64"}))
    rc = reconciler(world, recorder, InferenceServiceConfig(), routing.RoutingFacts(translator=tp.ISTIO))
    await rc.reconcile(REQ)
    rule = world.get_or_none(tp.DESTINATION_RULES, "llama", "demo")
    assert rule is not None and rule["spec"] == {
        "host": "llama.demo.svc.cluster.local",
        "trafficPolicy": {"connectionPool": {"tcp": {"maxConnections": 64}}}}
    stored = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert stored is not None
    assert stored["status"]["traffic"]["backendPolicyResource"]["kind"] == "DestinationRule"
    rule["status"] = {"conditions": [{"type": "Reconciled", "status": "True"}]}
    await rc.reconcile(REQ)
    stored = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert stored is not None
    ready = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")["status"]["traffic"]["conditions"][0]  # type: ignore[index]
    assert (ready["status"], ready["reason"]) == ("True", "AcceptedByGateway")
    stored["metadata"]["annotations"] = {}
    await rc.reconcile(REQ)
    assert names(world, tp.DESTINATION_RULES) == set()


async def test_no_translator_reports_it_in_status() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc(traffic={"algorithm": "RoundRobin"}))
    await reconciler(world, recorder, InferenceServiceConfig(), routing.RoutingFacts()).reconcile(REQ)
    stored = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert stored is not None
    ready = stored["status"]["traffic"]["conditions"][0]
    assert (ready["type"], ready["status"], ready["reason"]) == (
        "BackendPolicyReady", "False", "NoTranslatorAvailable")


async def test_hand_authored_policy_is_not_overwritten() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc(traffic={"algorithm": "RoundRobin"}))
    mine = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "BackendTrafficPolicy",
            "metadata": {"name": "llama", "namespace": "demo"}, "spec": {"targetRefs": []}}
    world.put(tp.BACKEND_TRAFFIC_POLICIES, mine)
    rc = reconciler(world, recorder, gateway_config())
    with pytest.raises(RetryError):
        await rc.reconcile(REQ)
    assert recorder.events[-1] == (
        "Warning", "TrafficReconcileError",
        "backend policy with the OME-managed name exists but is not owned by this InferenceService: "
        "demo/llama already exists with no controller owner reference (hand-authored)")
    assert world.get_or_none(tp.BACKEND_TRAFFIC_POLICIES, "llama", "demo")["spec"] == {"targetRefs": []}  # type: ignore[index]


async def test_ingress_overrides_apply_to_the_kubernetes_ingress() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc(annotations={
        "ome.io/ingress-domain": "internal.example.com"}))
    rc = reconciler(world, recorder, gateway_config(enableGatewayAPI=False))
    await rc.reconcile(REQ)
    available(world)
    await rc.reconcile(REQ)
    ing = world.get_or_none(r.INGRESSES, "llama", "demo")
    assert ing is not None and ing["spec"]["rules"][0]["host"] == "llama.demo.internal.example.com"
    assert ingress_ready(world) == ("True", "", "")


class RejectingWriter:
    """The world, except that the API server rejects backend policies (say, a bad pass-through type)."""

    def __init__(self, world: FakeWorld) -> None:
        self.world = world

    async def apply(self, res: r.Resource, obj: Obj, **kwargs: Any) -> Obj:
        if res == tp.BACKEND_TRAFFIC_POLICIES:
            raise errors.Invalid(422, "Invalid", 'spec.retry.numRetries: Invalid value: "string"')
        return await self.world.apply(res, obj, **kwargs)

    async def delete(self, res: r.Resource, name: str, namespace: str | None = None, **kwargs: Any) -> Any:
        return await self.world.delete(res, name, namespace, **kwargs)

    async def create(self, res: r.Resource, obj: Obj, namespace: str | None = None) -> Obj:
        return await self.world.create(res, obj, namespace)


async def test_a_policy_the_api_server_rejects_is_an_event_and_a_retry() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc(annotations={"ome.io/btp.retry.numRetries": "x"}))
    rc = make_reconciler(world, recorder, config=InferenceServiceConfig(), now=NOW, routing_facts=ENVOY,
                         writer=RejectingWriter(world))
    with pytest.raises(RetryError):
        await rc.reconcile(REQ)
    [(kind, reason, message)] = [e for e in recorder.events if e[1] == "TrafficReconcileError"]
    assert kind == "Warning" and message.startswith("failed to apply BackendTrafficPolicy demo/llama:")
    assert "status" not in world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")  # type: ignore[operator]


async def test_consistent_hash_headers_annotation_changes_the_default_policy() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc(annotations={
        "ome.io/ingress-consistent-hash-headers": "x-tenant, x-user"}))
    await reconciler(world, recorder, gateway_config()).reconcile(REQ)
    policy = world.get_or_none(tp.BACKEND_TRAFFIC_POLICIES, "llama", "demo")
    assert policy is not None
    assert policy["spec"]["loadBalancer"]["consistentHash"]["headers"] == [{"name": "x-tenant"}, {"name": "x-user"}]


def test_an_omenative_component_with_a_serving_instance_backs_its_route() -> None:
    isvc = builders.isvc(deploymentMode="OMENative")
    [plan] = components.build_plans(isvc, builders.runtime(), None, InferenceServiceConfig())
    serving = {"status": {"replicas": 2, "readyReplicas": 1, "servingReplicas": 1}}
    assert routing.can_back_route(plan, serving, ready=False)
    assert not routing.can_back_route(plan, {"status": {"replicas": 2, "readyReplicas": 0}}, ready=False)


class Served:
    def __init__(self, *kinds: str) -> None:
        self.kinds = kinds

    async def is_served(self, res: r.Resource, *, timeout: float | None = None) -> bool:
        return res.kind in self.kinds


async def test_detect_prefers_envoy_gateway_then_istio() -> None:
    both = await routing.detect(Served("HTTPRoute", "BackendTrafficPolicy", "DestinationRule"))
    assert both == routing.RoutingFacts(http_routes=True, translator=tp.ENVOY)
    assert (await routing.detect(Served("DestinationRule"))).translator == tp.ISTIO
    assert await routing.detect(Served()) == routing.RoutingFacts(http_routes=False, translator=tp.NOOP)
