"""e2e: Gateway API ingress and backend traffic policy on the local control plane.

The Gateway API standard-channel CRDs, Envoy Gateway's BackendTrafficPolicy CRD and Istio's DestinationRule
CRD are installed with structural schemas of the fields OME writes (tests/e2e/gateway_crds.py). No gateway controller
runs: the tests write the Gateway's and the routes' status the way one would, to drive IngressReady.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.controllers.inferenceservice import controller as isvc_controller
from ome.controllers.inferenceservice import routing
from ome.devcluster.crds import install_crds
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.reconcile import Request
from ome.resolution import traffic_policy as tp
from tests.e2e import gateway_crds as gateway_crd_defs
from tests.e2e.isvc_support import CountingWriter, catalog, condition, eventually, in_process_manager

Obj = dict[str, Any]
GATEWAYS = resources.register(resources.Resource(
    "gateway.networking.k8s.io", "v1", "Gateway", "gateways", True, frozenset({"status"})))
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="session")
async def gateway_crds(
    kubeconfig: Path, ome_crds: list[str], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[list[str]]:
    async with await Client.from_kubeconfig(str(kubeconfig)) as c:
        names = await install_crds(c, gateway_crd_defs.write(tmp_path_factory.mktemp("gateway-crds")))
        yield names
        for name in names:  # later tests see a cluster without them again
            with contextlib.suppress(errors.NotFound):
                await c.delete(resources.CRDS, name)


class MutableConfig:
    """A config source the test edits, as an edited inferenceservice-config would be."""

    def __init__(self, config: InferenceServiceConfig) -> None:
        self.config = config

    async def current(self) -> InferenceServiceConfig:
        return self.config


@contextlib.asynccontextmanager
async def manager(
    client: Client, source: MutableConfig, facts: routing.RoutingFacts
) -> AsyncIterator[tuple[Controller, CountingWriter]]:
    mgr = in_process_manager(client)
    ctrl = isvc_controller.add_to_manager(mgr, source.config, max_concurrent_reconciles=2,
                                          config_source=source, routing_facts=facts)  # type: ignore[arg-type]
    writer = CountingWriter(client)
    ctrl._reconciler._writer = writer  # type: ignore[attr-defined]
    task = asyncio.create_task(mgr.run())
    try:
        yield ctrl, writer
    finally:
        mgr.stop()
        await asyncio.wait_for(task, 30)


def gateway_config(namespace: str, **entry: Any) -> InferenceServiceConfig:
    base = {"disableIngressCreation": False, "enableGatewayAPI": True, "ingressDomain": "example.com",
            "omeIngressGateway": f"{namespace}/ome-gateway", "sharedHostPrefix": "llm",
            "consistentHashHeaders": ["x-routing-key", "X-SMG-Routing-Key"], "defaultRouteTimeoutSeconds": 0}
    return parse({"ingress": json.dumps({**base, **entry})})


def isvc_body(name: str, spec: Obj, **meta: Any) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": name, **meta},
            "spec": spec}


async def create_gateway(client: Client, namespace: str) -> None:
    """A Gateway whose listener admits routes from every namespace, Accepted and Programmed."""
    await client.create(GATEWAYS, {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "ome-gateway", "namespace": namespace},
        "spec": {"gatewayClassName": "envoy", "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}]},
    }, namespace)
    gateway = await client.get(GATEWAYS, "ome-gateway", namespace)
    generation = gateway["metadata"]["generation"]
    conds = [_cond(t, "True", t, generation) for t in ("Accepted", "Programmed")]
    await client.patch(GATEWAYS, "ome-gateway", {"status": {"conditions": conds}}, namespace,
                       subresource="status")


def _cond(type_: str, status: str, reason: str, generation: int, message: str = "") -> Obj:
    return {"type": type_, "status": status, "reason": reason, "message": message or reason,
            "observedGeneration": generation, "lastTransitionTime": NOW}


async def set_route_status(client: Client, namespace: str, name: str, status: str = "True",
                           reason: str = "Accepted", message: str = "Route is accepted") -> None:
    """What the gateway controller writes on a route it processed: one entry per parentRef."""
    route = await client.get(resources.HTTP_ROUTES, name, namespace)
    generation = route["metadata"]["generation"]
    parents = [{"parentRef": ref, "controllerName": CONTROLLER_NAME, "conditions": [
        _cond("Accepted", status, reason, generation, message),
        _cond("ResolvedRefs", "True", "ResolvedRefs", generation)]} for ref in route["spec"]["parentRefs"]]
    await client.patch(resources.HTTP_ROUTES, name, {"status": {"parents": parents}}, namespace,
                       subresource="status")


async def names(client: Client, res: resources.Resource, namespace: str) -> set[str]:
    items, _ = await client.list(res, namespace)
    return {item["metadata"]["name"] for item in items}


async def ingress_ready(client: Client, namespace: str, name: str) -> tuple[str, str, str]:
    obj = await client.get(resources.INFERENCE_SERVICES, name, namespace)
    cond = condition(obj, "IngressReady") or {}
    return cond.get("status", ""), cond.get("reason", ""), cond.get("message", "")


async def _reason_is(client: Client, namespace: str, name: str, reason: str) -> bool:
    return (await ingress_ready(client, namespace, name))[1] == reason


async def test_start_detects_the_gateway_api_and_envoy_gateway(client: Client, gateway_crds: list[str]) -> None:
    assert "httproutes.gateway.networking.k8s.io" in gateway_crds
    facts = await routing.detect(client)
    assert facts == routing.RoutingFacts(http_routes=True, translator=tp.ENVOY)


async def test_shared_host_routes_and_ingress_ready_from_the_route_status(
    client: Client, namespace: str, gateway_crds: list[str]
) -> None:
    await create_gateway(client, namespace)
    source = MutableConfig(gateway_config(namespace))
    facts = routing.RoutingFacts(http_routes=True, translator=tp.ENVOY)
    async with catalog(client, namespace) as cat, manager(client, source, facts) as (ctrl, writer):
        spec = {"model": {"name": cat.model}, "engine": {"timeoutSeconds": 1800}}
        await client.create(resources.INFERENCE_SERVICES, isvc_body("chat", spec), namespace)

        async def routes_written() -> bool:
            return await names(client, resources.HTTP_ROUTES, namespace) == {"chat", "chat-engine"}

        await eventually(routes_written, timeout=90)
        not_yet = await eventually(lambda: _reason(client, namespace, "ParentStatusNotAvailable"))
        assert not_yet[2] in ("Engine HttpRouteNotReady", "engine HTTPRoute awaiting gateway programming",
                              "TopLevel HttpRouteNotReady", "toplevel HTTPRoute awaiting gateway programming")
        entry = await client.get(resources.HTTP_ROUTES, "chat", namespace)
        assert entry["spec"]["hostnames"] == ["llm.example.com"]
        assert entry["spec"]["parentRefs"][0]["name"] == "ome-gateway"
        [rule] = entry["spec"]["rules"]
        assert rule["matches"][0]["path"] == {"type": "PathPrefix", "value": f"/{namespace}/chat/"}
        assert rule["backendRefs"][0]["name"] == "chat-engine" and rule["backendRefs"][0]["port"] == 8080
        assert rule["timeouts"]["request"] == "1800s"
        assert {"name": "OMe-Isvc-Name", "value": "chat"} in rule["filters"][0]["requestHeaderModifier"]["set"]
        assert rule["filters"][1]["urlRewrite"]["path"] == {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}
        engine = await client.get(resources.HTTP_ROUTES, "chat-engine", namespace)
        assert engine["spec"]["rules"][0]["matches"][0]["path"]["value"] == f"/{namespace}/chat-engine/"
        policy = await client.get(tp.BACKEND_TRAFFIC_POLICIES, "chat", namespace)
        policy["spec"]["loadBalancer"]["consistentHash"].pop("tableSize", None)  # the CRD's default
        assert policy["spec"]["loadBalancer"] == {"type": "ConsistentHash", "consistentHash": {
            "type": "Headers", "headers": [{"name": "x-routing-key"}, {"name": "X-SMG-Routing-Key"}]}}
        assert "chat" not in await names(client, resources.SERVICES, namespace)  # no external Service

        await set_route_status(client, namespace, "chat-engine")
        await eventually(lambda: _reason(client, namespace, "ParentStatusNotAvailable",
                                         "TopLevel HttpRouteNotReady"))
        await set_route_status(client, namespace, "chat")

        async def ready() -> Obj | None:
            obj = await client.get(resources.INFERENCE_SERVICES, "chat", namespace)
            cond = condition(obj, "Ready")
            return obj if cond is not None and cond["status"] == "True" else None

        obj = await eventually(ready, timeout=60)
        assert obj["status"]["url"] == f"http://llm.example.com/{namespace}/chat/"
        assert obj["status"]["addresses"] == [
            {"url": f"http://llm.example.com/{namespace}/chat/"},
            {"name": "cluster-local", "url": f"http://chat-engine.{namespace}.svc.cluster.local"}]
        assert "reason" not in (condition(obj, "IngressReady") or {})
        writes = len(writer.writes)
        ctrl.queue.add(Request(namespace, "chat"))  # a no-op reconcile: routes, policy and status stand
        await asyncio.sleep(2)
        assert writer.writes[writes:] == []

        await set_route_status(client, namespace, "chat-engine", "False", "NotAllowedByListeners",
                               "No listeners included by this parent ref allowed this attachment.")
        rejected = await eventually(lambda: _reason(client, namespace, "NotAllowedByListeners"))
        assert rejected[2] == "Engine No listeners included by this parent ref allowed this attachment."

        await client.delete(resources.INFERENCE_SERVICES, "chat", namespace)

        async def all_gone() -> bool:  # owner references: the garbage collector removes everything
            left = (await names(client, resources.HTTP_ROUTES, namespace)
                    | await names(client, tp.BACKEND_TRAFFIC_POLICIES, namespace))
            return not left

        await eventually(all_gone, timeout=60)


async def _reason(client: Client, namespace: str, reason: str, message: str | None = None,
                  name: str = "chat") -> tuple[str, str, str] | None:
    found = await ingress_ready(client, namespace, name)
    if found[1] == reason and (message is None or found[2] == message):
        return found
    return None


async def test_per_service_host_and_a_traffic_policy_written_and_updated(
    client: Client, namespace: str, gateway_crds: list[str]
) -> None:
    await create_gateway(client, namespace)
    source = MutableConfig(gateway_config(namespace))
    facts = routing.RoutingFacts(http_routes=True, translator=tp.ENVOY)
    async with catalog(client, namespace) as cat, manager(client, source, facts):
        spec = {"model": {"name": cat.model}, "engine": {},
                "traffic": {"algorithm": "ConsistentHash",
                            "consistentHash": {"type": "Header", "headers": [{"name": "x-session-id"}]}}}
        annotations = {"ome.io/ingress-per-isvc-subdomain": "true", "ome.io/circuit-breaker-max-connections": "1024"}
        await client.create(resources.INFERENCE_SERVICES, isvc_body("sticky", spec, annotations=annotations),
                            namespace)

        async def routes_written() -> bool:
            return await names(client, resources.HTTP_ROUTES, namespace) == {"sticky", "sticky-engine"}

        await eventually(routes_written, timeout=90)
        for name in ("sticky", "sticky-engine"):
            route = await client.get(resources.HTTP_ROUTES, name, namespace)
            assert route["spec"]["hostnames"] == [f"sticky.{namespace}.example.com"]
            [rule] = route["spec"]["rules"]
            assert rule["matches"][0]["path"]["value"] == "/"
            assert [f["type"] for f in rule["filters"]] == ["RequestHeaderModifier"]  # no rewrite
        policy = await client.get(tp.BACKEND_TRAFFIC_POLICIES, "sticky", namespace)
        policy["spec"]["loadBalancer"]["consistentHash"].pop("tableSize", None)  # the CRD's default
        assert policy["spec"]["loadBalancer"] == {"type": "ConsistentHash", "consistentHash": {
            "type": "Header", "header": {"name": "x-session-id"}}}
        assert policy["spec"]["circuitBreaker"]["maxConnections"] == 1024
        assert [t["name"] for t in policy["spec"]["targetRefs"]] == ["sticky", "sticky-engine"]

        async def traffic(algorithm: str) -> Obj | None:
            obj = await client.get(resources.INFERENCE_SERVICES, "sticky", namespace)
            found: Obj | None = (obj.get("status") or {}).get("traffic")
            return found if found and found.get("algorithm") == algorithm else None

        status = await eventually(lambda: traffic("ConsistentHash"))
        assert status["backendPolicyResource"] == {"apiVersion": "gateway.envoyproxy.io/v1alpha1",
                                                   "kind": "BackendTrafficPolicy", "name": "sticky"}
        ready = status["conditions"][0]
        assert (ready["type"], ready["status"], ready["reason"]) == ("BackendPolicyReady", "Unknown", "Pending")

        await client.patch(resources.INFERENCE_SERVICES, "sticky", {"spec": {"traffic": {
            "algorithm": "LeastRequest", "consistentHash": None}}}, namespace)

        async def updated() -> bool:
            found = await client.get(tp.BACKEND_TRAFFIC_POLICIES, "sticky", namespace)
            return bool(found["spec"]["loadBalancer"] == {"type": "LeastRequest"})

        await eventually(updated)
        await eventually(lambda: traffic("LeastRequest"))
        url = (await client.get(resources.INFERENCE_SERVICES, "sticky", namespace))["status"]["url"]
        assert url == f"http://sticky.{namespace}.example.com/"


async def test_switching_modes_leaves_only_the_right_objects(
    client: Client, namespace: str, gateway_crds: list[str]
) -> None:
    await create_gateway(client, namespace)
    source = MutableConfig(gateway_config(namespace))
    facts = routing.RoutingFacts(http_routes=True, translator=tp.ENVOY)
    async with catalog(client, namespace) as cat, manager(client, source, facts) as (ctrl, _):
        spec = {"model": {"name": cat.model}, "engine": {}}
        await client.create(resources.INFERENCE_SERVICES, isvc_body("sw", spec), namespace)

        async def objects() -> tuple[set[str], set[str], set[str], set[str]]:
            return (await names(client, resources.HTTP_ROUTES, namespace),
                    await names(client, tp.BACKEND_TRAFFIC_POLICIES, namespace),
                    await names(client, resources.INGRESSES, namespace),
                    await names(client, resources.SERVICES, namespace) & {"sw"})

        async def state(expected: tuple[set[str], set[str], set[str], set[str]]) -> bool:
            return await objects() == expected

        await eventually(lambda: state(({"sw", "sw-engine"}, {"sw"}, set(), set())), timeout=90)
        source.config = gateway_config(namespace, enableGatewayAPI=False, ingressClassName="nginx")
        ctrl.queue.add(Request(namespace, "sw"))
        await eventually(lambda: state((set(), set(), {"sw"}, set())))
        source.config = InferenceServiceConfig()
        ctrl.queue.add(Request(namespace, "sw"))
        await eventually(lambda: state((set(), set(), set(), {"sw"})))
        # A new service's first status waits for it to be Ready (one status write), so poll for it.
        await eventually(lambda: _reason_is(client, namespace, "sw", "IngressDisabled"), timeout=90)
        source.config = gateway_config(namespace)
        ctrl.queue.add(Request(namespace, "sw"))
        await eventually(lambda: state(({"sw", "sw-engine"}, {"sw"}, set(), set())))


async def test_istio_destination_rule_follows_the_reconciled_condition(
    client: Client, namespace: str, gateway_crds: list[str]
) -> None:
    source = MutableConfig(InferenceServiceConfig())  # ingress off: the rule is for the external Service
    facts = routing.RoutingFacts(http_routes=True, translator=tp.ISTIO)
    async with catalog(client, namespace) as cat, manager(client, source, facts):
        annotations = {"ome.io/circuit-breaker-max-connections": "64", "ome.io/retry-attempts": "3",
                       "ome.io/retry-on": "5xx", "ome.io/timeout-idle": "5m"}
        spec = {"model": {"name": cat.model}, "engine": {}}
        await client.create(resources.INFERENCE_SERVICES, isvc_body("dr", spec, annotations=annotations),
                            namespace)
        rule = await eventually(lambda: client.get(tp.DESTINATION_RULES, "dr", namespace), timeout=60)
        assert rule["spec"] == {"host": f"dr.{namespace}.svc.cluster.local", "trafficPolicy": {"connectionPool": {
            "tcp": {"maxConnections": 64}, "http": {"idleTimeout": "5m0s"}}}}
        await client.patch(tp.DESTINATION_RULES, "dr", {"status": {"conditions": [
            {"type": "Reconciled", "status": "True", "lastTransitionTime": NOW}]}}, namespace,
            subresource="status")

        async def accepted() -> Obj | None:
            obj = await client.get(resources.INFERENCE_SERVICES, "dr", namespace)
            conds = ((obj.get("status") or {}).get("traffic") or {}).get("conditions") or []
            ready = next((c for c in conds if c["type"] == "BackendPolicyReady"), {})
            return obj if ready.get("reason") == "AcceptedByGateway" else None

        obj = await eventually(accepted, timeout=60)
        unsupported = next(c for c in obj["status"]["traffic"]["conditions"]
                           if c["type"] == "BackendPolicyUnsupportedFields")
        assert unsupported["message"] == ('translator "istio" does not honor 2 operator-declared annotation(s) '
                                          "[ome.io/retry-attempts ome.io/retry-on]")
