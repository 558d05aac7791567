"""Gateway API HTTPRoutes for an InferenceService with `enableGatewayAPI: true` (pure).

Facts from the v1.3 docs (ingress.md §Through the Gateway API, gateway-host-schemes, multiple-gateways,
configure-route-timeouts) and, where they are silent, the v1.3 code:

- Up to four routes: `{isvc}` (clients use it; to the router, else the engine), `{isvc}-engine`,
  `{isvc}-router` and `{isvc}-decoder`, each created once the component it sends to is ready.
- Shared-host scheme (default): every route has the host `<sharedHostPrefix>.<domain>` (the bare domain
  when the prefix is empty), matches the path prefix `/<namespace>/<route>/` and rewrites it to `/`.
  Per-service scheme (`perISVCSubdomain`): the host comes from `domainTemplate`, the match is `/` and
  nothing is rewritten.
- Every route sets the request headers `OMe-Isvc-Name` and `OME-Isvc-Namespace`.
- The request timeout is the component's `timeoutSeconds` (the router's for `{isvc}` with a router, else
  the engine's), else `defaultRouteTimeoutSeconds`; neither set leaves the gateway's default. `0` is "0s".
- parentRefs list the primary Gateway first, then the additional ones, with one hostname per Gateway in
  the same order.
- A route is ready when every parentRef has a status entry whose conditions for the route's current
  generation include Accepted=True and no False condition. A False condition gives the Gateway's reason
  and "<Route> <message>"; a missing verdict gives `ParentStatusNotAvailable` / "<Route> HttpRouteNotReady"
  (Route: Engine, Router, Decoder, TopLevel).
- status.url is the address on the primary Gateway; status.addresses lists one per Gateway (named by its
  class), then the cluster-local address of the router's or engine's Service; status.address is the
  cluster-local one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ome.resolution import naming, objects
from ome.resolution.components import ComponentPlan
from ome.resolution.ingress_settings import GatewayTarget, IngressError, IngressSettings, hostname

Obj = dict[str, Any]

GROUP: Final = "gateway.networking.k8s.io"
API_VERSION: Final = f"{GROUP}/v1"
ISVC_NAME_HEADER: Final = "OMe-Isvc-Name"
ISVC_NAMESPACE_HEADER: Final = "OME-Isvc-Namespace"
TOP_LEVEL: Final = "toplevel"
CLUSTER_LOCAL_CLASS: Final = "cluster-local"

COMPONENT_NOT_READY: Final = "ComponentNotReady"
PARENT_STATUS_NOT_AVAILABLE: Final = "ParentStatusNotAvailable"
ROUTE_NOT_READY: Final = "HttpRouteNotReady"
_DISPLAY: Final = {"engine": "Engine", "router": "Router", "decoder": "Decoder", TOP_LEVEL: "TopLevel"}
_NOT_COPIED: Final = ("kubectl.kubernetes.io/", "ome.io/")


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """One HTTPRoute: `route` is engine, router, decoder or toplevel; `target` the component it sends to."""

    route: str
    name: str
    target: ComponentPlan
    port: int
    timeout_seconds: int | None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a route is ready, and otherwise the IngressReady reason and message."""

    ok: bool
    reason: str = ""
    message: str = ""


def component_not_ready(route: str) -> Verdict:
    return Verdict(False, COMPONENT_NOT_READY, f"{route} component not ready for HTTPRoute creation")


def awaiting_programming(route: str, *, created: bool) -> Verdict:
    """The route was written this pass: its parent status describes an older generation, or none."""
    word = "programming" if created else "reprogramming"
    return Verdict(False, PARENT_STATUS_NOT_AVAILABLE, f"{route} HTTPRoute awaiting gateway {word}")


def route_specs(isvc: Mapping[str, Any], plans: Sequence[ComponentPlan]) -> list[RouteSpec]:
    """The routes the declared components call for, in the order engine, router, decoder, toplevel."""
    name = isvc["metadata"]["name"]
    by_component = {plan.component: plan for plan in plans}
    found = [
        RouteSpec(component, naming.service_name(name, component), plan, _port(isvc, plan),
                  _timeout(isvc, component))
        for component in ("engine", "router", "decoder")
        if (plan := by_component.get(component)) is not None
    ]
    front = by_component.get("router") or by_component.get("engine")
    if front is not None:
        found.append(RouteSpec(TOP_LEVEL, name, front, _port(isvc, front), _timeout(isvc, front.component)))
    return found


def _port(isvc: Mapping[str, Any], plan: ComponentPlan) -> int:
    port: int = objects.component_service(isvc, plan, {})["spec"]["ports"][0]["port"]
    return port


def _timeout(isvc: Mapping[str, Any], component: str) -> int | None:
    value = ((isvc.get("spec") or {}).get(component) or {}).get("timeoutSeconds")
    return int(value) if isinstance(value, int) else None


def request_timeout(spec: RouteSpec, settings: IngressSettings) -> str | None:
    """`<n>s` from the component, else the cluster default; None leaves the gateway's default."""
    if spec.timeout_seconds is not None:
        return f"{spec.timeout_seconds}s"
    default = settings.default_route_timeout_seconds
    return f"{default}s" if default is not None and default >= 0 else None


def gateway_host(isvc: Mapping[str, Any], settings: IngressSettings, gateway: GatewayTarget) -> str:
    if settings.per_isvc_subdomain:
        return hostname(isvc["metadata"]["name"], isvc, settings, gateway.domain)
    if not gateway.domain:
        raise IngressError(f"the Gateway {gateway.namespace}/{gateway.name} has no ingressDomain")
    prefix = settings.shared_host_prefix
    return f"{prefix}.{gateway.domain}" if prefix else gateway.domain


