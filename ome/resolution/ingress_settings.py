"""The ingress settings in force for one InferenceService: the config's `ingress` entry with the service's
`ome.io/ingress-*` annotations applied (pure).

Facts from the v1.3 docs (labels-and-annotations §Ingress, configure-ingress, multiple-gateways,
namespace-gateways, gateway-host-schemes):

- `ome.io/ingress-domain`, `-domain-template` and `-url-scheme` override the config, ignored when empty.
- `ome.io/ingress-per-isvc-subdomain`: "true" turns the per-service scheme on, any other value off.
- `ome.io/ingress-shared-host-prefix`: the first label of the shared host; empty means the bare domain.
- `ome.io/ingress-consistent-hash-headers`: comma-separated headers for the default BackendTrafficPolicy.
- Gateways: the primary and the additional Gateways are picked separately, each from the first source
  that sets it: the annotation (`ome.io/ingress-gateway`, `ome.io/ingress-additional-gateways`), then the
  entry of `namespaceIngressGateways` for the service's namespace, then the cluster-wide values. Any
  annotation, even an empty or malformed one, skips its part of the namespace entry; an empty
  `ome.io/ingress-gateway` or a value of `ome.io/ingress-additional-gateways` that is not a JSON list
  falls back to the cluster-wide value. `ome.io/ingress-gateway` replaces only the Gateway: the host on
  it keeps the cluster-wide domain (or `ome.io/ingress-domain`) and class.
- `ome.io/ingress-domain` replaces the primary Gateway's domain, or every Gateway's in the per-service
  scheme.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from ome.config.inferenceservice_config import IngressConfig, IngressGatewaySpec

DOMAIN_ANNOTATION: Final = "ome.io/ingress-domain"
DOMAIN_TEMPLATE_ANNOTATION: Final = "ome.io/ingress-domain-template"
URL_SCHEME_ANNOTATION: Final = "ome.io/ingress-url-scheme"
GATEWAY_ANNOTATION: Final = "ome.io/ingress-gateway"
ADDITIONAL_GATEWAYS_ANNOTATION: Final = "ome.io/ingress-additional-gateways"
PER_ISVC_SUBDOMAIN_ANNOTATION: Final = "ome.io/ingress-per-isvc-subdomain"
SHARED_HOST_PREFIX_ANNOTATION: Final = "ome.io/ingress-shared-host-prefix"
CONSISTENT_HASH_HEADERS_ANNOTATION: Final = "ome.io/ingress-consistent-hash-headers"

_FIELD: Final = re.compile(r"\{\{\s*(?:\.(\w+)(?:\.([\w.-]+))?|index\s+\.(\w+)\s+\"([^\"]*)\")\s*\}\}")
_HOSTNAME: Final = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*")


class IngressError(ValueError):
    """The ingress settings cannot produce a valid hostname or Gateway; the message says which."""


@dataclass(frozen=True, slots=True)
class GatewayTarget:
    """One Gateway the HTTPRoutes attach to, with the domain of the host on it."""

    namespace: str
    name: str
    domain: str
    address_class: str
    primary: bool


@dataclass(frozen=True, slots=True)
class IngressSettings:
    domain: str
    domain_template: str
    url_scheme: str
    per_isvc_subdomain: bool
    shared_host_prefix: str
    gateways: tuple[GatewayTarget, ...]
    consistent_hash_headers: tuple[str, ...]
    default_route_timeout_seconds: int | None


def _annotations(isvc: Mapping[str, Any]) -> Mapping[str, str]:
    return (isvc.get("metadata") or {}).get("annotations") or {}


def resolve(isvc: Mapping[str, Any], config: IngressConfig) -> IngressSettings:
    annotations = _annotations(isvc)
    domain = annotations.get(DOMAIN_ANNOTATION) or config.ingress_domain
    per_isvc = (
        annotations[PER_ISVC_SUBDOMAIN_ANNOTATION] == "true"
        if PER_ISVC_SUBDOMAIN_ANNOTATION in annotations
        else config.per_isvc_subdomain
    )
    prefix = annotations.get(SHARED_HOST_PREFIX_ANNOTATION, config.shared_host_prefix)
    if CONSISTENT_HASH_HEADERS_ANNOTATION in annotations:
        raw = annotations[CONSISTENT_HASH_HEADERS_ANNOTATION].split(",")
        headers = tuple(h.strip() for h in raw if h.strip())
    else:
        headers = tuple(config.consistent_hash_headers)
    namespace = (isvc.get("metadata") or {}).get("namespace") or ""
    return IngressSettings(
        domain=domain,
        domain_template=annotations.get(DOMAIN_TEMPLATE_ANNOTATION) or config.domain_template,
        url_scheme=annotations.get(URL_SCHEME_ANNOTATION) or config.url_scheme,
        per_isvc_subdomain=per_isvc,
        shared_host_prefix=prefix,
        gateways=_gateways(annotations, namespace, config, domain, per_isvc),
        consistent_hash_headers=headers,
        default_route_timeout_seconds=config.default_route_timeout_seconds,
    )


def _gateways(
    annotations: Mapping[str, str], namespace: str, config: IngressConfig, domain: str, per_isvc: bool
) -> tuple[GatewayTarget, ...]:
    entry = config.namespace_ingress_gateways.get(namespace)
    primary = IngressGatewaySpec.model_validate({"omeIngressGateway": config.ome_ingress_gateway or "",
                                                 "ingressDomain": config.ingress_domain,
                                                 "class": config.ome_ingress_gateway_class})
    if GATEWAY_ANNOTATION in annotations:
        if annotations[GATEWAY_ANNOTATION]:
            primary = primary.model_copy(update={"ome_ingress_gateway": annotations[GATEWAY_ANNOTATION]})
    elif entry is not None and entry.primary.ome_ingress_gateway:
        primary = entry.primary
    additional = list(config.additional_ingress_gateways)
    if ADDITIONAL_GATEWAYS_ANNOTATION in annotations:
        parsed = _parse_gateways(annotations[ADDITIONAL_GATEWAYS_ANNOTATION])
        if parsed is not None:
            additional = parsed
    elif entry is not None and entry.additional is not None:
        additional = list(entry.additional)
    found = [_target(primary, domain if DOMAIN_ANNOTATION in annotations and annotations[DOMAIN_ANNOTATION]
                     else primary.ingress_domain, primary=True)]
    for spec in additional:
        found.append(_target(spec, domain if per_isvc and annotations.get(DOMAIN_ANNOTATION)
                             else spec.ingress_domain, primary=False))
    return tuple(found)


def _target(spec: IngressGatewaySpec, domain: str, *, primary: bool) -> GatewayTarget:
    # `name` alone means the Gateway `name` in the namespace `name`, as upstream splits on the slash.
    parts = spec.ome_ingress_gateway.split("/")
    return GatewayTarget(parts[0], parts[-1], domain, spec.class_, primary)


def _parse_gateways(value: str) -> list[IngressGatewaySpec] | None:
    """The annotation's JSON list; None (fall back to the config) when empty or not a JSON list."""
    if not value.strip():
        return None
    try:
        raw = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(raw, list):
        return None
    found = []
    for item in raw:
        if not isinstance(item, dict):
            return None
        known = {k: str(v) for k, v in item.items() if k in ("omeIngressGateway", "ingressDomain", "class")}
        found.append(IngressGatewaySpec.model_validate(known))
    return found


