"""spec.traffic: the load-balancing policy OME emits for an InferenceService's routes (v1.3)."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import Int64, OMEModel, f
from ome.api.v1beta1.common import Condition

LoadBalancingType = Literal["RoundRobin", "LeastRequest", "Random", "ConsistentHash"]
HashType = Literal["Header", "Cookie", "SourceIP"]
EndpointOverrideType = Literal["Header", "Metadata"]


class HashHeader(OMEModel):
    name: str = f("name", required=True, min_length=1)


class HashCookie(OMEModel):
    name: str = f("name", required=True, min_length=1)
    ttl_seconds: Int64 | None = f("ttlSeconds", minimum=0)


class ConsistentHashSpec(OMEModel):
    type: HashType = f("type", required=True)
    headers: list[HashHeader] | None = f("headers")
    cookie: HashCookie | None = f("cookie")


class EndpointOverrideSpec(OMEModel):
    type: EndpointOverrideType = f("type", required=True)
    headers: list[HashHeader] | None = f("headers")


class TrafficSpec(OMEModel):
    algorithm: LoadBalancingType | None = f("algorithm")
    consistent_hash: ConsistentHashSpec | None = f("consistentHash")
    endpoint_override: EndpointOverrideSpec | None = f("endpointOverride")


class BackendPolicyRef(OMEModel):
    api_version: str = f("apiVersion", required=True)
    kind: str = f("kind", required=True)
    name: str = f("name", required=True)


class TrafficStatus(OMEModel):
    algorithm: str | None = f("algorithm")
    backend_policy_resource: BackendPolicyRef | None = f("backendPolicyResource")
    targeted_http_routes: list[str] | None = f("targetedHTTPRoutes", list_type="atomic")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))