def path_prefix(isvc: Mapping[str, Any], route_name: str, settings: IngressSettings) -> str:
    if settings.per_isvc_subdomain:
        return "/"
    return f"/{isvc['metadata']['namespace']}/{route_name}/"


def check_gateways(settings: IngressSettings) -> None:
    """A route needs a Gateway: an empty omeIngressGateway would only be rejected by the API server."""
    for gateway in settings.gateways:
        if not gateway.name or not gateway.namespace:
            which = "omeIngressGateway" if gateway.primary else "an additional Gateway's omeIngressGateway"
            raise IngressError(
                f"{which} is empty: set it to <namespace>/<name> of the Gateway for the HTTPRoutes")


def render(isvc: Mapping[str, Any], spec: RouteSpec, settings: IngressSettings) -> Obj:
    meta = isvc["metadata"]
    namespace = meta["namespace"]
    filters: list[Obj] = [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [
        {"name": ISVC_NAME_HEADER, "value": meta["name"]},
        {"name": ISVC_NAMESPACE_HEADER, "value": namespace},
    ]}}]
    if not settings.per_isvc_subdomain:
        filters.append({"type": "URLRewrite", "urlRewrite": {
            "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}})
    rule: Obj = {
        "matches": [{"path": {"type": "PathPrefix", "value": path_prefix(isvc, spec.name, settings)}}],
        "filters": filters,
        "backendRefs": [{"kind": "Service", "name": naming.service_name(meta["name"], spec.target.component),
                         "namespace": namespace, "port": spec.port}],
    }
    if (timeout := request_timeout(spec, settings)) is not None:
        rule["timeouts"] = {"request": timeout}
    labels = {**(meta.get("labels") or {}), naming.ISVC_LABEL: meta["name"],
              naming.COMPONENT_LABEL: spec.route}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith(_NOT_COPIED)}
    return {
        "apiVersion": API_VERSION,
        "kind": "HTTPRoute",
        "metadata": objects.metadata(isvc, spec.name, labels, annotations),
        "spec": {
            "parentRefs": [_parent_ref(gw) for gw in settings.gateways],
            "hostnames": [gateway_host(isvc, settings, gw) for gw in settings.gateways],
            "rules": [rule],
        },
    }


def _parent_ref(gateway: GatewayTarget) -> Obj:
    return {"group": GROUP, "kind": "Gateway", "namespace": gateway.namespace, "name": gateway.name}


def verdict(route: Mapping[str, Any]) -> Verdict:
    """Whether every Gateway on the route accepted its current generation (see the module docstring)."""
    name = _DISPLAY.get(((route.get("metadata") or {}).get("labels") or {}).get(naming.COMPONENT_LABEL, ""),
                        "Component")
    meta = route.get("metadata") or {}
    generation = meta.get("generation")
    parents = (route.get("status") or {}).get("parents") or []
    refs = (route.get("spec") or {}).get("parentRefs") or []
    not_available = Verdict(False, PARENT_STATUS_NOT_AVAILABLE, f"{name} {ROUTE_NOT_READY}")
    if not refs or not parents:
        return not_available
    for ref in refs:
        wanted = _normal_ref(ref, meta.get("namespace"))
        accepted = False
        for parent in parents:
            if _normal_ref(parent.get("parentRef") or {}, meta.get("namespace")) != wanted:
                continue
            for cond in parent.get("conditions") or []:
                if generation is not None and cond.get("observedGeneration") != generation:
                    continue  # a verdict on an older spec says nothing about this one
                if cond.get("status") == "False":
                    message = f"{name} {cond.get('message') or ''}"
                    return Verdict(False, str(cond.get("reason") or ""), message)
                if cond.get("type") == "Accepted" and cond.get("status") == "True":
                    accepted = True
        if not accepted:
            return not_available
    return Verdict(True)


def _normal_ref(ref: Mapping[str, Any], route_namespace: str | None) -> tuple[Any, ...]:
    return (ref.get("group") or GROUP, ref.get("kind") or "Gateway", ref.get("namespace") or route_namespace,
            ref.get("name"), ref.get("sectionName"), ref.get("port"))


@dataclass(frozen=True, slots=True)
class Endpoints:
    url: str
    address: str
    addresses: list[Obj]


def endpoints(
    isvc: Mapping[str, Any], plans: Sequence[ComponentPlan], settings: IngressSettings, cluster_domain: str
) -> Endpoints:
    """status.url (primary Gateway), status.address (cluster-local) and status.addresses (all of them)."""
    meta = isvc["metadata"]
    path = path_prefix(isvc, meta["name"], settings)
    addresses: list[Obj] = []
    url = ""
    for gateway in settings.gateways:
        entry_url = f"{settings.url_scheme}://{gateway_host(isvc, settings, gateway)}{path}"
        entry: Obj = {"url": entry_url}
        if gateway.address_class:
            entry = {"name": gateway.address_class, "url": entry_url}
        addresses.append(entry)
        if gateway.primary:
            url = entry_url
    front = "router" if any(p.component == "router" for p in plans) else "engine"
    service = naming.service_name(meta["name"], front)
    local = f"{settings.url_scheme}://{service}.{meta['namespace']}.svc.{cluster_domain}"
    addresses.append({"name": CLUSTER_LOCAL_CLASS, "url": local})
    return Endpoints(url=url, address=local, addresses=addresses)
