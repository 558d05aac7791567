"""HTTPRoutes with Gateway API ingress: hosts and paths in both schemes, filters, timeouts, parents,
readiness from the route's parent status, the URLs in status, and the per-service overrides."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ome.config.inferenceservice_config import ConfigError, InferenceServiceConfig, parse
from ome.resolution import components, gateway_routes, ingress_settings
from ome.resolution.ingress_settings import IngressError
from tests.unit.resolution import builders

Obj = dict[str, Any]
DEC_RUNNER = {"runner": {"name": "ome-container", "image": "d:1", "ports": [{"containerPort": 8080}]}}
ROUTER_RUNNER = {"runner": {"name": "router", "image": "r:1", "ports": [{"containerPort": 8000}]}}


def config(**entry: Any) -> InferenceServiceConfig:
    base = {"disableIngressCreation": False, "enableGatewayAPI": True, "ingressDomain": "example.com",
            "omeIngressGateway": "envoy-gateway-system/internal-gateway", "sharedHostPrefix": "llm"}
    return parse({"ingress": json.dumps({**base, **entry})})


def plans(isvc: Obj) -> list[components.ComponentPlan]:
    return components.build_plans(isvc, builders.runtime(decoder_config=DEC_RUNNER, router_config=ROUTER_RUNNER),
                                  None, InferenceServiceConfig())


def routes(isvc: Obj, cfg: InferenceServiceConfig) -> dict[str, Obj]:
    settings = ingress_settings.resolve(isvc, cfg.ingress)
    return {spec.name: gateway_routes.render(isvc, spec, settings)
            for spec in gateway_routes.route_specs(isvc, plans(isvc))}


def summary(route: Obj) -> tuple[list[str], str, str, int]:
    [rule] = route["spec"]["rules"]
    [match] = rule["matches"]
    [backend] = rule["backendRefs"]
    assert match["path"]["type"] == "PathPrefix"
    return route["spec"]["hostnames"], match["path"]["value"], backend["name"], backend["port"]


def test_shared_host_engine_only_gets_the_entry_and_engine_routes() -> None:
    isvc = builders.isvc("llama-chat", "llama-demo")
    found = routes(isvc, config())
    assert set(found) == {"llama-chat", "llama-chat-engine"}
    assert summary(found["llama-chat"]) == (["llm.example.com"], "/llama-demo/llama-chat/", "llama-chat-engine", 8080)
    assert summary(found["llama-chat-engine"]) == (
        ["llm.example.com"], "/llama-demo/llama-chat-engine/", "llama-chat-engine", 8080)
    [rule] = found["llama-chat"]["spec"]["rules"]
    assert rule["filters"] == [
        {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [
            {"name": "OMe-Isvc-Name", "value": "llama-chat"},
            {"name": "OME-Isvc-Namespace", "value": "llama-demo"}]}},
        {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}},
    ]
    assert found["llama-chat"]["spec"]["parentRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "envoy-gateway-system",
         "name": "internal-gateway"}]
    owner = found["llama-chat"]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("InferenceService", "llama-chat", True)


def test_router_and_decoder_each_get_a_route_and_the_entry_goes_to_the_router() -> None:
    isvc = builders.isvc("llama-chat", "llama-demo", decoder={}, router={})
    found = routes(isvc, config())
    assert set(found) == {"llama-chat", "llama-chat-engine", "llama-chat-router", "llama-chat-decoder"}
    assert summary(found["llama-chat"])[1:] == ("/llama-demo/llama-chat/", "llama-chat-router", 8000)
    assert summary(found["llama-chat-router"])[1:] == ("/llama-demo/llama-chat-router/", "llama-chat-router", 8000)
    assert summary(found["llama-chat-decoder"])[1:] == (
        "/llama-demo/llama-chat-decoder/", "llama-chat-decoder", 8080)


def test_empty_shared_host_prefix_gives_the_bare_domain() -> None:
    isvc = builders.isvc("llama-chat", "llama-demo")
    assert summary(routes(isvc, config(sharedHostPrefix=""))["llama-chat"])[0] == ["example.com"]
    # Left out of the ConfigMap, as in a kustomize install, the prefix is empty too.
    bare = parse({"ingress": json.dumps({"disableIngressCreation": False, "enableGatewayAPI": True,
                                         "ingressDomain": "example.com", "omeIngressGateway": "gw/gw"})})
    assert summary(routes(isvc, bare)["llama-chat"])[0] == ["example.com"]


def test_per_service_scheme_uses_the_template_at_root_without_rewrite() -> None:
    isvc = builders.isvc("llama-chat", "prod")
    found = routes(isvc, config(perISVCSubdomain=True))
    for route in found.values():
        assert summary(route)[:2] == (["llama-chat.prod.example.com"], "/")
        [rule] = route["spec"]["rules"]
        assert [f["type"] for f in rule["filters"]] == ["RequestHeaderModifier"]
    other = routes(isvc, config(perISVCSubdomain=True, domainTemplate="{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}"))
    assert summary(other["llama-chat"])[0] == ["llama-chat-prod.example.com"]


def test_annotations_switch_the_scheme_prefix_domain_and_template_for_one_service() -> None:
    on = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-per-isvc-subdomain": "true"})
    assert summary(routes(on, config())["llama-chat"])[:2] == (["llama-chat.prod.example.com"], "/")
    off = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-per-isvc-subdomain": "True"})
    assert summary(routes(off, config(perISVCSubdomain=True))["llama-chat"])[0] == ["llm.example.com"]
    prefix = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-shared-host-prefix": "experimental"})
    assert summary(routes(prefix, config())["llama-chat"])[0] == ["experimental.example.com"]
    bare = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-shared-host-prefix": ""})
    assert summary(routes(bare, config())["llama-chat"])[0] == ["example.com"]
    domain = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-domain": "internal.example.com"})
    assert summary(routes(domain, config())["llama-chat"])[0] == ["llm.internal.example.com"]
    template = builders.isvc("llama-chat", "prod", annotations={
        "ome.io/ingress-per-isvc-subdomain": "true",
        "ome.io/ingress-domain-template": "{{ .Name }}.{{ index .Labels \"team\" }}.{{ .IngressDomain }}"},
        labels={"team": "search"})
    assert summary(routes(template, config())["llama-chat"])[0] == ["llama-chat.search.example.com"]


def test_timeouts_come_from_the_component_else_the_cluster_default() -> None:
    isvc = builders.isvc("q", "q", engine={"timeoutSeconds": 1800})
    found = routes(isvc, config(defaultRouteTimeoutSeconds=600))
    assert {n: r["spec"]["rules"][0]["timeouts"]["request"] for n, r in found.items()} == {
        "q": "1800s", "q-engine": "1800s"}
    plain = builders.isvc("q", "q")
    assert routes(plain, config(defaultRouteTimeoutSeconds=0))["q"]["spec"]["rules"][0]["timeouts"] == {
        "request": "0s"}
    assert "timeouts" not in routes(plain, config())["q"]["spec"]["rules"][0]  # the gateway's default
    routed = builders.isvc("q", "q", engine={"timeoutSeconds": 30}, router={"timeoutSeconds": 90})
    found = routes(routed, config())
    assert found["q"]["spec"]["rules"][0]["timeouts"] == {"request": "90s"}  # the entry route: the router's
    assert found["q-engine"]["spec"]["rules"][0]["timeouts"] == {"request": "30s"}


def test_additional_gateways_add_parents_and_hosts_in_order() -> None:
    extra = [{"omeIngressGateway": "envoy-gateway-system/external-gateway", "ingressDomain": "external.example.com",
              "class": "external"}]
    cfg = config(domain="x", ingressDomain="internal.example.com", omeIngressGatewayClass="internal",
                 additionalIngressGateways=extra)
    isvc = builders.isvc("llama-chat", "prod")
    route = routes(isvc, cfg)["llama-chat"]
    assert [p["name"] for p in route["spec"]["parentRefs"]] == ["internal-gateway", "external-gateway"]
    assert route["spec"]["hostnames"] == ["llm.internal.example.com", "llm.external.example.com"]
    settings = ingress_settings.resolve(isvc, cfg.ingress)
    ends = gateway_routes.endpoints(isvc, plans(isvc), settings, "cluster.local")
    assert ends.url == "http://llm.internal.example.com/prod/llama-chat/"
    assert ends.addresses == [
        {"name": "internal", "url": "http://llm.internal.example.com/prod/llama-chat/"},
        {"name": "external", "url": "http://llm.external.example.com/prod/llama-chat/"},
        {"name": "cluster-local", "url": "http://llama-chat-engine.prod.svc.cluster.local"},
    ]
    assert ends.address == "http://llama-chat-engine.prod.svc.cluster.local"
    # `[]` removes the additional gateways for one service; a malformed value is ignored.
    none = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-additional-gateways": "[]"})
    assert [p["name"] for p in routes(none, cfg)["llama-chat"]["spec"]["parentRefs"]] == ["internal-gateway"]
    bad = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-additional-gateways": "{oops"})
    assert len(routes(bad, cfg)["llama-chat"]["spec"]["parentRefs"]) == 2


def test_namespace_gateways_and_the_annotations_that_override_them() -> None:
    cfg = config(namespaceIngressGateways={"prod": {"primary": {
        "omeIngressGateway": "envoy-gateway-system/prod-gw", "ingressDomain": "prod.example.com"}}})
    prod = routes(builders.isvc("llama-chat", "prod"), cfg)["llama-chat"]
    assert [p["name"] for p in prod["spec"]["parentRefs"]] == ["prod-gw"]
    assert prod["spec"]["hostnames"] == ["llm.prod.example.com"]
    other = routes(builders.isvc("llama-chat", "dev"), cfg)["llama-chat"]
    assert [p["name"] for p in other["spec"]["parentRefs"]] == ["internal-gateway"]
    partner = [{"omeIngressGateway": "envoy-gateway-system/partner-gw", "ingressDomain": "partner.example.com"}]
    both = builders.isvc("llama-chat", "prod",
                         annotations={"ome.io/ingress-additional-gateways": json.dumps(partner)})
    route = routes(both, cfg)["llama-chat"]
    assert [p["name"] for p in route["spec"]["parentRefs"]] == ["prod-gw", "partner-gw"]
    assert route["spec"]["hostnames"] == ["llm.prod.example.com", "llm.partner.example.com"]
    # ome.io/ingress-gateway, even empty, takes the service out of the namespace's primary.
    empty = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-gateway": ""})
    route = routes(empty, cfg)["llama-chat"]
    assert [p["name"] for p in route["spec"]["parentRefs"]] == ["internal-gateway"]
    assert route["spec"]["hostnames"] == ["llm.example.com"]
    named = builders.isvc("llama-chat", "prod", annotations={"ome.io/ingress-gateway": "edge/edge-gw"})
    ref = routes(named, cfg)["llama-chat"]["spec"]["parentRefs"][0]
    assert (ref["namespace"], ref["name"]) == ("edge", "edge-gw")


def test_gateway_without_slash_is_name_in_namespace_of_the_same_name() -> None:
    ref = routes(builders.isvc("a", "b"), config(omeIngressGateway="external-gateway"))["a"]["spec"]["parentRefs"][0]
    assert (ref["namespace"], ref["name"]) == ("external-gateway", "external-gateway")


def test_missing_gateway_and_bad_template_are_clear_errors() -> None:
    settings = ingress_settings.resolve(builders.isvc(), config(omeIngressGateway="").ingress)
    with pytest.raises(IngressError, match="omeIngressGateway is empty"):
        gateway_routes.check_gateways(settings)
    isvc = builders.isvc("llama", "demo", annotations={"ome.io/ingress-domain-template": "{{ .Name }}_x"})
    with pytest.raises(IngressError, match="invalid domain name"):
        routes(isvc, config(perISVCSubdomain=True))


def test_bad_class_stops_the_config_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"additionalIngressGateways\[0\]\.class \"Ext\""):
        parse({"ingress": json.dumps({"additionalIngressGateways": [{"class": "Ext"}]})})
    with pytest.raises(ConfigError, match=r'namespaceIngressGateways\["prod"\]\.primary\.class'):
        parse({"ingress": json.dumps({"namespaceIngressGateways": {"prod": {"primary": {"class": "a_b"}}}})})


def _route(status: Obj | None, generation: int = 2, component: str = "engine") -> Obj:
    ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "gw", "name": "gw"}
    return {"metadata": {"name": "x", "namespace": "ns", "generation": generation,
                         "labels": {"component": component}},
            "spec": {"parentRefs": [ref]}, "status": status or {}}


def _parent(*conds: Obj) -> Obj:
    return {"parents": [{"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                       "namespace": "gw", "name": "gw"},
                         "controllerName": "example.com/gw", "conditions": list(conds)}]}


def test_verdict_follows_the_parent_status_of_the_current_generation() -> None:
    assert gateway_routes.verdict(_route(None)) == gateway_routes.Verdict(
        False, "ParentStatusNotAvailable", "Engine HttpRouteNotReady")
    accepted = {"type": "Accepted", "status": "True", "reason": "Accepted", "observedGeneration": 2}
    resolved = {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "observedGeneration": 2}
    assert gateway_routes.verdict(_route(_parent(accepted, resolved))).ok
    stale = dict(accepted, observedGeneration=1)
    assert gateway_routes.verdict(_route(_parent(stale), component="toplevel")) == gateway_routes.Verdict(
        False, "ParentStatusNotAvailable", "TopLevel HttpRouteNotReady")
    rejected = {"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners",
                "message": "No listeners included by this parent ref allowed this attachment.",
                "observedGeneration": 2}
    assert gateway_routes.verdict(_route(_parent(rejected), component="router")) == gateway_routes.Verdict(
        False, "NotAllowedByListeners", "Router No listeners included by this parent ref allowed this attachment.")


def test_not_ready_and_awaiting_messages() -> None:
    assert gateway_routes.component_not_ready("engine") == gateway_routes.Verdict(
        False, "ComponentNotReady", "engine component not ready for HTTPRoute creation")
    assert gateway_routes.awaiting_programming("engine", created=True).message == (
        "engine HTTPRoute awaiting gateway programming")
    assert gateway_routes.awaiting_programming("decoder", created=False) == gateway_routes.Verdict(
        False, "ParentStatusNotAvailable", "decoder HTTPRoute awaiting gateway reprogramming")


def test_per_service_url_and_router_cluster_local_address() -> None:
    isvc = builders.isvc("llama-chat", "prod", router={})
    settings = ingress_settings.resolve(isvc, config(perISVCSubdomain=True, urlScheme="https").ingress)
    ends = gateway_routes.endpoints(isvc, plans(isvc), settings, "cluster.local")
    assert ends.url == "https://llama-chat.prod.example.com/"
    assert ends.addresses[-1] == {"name": "cluster-local", "url": "https://llama-chat-router.prod.svc.cluster.local"}
    assert ends.addresses[0] == {"url": "https://llama-chat.prod.example.com/"}  # no class: no name
