"""External access with ingress creation on: one Kubernetes Ingress per InferenceService (pure).

Facts from the v1.3 ingress page: the Ingress is named after the InferenceService, uses the configured
IngressClass, and has one rule per hostname (path prefix `/`): the top-level host goes to the router, else
the engine; the router's and decoder's hosts exist with those components; the engine's host exists with a
router or a decoder. Hostnames come from `domainTemplate` (a Go template over Name, Namespace and
IngressDomain, Annotations, Labels), after the service's `ome.io/ingress-*` overrides (ingress_settings.py).
OME creates the Ingress once its target component (router, else decoder, else engine) is ready, and
reports `{scheme}://{host}:{port}` with the target Service's port.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import ingress_settings, naming, objects
from ome.resolution.components import ComponentPlan
from ome.resolution.ingress_settings import IngressError

Obj = dict[str, Any]

DISABLE_ANNOTATION: Final = "ome.io/ingress-disable-creation"
URL_SCHEME_ANNOTATION: Final = ingress_settings.URL_SCHEME_ANNOTATION
COMPONENT_NOT_READY: Final = "ComponentNotReady"
COMPONENT_NOT_READY_MESSAGE: Final = "Target service not ready for ingress creation"
INVALID_INGRESS_CONFIG: Final = "InvalidIngressConfig"
# Annotations that belong to kubectl or OME itself, not to the ingress controller.
_NOT_COPIED: Final = ("kubectl.kubernetes.io/", "ome.io/")


__all__ = ["IngressError", "Route", "creation_enabled", "desired", "hostname", "routes", "target", "url"]


@dataclass(frozen=True, slots=True)
class Route:
    host: str
    service: str
    port: int


def creation_enabled(isvc: Mapping[str, Any], config: InferenceServiceConfig) -> bool:
    """`ome.io/ingress-disable-creation` overrides the config: "true" turns it off, any other value on."""
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    if DISABLE_ANNOTATION in annotations:
        return str(annotations[DISABLE_ANNOTATION]) != "true"
    return not config.ingress.disable_ingress_creation


def hostname(name: str, isvc: Mapping[str, Any], config: InferenceServiceConfig) -> str:
    """The hostname of `name` (the service, or a component's Service) from the service's settings."""
    return ingress_settings.hostname(name, isvc, ingress_settings.resolve(isvc, config.ingress))


def target(plans: Sequence[ComponentPlan]) -> ComponentPlan | None:
    """The component whose readiness gates the Ingress: router, else decoder, else engine."""
    by_component = {plan.component: plan for plan in plans}
    return by_component.get("router") or by_component.get("decoder") or by_component.get("engine")


def _port(isvc: Mapping[str, Any], plan: ComponentPlan) -> int:
    port: int = objects.component_service(isvc, plan, {})["spec"]["ports"][0]["port"]
    return port


def routes(
    isvc: Mapping[str, Any], plans: Sequence[ComponentPlan], config: InferenceServiceConfig
) -> list[Route]:
    name = isvc["metadata"]["name"]
    by_component = {plan.component: plan for plan in plans}
    front = by_component.get("router") or by_component.get("engine")
    if front is None:
        return []
    found = [Route(hostname(name, isvc, config), naming.service_name(name, front.component),
                   _port(isvc, front))]
    wanted = []
    if "router" in by_component:
        wanted.append("router")
    if "engine" in by_component and ("router" in by_component or "decoder" in by_component):
        wanted.append("engine")
    if "decoder" in by_component:
        wanted.append("decoder")
    for component in wanted:
        service = naming.service_name(name, component)
        port = _port(isvc, by_component[component])
        found.append(Route(hostname(service, isvc, config), service, port))
    return found


def desired(
    isvc: Mapping[str, Any], plans: Sequence[ComponentPlan], config: InferenceServiceConfig
) -> Obj | None:
    found = routes(isvc, plans, config)
    if not found:
        return None
    meta = isvc["metadata"]
    annotations = copied_annotations(isvc)
    labels = {naming.ISVC_LABEL: meta["name"], naming.COMPONENT_LABEL: naming.EXTERNAL_SERVICE_COMPONENT}
    spec: Obj = {"rules": [
        {"host": r.host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
            "service": {"name": r.service, "port": {"number": r.port}}}}]}}
        for r in found
    ]}
    if config.ingress.ingress_class_name:
        spec["ingressClassName"] = config.ingress.ingress_class_name
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": objects.metadata(isvc, meta["name"], labels, annotations),
        "spec": spec,
    }


def url(
    isvc: Mapping[str, Any], plans: Sequence[ComponentPlan], config: InferenceServiceConfig
) -> str | None:
    found = routes(isvc, plans, config)
    if not found:
        return None
    scheme = ingress_settings.resolve(isvc, config.ingress).url_scheme
    return f"{scheme}://{found[0].host}:{found[0].port}"


def copied_annotations(isvc: Mapping[str, Any]) -> dict[str, str]:
    """The service's annotations for its Ingress or HTTPRoutes, without kubectl's and OME's own."""
    return {k: v for k, v in ((isvc.get("metadata") or {}).get("annotations") or {}).items()
            if not k.startswith(_NOT_COPIED)}