def render_host(template: str, values: Mapping[str, Any]) -> str:
    """Render a Go-template hostname over `.Name`, `.Namespace`, `.IngressDomain`, `.Annotations` and
    `.Labels` (`{{ .Annotations.key }}` or `{{ index .Annotations "key" }}`)."""

    def field(match: re.Match[str]) -> str:
        key, sub = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        if key not in values:
            raise IngressError(f"domainTemplate uses .{key}; only .Name, .Namespace, .IngressDomain, "
                               ".Annotations and .Labels exist")
        value = values[key]
        if isinstance(value, Mapping):
            return str(value.get(sub, "")) if sub is not None else ""
        return str(value)

    host = _FIELD.sub(field, template)
    if "{{" in host or len(host) > 253 or not _HOSTNAME.fullmatch(host):
        raise IngressError(f"invalid domain name {host!r}: the domain template must render a valid DNS name")
    return host


def hostname(name: str, isvc: Mapping[str, Any], settings: IngressSettings, domain: str | None = None) -> str:
    """`domainTemplate` for `name` (the service, or a component's Service) on `domain`."""
    meta = isvc.get("metadata") or {}
    return render_host(settings.domain_template, {
        "Name": name,
        "Namespace": meta.get("namespace") or "",
        "IngressDomain": domain if domain is not None else settings.domain,
        "Annotations": meta.get("annotations") or {},
        "Labels": meta.get("labels") or {},
    })
