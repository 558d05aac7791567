"""CRDs of the Gateway API (standard channel), Envoy Gateway's BackendTrafficPolicy and Istio's
DestinationRule, written by us from the projects' published API types.

Only the group, versions, names and a structural schema are needed to check what OME writes: the fields
OME sets (and the status a gateway controller writes) are typed, so a field under a wrong name is pruned
by the apiserver and a wrong type is rejected; the rest of each object is left open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

STRING: Obj = {"type": "string"}
INT: Obj = {"type": "integer", "format": "int32"}
OPEN: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _array(items: Obj) -> Obj:
    return {"type": "array", "items": items}


def _object(**props: Obj) -> Obj:
    return {"type": "object", "properties": props}


CONDITION = _object(type=STRING, status=STRING, reason=STRING, message=STRING,
                    observedGeneration={"type": "integer", "format": "int64"},
                    lastTransitionTime={"type": "string", "format": "date-time"})
PARENT_REF = _object(group=STRING, kind=STRING, namespace=STRING, name=STRING, sectionName=STRING, port=INT)
ROUTE_STATUS = _object(parents=_array(_object(
    parentRef=PARENT_REF, controllerName=STRING, conditions=_array(CONDITION))))
HTTP_ROUTE_SPEC = _object(
    parentRefs=_array(PARENT_REF),
    hostnames=_array(STRING),
    rules=_array(_object(
        name=STRING,
        matches=_array(_object(path=_object(type=STRING, value=STRING), headers=_array(OPEN),
                               queryParams=_array(OPEN), method=STRING)),
        filters=_array(_object(type=STRING, requestHeaderModifier=OPEN, responseHeaderModifier=OPEN,
                               urlRewrite=OPEN, requestRedirect=OPEN, requestMirror=OPEN,
                               extensionRef=OPEN)),
        backendRefs=_array(_object(group=STRING, kind=STRING, name=STRING, namespace=STRING, port=INT,
                                   weight=INT, filters=_array(OPEN))),
        timeouts=_object(request=STRING, backendRequest=STRING),
        sessionPersistence=OPEN,
    )),
)
GATEWAY_SPEC = _object(
    gatewayClassName=STRING,
    listeners=_array(_object(name=STRING, hostname=STRING, port=INT, protocol=STRING, tls=OPEN,
                             allowedRoutes=OPEN)),
    addresses=_array(OPEN), infrastructure=OPEN,
)
GATEWAY_STATUS = _object(addresses=_array(OPEN), conditions=_array(CONDITION), listeners=_array(OPEN))
GATEWAY_CLASS_SPEC = _object(controllerName=STRING, parametersRef=OPEN, description=STRING)
TARGET_REF = _object(group=STRING, kind=STRING, name=STRING, sectionName=STRING)
BACKEND_TRAFFIC_POLICY_SPEC = _object(
    targetRef=TARGET_REF, targetRefs=_array(TARGET_REF), targetSelectors=_array(OPEN),
    mergeType=STRING, loadBalancer=OPEN, circuitBreaker=OPEN, retry=OPEN, timeout=OPEN,
    healthCheck=OPEN, rateLimit=OPEN, faultInjection=OPEN, tcpKeepalive=OPEN, connection=OPEN,
    dns=OPEN, http2=OPEN, proxyProtocol=OPEN, useClientProtocol={"type": "boolean"},
    responseOverride=_array(OPEN), compression=_array(OPEN), requestBuffer=OPEN, telemetry=OPEN,
)
POLICY_STATUS = _object(ancestors=_array(_object(ancestorRef=PARENT_REF, controllerName=STRING,
                                                 conditions=_array(CONDITION))))
DESTINATION_RULE_SPEC = _object(host=STRING, trafficPolicy=OPEN, subsets=_array(OPEN),
                                exportTo=_array(STRING), workloadSelector=OPEN)


def _approval(group: str) -> Obj:
    # *.k8s.io groups are protected: the apiserver asks for the approval annotation (any URL, or
    # "unapproved, ..." for a CRD like this one that is not the upstream manifest).
    if group.endswith(".k8s.io"):
        return {"annotations": {"api-approved.kubernetes.io": "unapproved, written for OME's e2e tests"}}
    return {}


def _crd(group: str, kind: str, plural: str, versions: list[str], spec: Obj, status: Obj,
         *, storage: str) -> Obj:
    schema = {"openAPIV3Schema": _object(apiVersion=STRING, kind=STRING, metadata={"type": "object"},
                                         spec=spec, status=status)}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", **_approval(group)},
        "spec": {
            "group": group, "scope": "Namespaced" if kind != "GatewayClass" else "Cluster",
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "versions": [{"name": v, "served": True, "storage": v == storage, "schema": schema,
                          "subresources": {"status": {}}} for v in versions],
        },
    }


def definitions() -> list[Obj]:
    gw = "gateway.networking.k8s.io"
    return [
        _crd(gw, "GatewayClass", "gatewayclasses", ["v1", "v1beta1"], GATEWAY_CLASS_SPEC,
             _object(conditions=_array(CONDITION)), storage="v1"),
        _crd(gw, "Gateway", "gateways", ["v1", "v1beta1"], GATEWAY_SPEC, GATEWAY_STATUS, storage="v1"),
        _crd(gw, "HTTPRoute", "httproutes", ["v1", "v1beta1"], HTTP_ROUTE_SPEC, ROUTE_STATUS, storage="v1"),
        _crd("gateway.envoyproxy.io", "BackendTrafficPolicy", "backendtrafficpolicies", ["v1alpha1"],
             BACKEND_TRAFFIC_POLICY_SPEC, POLICY_STATUS, storage="v1alpha1"),
        _crd("networking.istio.io", "DestinationRule", "destinationrules", ["v1", "v1beta1", "v1alpha3"],
             DESTINATION_RULE_SPEC, OPEN, storage="v1"),
    ]


def write(directory: Path, *, kinds: set[str] | None = None) -> Path:
    """Writes the CRDs (all, or those of `kinds`) as one YAML file each into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    for crd in definitions():
        if kinds is None or crd["spec"]["names"]["kind"] in kinds:
            (directory / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd, sort_keys=False))
    return directory
