"""The backend traffic policy for an InferenceService: spec.traffic and the traffic annotations, translated
into an Envoy Gateway BackendTrafficPolicy or an Istio DestinationRule, and status.traffic (pure).

Facts from the v1.3 docs (traffic-policy.md, reference/api/traffic-annotations.md, ingress.md):

- Traffic intent is any field of spec.traffic or any circuit breaker, retry, timeout or pass-through
  (`ome.io/btp.`, `ome.io/dr.`) annotation; `ome.io/service-type` and `ome.io/load-balancer-ip` are not.
- The translator is picked once, at start: Envoy Gateway when its BackendTrafficPolicy CRD is served, else
  Istio when the DestinationRule CRD is, else none (`noop`, status NoTranslatorAvailable).
- The policy is named after the InferenceService. The BackendTrafficPolicy targets the service's
  HTTPRoutes; the DestinationRule the Service named after the InferenceService.
- Durations are written in Go's normal form (`5m` -> `5m0s`); pass-throughs are converted to a whole
  number, a boolean or a decimal, in that order, else kept as a string, and applied last.
- Under Istio the retry annotations, `circuit-breaker-max-parallel-retries`,
  `circuit-breaker-per-endpoint-max-connections`, `timeout-max-connection-duration` and
  spec.traffic.endpointOverride are left out and listed in `BackendPolicyUnsupportedFields`; either
  translator leaves out the other one's pass-through prefix.
- Without intent and with Gateway API ingress, a default BackendTrafficPolicy hashes the route `{isvc}`
  on the configured consistent-hash headers (mergeType StrategicMerge).
- BackendPolicyReady: Unknown/Pending once written, True/AcceptedByGateway or False/GatewayRejected from
  the policy's own status.conditions (Istio's `Reconciled`; Envoy Gateway reports under status.ancestors,
  which OME v1.3 does not read, so it stays Pending: a documented known bug kept as is),
  False/NoTranslatorAvailable without a translator, False/TranslationFailed when a value cannot be
  translated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.framework import resources
from ome.framework.resources import Resource
from ome.resolution import naming, objects

Obj = dict[str, Any]

BACKEND_TRAFFIC_POLICIES: Final = resources.register(Resource(
    "gateway.envoyproxy.io", "v1alpha1", "BackendTrafficPolicy", "backendtrafficpolicies", True,
    frozenset({"status"})))
DESTINATION_RULES: Final = resources.register(Resource(
    "networking.istio.io", "v1", "DestinationRule", "destinationrules", True, frozenset({"status"})))

ENVOY: Final = "envoy-gateway"
ISTIO: Final = "istio"
NOOP: Final = "noop"

BACKEND_POLICY_READY: Final = "BackendPolicyReady"
UNSUPPORTED_FIELDS: Final = "BackendPolicyUnsupportedFields"
PENDING: Final = "Pending"
ACCEPTED_BY_GATEWAY: Final = "AcceptedByGateway"
GATEWAY_REJECTED: Final = "GatewayRejected"
NO_TRANSLATOR: Final = "NoTranslatorAvailable"
TRANSLATION_FAILED: Final = "TranslationFailed"
UNSUPPORTED_FIELD: Final = "UnsupportedField"
NO_TRANSLATOR_MESSAGE: Final = (
    "no Gateway-implementation backend policy CRD installed; traffic intent ignored")
RECONCILE_ERROR_EVENT: Final = "TrafficReconcileError"

BTP_PREFIX: Final = "ome.io/btp."
DR_PREFIX: Final = "ome.io/dr."
CB_MAX_CONNECTIONS: Final = "ome.io/circuit-breaker-max-connections"
CB_MAX_PARALLEL_REQUESTS: Final = "ome.io/circuit-breaker-max-parallel-requests"
CB_MAX_PENDING_REQUESTS: Final = "ome.io/circuit-breaker-max-pending-requests"
CB_MAX_PARALLEL_RETRIES: Final = "ome.io/circuit-breaker-max-parallel-retries"
CB_PER_ENDPOINT_MAX_CONNECTIONS: Final = "ome.io/circuit-breaker-per-endpoint-max-connections"
RETRY_ATTEMPTS: Final = "ome.io/retry-attempts"
RETRY_ON: Final = "ome.io/retry-on"
RETRY_PER_TRY_TIMEOUT: Final = "ome.io/retry-per-try-timeout"
TIMEOUT_IDLE: Final = "ome.io/timeout-idle"
TIMEOUT_MAX_CONNECTION_DURATION: Final = "ome.io/timeout-max-connection-duration"
TIMEOUT_TCP_CONNECT: Final = "ome.io/timeout-tcp-connect"

# annotation -> (Envoy Gateway spec path, Istio spec.trafficPolicy path or None, kind)
_KEYS: Final[dict[str, tuple[str, str | None, str]]] = {
    CB_MAX_CONNECTIONS: ("circuitBreaker.maxConnections", "connectionPool.tcp.maxConnections", "int"),
    CB_MAX_PARALLEL_REQUESTS: ("circuitBreaker.maxParallelRequests", "connectionPool.http.http2MaxRequests",
                               "int"),
    CB_MAX_PENDING_REQUESTS: ("circuitBreaker.maxPendingRequests",
                              "connectionPool.http.http1MaxPendingRequests", "int"),
    CB_MAX_PARALLEL_RETRIES: ("circuitBreaker.maxParallelRetries", None, "int"),
    CB_PER_ENDPOINT_MAX_CONNECTIONS: ("circuitBreaker.perEndpoint.maxConnections", None, "int"),
    RETRY_ATTEMPTS: ("retry.numRetries", None, "int"),
    RETRY_ON: ("retry.retryOn.triggers", None, "list"),
    RETRY_PER_TRY_TIMEOUT: ("retry.perRetry.timeout", None, "duration"),
    TIMEOUT_IDLE: ("timeout.http.connectionIdleTimeout", "connectionPool.http.idleTimeout", "duration"),
    TIMEOUT_MAX_CONNECTION_DURATION: ("timeout.http.maxConnectionDuration", None, "duration"),
    TIMEOUT_TCP_CONNECT: ("timeout.tcp.connectTimeout", "connectionPool.tcp.connectTimeout", "duration"),
}
TRAFFIC_ANNOTATIONS: Final = frozenset(_KEYS)
_ISTIO_LB: Final = {"RoundRobin": "ROUND_ROBIN", "LeastRequest": "LEAST_REQUEST", "Random": "RANDOM"}


class TranslationError(ValueError):
    """An intent value the translator cannot turn into a policy field; the message names it."""


def _annotations(isvc: Mapping[str, Any]) -> Mapping[str, str]:
    return (isvc.get("metadata") or {}).get("annotations") or {}


def _traffic(isvc: Mapping[str, Any]) -> Mapping[str, Any]:
    return (isvc.get("spec") or {}).get("traffic") or {}


def intent_annotations(isvc: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in _annotations(isvc)
                  if k in TRAFFIC_ANNOTATIONS or k.startswith((BTP_PREFIX, DR_PREFIX)))


def has_intent(isvc: Mapping[str, Any]) -> bool:
    return any(v not in (None, {}, []) for v in _traffic(isvc).values()) or bool(intent_annotations(isvc))


def algorithm(isvc: Mapping[str, Any]) -> str:
    return str(_traffic(isvc).get("algorithm") or "Default")


@dataclass(frozen=True, slots=True)
class Translation:
    policy: Obj | None
    passthroughs: list[str] = field(default_factory=list)
    unsupported_annotations: list[str] = field(default_factory=list)
    unsupported_fields: list[str] = field(default_factory=list)
    targeted_routes: list[str] = field(default_factory=list)


def target_routes(isvc: Mapping[str, Any], components: Sequence[str]) -> list[str]:
    """The HTTPRoutes the policy targets: `{isvc}`, `{isvc}-engine`, then decoder and router when declared."""
    name = isvc["metadata"]["name"]
    found = [name, naming.service_name(name, "engine")]
    found += [naming.service_name(name, c) for c in ("decoder", "router") if c in components]
    return found


def translate(
    translator: str, isvc: Mapping[str, Any], components: Sequence[str], cluster_domain: str
) -> Translation:
    """The policy for the service's intent under `translator` (no policy for `noop`)."""
    if translator == ENVOY:
        return _envoy(isvc, target_routes(isvc, components))
    if translator == ISTIO:
        return _istio(isvc, cluster_domain)
    return Translation(None)


def _policy_object(isvc: Mapping[str, Any], res: Resource, spec: Obj) -> Obj:
    name = isvc["metadata"]["name"]
    labels = {naming.ISVC_LABEL: name, naming.COMPONENT_LABEL: naming.EXTERNAL_SERVICE_COMPONENT,
              "app.kubernetes.io/part-of": name, "app.kubernetes.io/managed-by": "ome-controller"}
    return {"apiVersion": res.api_version, "kind": res.kind,
            "metadata": objects.metadata(isvc, name, labels), "spec": spec}


def _envoy(isvc: Mapping[str, Any], routes: list[str]) -> Translation:
    spec: Obj = {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": r}
                                for r in routes]}
    traffic = _traffic(isvc)
    lb = _envoy_load_balancer(traffic)
    if lb:
        spec["loadBalancer"] = lb
    annotations = _annotations(isvc)
    for key in sorted(TRAFFIC_ANNOTATIONS & set(annotations)):
        path, _, kind = _KEYS[key]
        _set_path(spec, path, _typed(key, annotations[key], kind))
    passthroughs = _passthrough(spec, annotations, BTP_PREFIX)
    unsupported = sorted(k for k in annotations if k.startswith(DR_PREFIX))
    return Translation(_policy_object(isvc, BACKEND_TRAFFIC_POLICIES, spec), passthroughs, unsupported,
                       [], routes)


def _envoy_load_balancer(traffic: Mapping[str, Any]) -> Obj:
    alg = traffic.get("algorithm")
    override = traffic.get("endpointOverride") or {}
    if not alg and not override:
        return {}
    lb: Obj = {"type": alg or "LeastRequest"}  # Envoy Gateway's own default when only an override is set
    hashing = traffic.get("consistentHash") or {}
    if alg == "ConsistentHash":
        kind = hashing.get("type")
        if kind == "Header":
            headers = [h["name"] for h in hashing.get("headers") or []]
            if len(headers) == 1:
                lb["consistentHash"] = {"type": "Header", "header": {"name": headers[0]}}
            else:
                lb["consistentHash"] = {"type": "Headers", "headers": [{"name": h} for h in headers]}
        elif kind == "Cookie":
            cookie = hashing.get("cookie") or {}
            entry: Obj = {"name": cookie.get("name")}
            if int(cookie.get("ttlSeconds") or 0) > 0:
                entry["ttl"] = format_duration(int(cookie["ttlSeconds"]) * 1_000_000_000)
            lb["consistentHash"] = {"type": "Cookie", "cookie": entry}
        elif kind == "SourceIP":
            lb["consistentHash"] = {"type": "SourceIP"}
        else:
            raise TranslationError("spec.traffic.consistentHash is required when spec.traffic.algorithm="
                                   "ConsistentHash")
    if override.get("type") == "Header":
        sources = [{"header": h["name"]} for h in override.get("headers") or []]
        lb["endpointOverride"] = {"extractFrom": sources}
    return lb


def _istio(isvc: Mapping[str, Any], cluster_domain: str) -> Translation:
    meta = isvc["metadata"]
    policy: Obj = {}
    traffic = _traffic(isvc)
    unsupported_fields: list[str] = []
    alg = traffic.get("algorithm")
    if alg in _ISTIO_LB:
        policy["loadBalancer"] = {"simple": _ISTIO_LB[alg]}
    elif alg == "ConsistentHash":
        hashing = traffic.get("consistentHash") or {}
        kind = hashing.get("type")
        if kind == "Header" and hashing.get("headers"):
            consistent: Obj = {"httpHeaderName": hashing["headers"][0]["name"]}
        elif kind == "Cookie":
            cookie = hashing.get("cookie") or {}
            consistent = {"httpCookie": {"name": cookie.get("name")}}
            if int(cookie.get("ttlSeconds") or 0) > 0:
                consistent["httpCookie"]["ttl"] = format_duration(int(cookie["ttlSeconds"]) * 1_000_000_000)
        elif kind == "SourceIP":
            consistent = {"useSourceIp": True}
        else:
            raise TranslationError("spec.traffic.consistentHash is required when spec.traffic.algorithm="
                                   "ConsistentHash")
        policy["loadBalancer"] = {"consistentHash": consistent}
    if override := traffic.get("endpointOverride"):
        unsupported_fields.append(f"spec.traffic.endpointOverride.type={override.get('type')}")
    annotations = _annotations(isvc)
    unsupported = []
    for key in sorted(TRAFFIC_ANNOTATIONS & set(annotations)):
        _, path, kind = _KEYS[key]
        if path is None:
            unsupported.append(key)
            continue
        _set_path(policy, path, _typed(key, annotations[key], kind))
    passthroughs = _passthrough(policy, annotations, DR_PREFIX)
    unsupported += sorted(k for k in annotations if k.startswith(BTP_PREFIX))
    spec: Obj = {"host": f"{meta['name']}.{meta['namespace']}.svc.{cluster_domain}"}
    if policy:
        spec["trafficPolicy"] = policy
    return Translation(_policy_object(isvc, DESTINATION_RULES, spec), passthroughs, sorted(unsupported),
                       unsupported_fields, [])


def default_policy(isvc: Mapping[str, Any], headers: Sequence[str]) -> Obj:
    """The BackendTrafficPolicy OME writes with Gateway API ingress and no intent: hash the entry route
    on the routing-key headers, merged into any Gateway-level policy."""
    spec: Obj = {
        "mergeType": "StrategicMerge",
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute",
                        "name": isvc["metadata"]["name"]}],
        "loadBalancer": {"type": "ConsistentHash", "consistentHash": {
            "type": "Headers", "headers": [{"name": h} for h in headers]}},
    }
    return _policy_object(isvc, BACKEND_TRAFFIC_POLICIES, spec)


def _typed(key: str, value: str, kind: str) -> Any:
    if kind == "int":
        try:
            return int(value.strip())
        except ValueError:
            raise TranslationError(f"annotation {key!r}={value!r} is not a whole number") from None
    if kind == "duration":
        nanos = parse_duration(value)
        if nanos is None:
            raise TranslationError(f"annotation {key!r}={value!r} is not a valid duration such as 30s")
        return format_duration(nanos)
    return [item.strip() for item in value.split(",")]


def _passthrough(spec: Obj, annotations: Mapping[str, str], prefix: str) -> list[str]:
    """Apply `prefix<path>` annotations last, so they win; returns the paths applied, sorted."""
    applied = []
    for key in sorted(k for k in annotations if k.startswith(prefix)):
        path = key[len(prefix):]
        if not path or any(not part for part in path.split(".")):
            continue  # an empty path segment names no field
        _set_path(spec, path, convert(annotations[key]))
        applied.append(path)
    return applied


def convert(value: str) -> Any:
    """A pass-through value: whole number, boolean, decimal, else the string (strconv's order)."""
    if re.fullmatch(r"[+-]?\d+", value):
        return int(value)
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    try:
        number = float(value)
    except ValueError:
        return value
    return value if number != number or number in (float("inf"), float("-inf")) else number


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.split(".")
    node = obj
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


_UNITS: Final = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
                 "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> int | None:
    """Nanoseconds of a Go duration such as `1m30s` (every number needs a unit); None when malformed."""
    value = text.strip()
    if value == "0":
        return 0
    if not value or not re.fullmatch(f"(?:{_DURATION.pattern})+", value):
        return None
    return round(sum(float(num) * _UNITS[unit] for num, unit in _DURATION.findall(value)))


def format_duration(nanos: int) -> str:
    """Go's time.Duration.String(): `5m0s`, `10s`, `1h30m0s`, `1.5s`, `500ms`, `0s`."""
    if nanos == 0:
        return "0s"
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return _trim(nanos / size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _trim(rest / 1_000_000_000) + "s"
    if hours:
        return f"{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{minutes}m{seconds}"
    return seconds


def _trim(number: float) -> str:
    text = f"{number:.9f}".rstrip("0").rstrip(".")
    return text or "0"


# -- status -------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Acceptance:
    state: str  # PENDING, ACCEPTED_BY_GATEWAY or GATEWAY_REJECTED
    reason: str = ""
    message: str = ""


def observe(translator: str, policy: Mapping[str, Any] | None) -> Acceptance:
    """The gateway's verdict on the written policy, from its status.conditions (see the docstring)."""
    conditions = ((policy or {}).get("status") or {}).get("conditions") or []
    wanted = "Reconciled" if translator == ISTIO else "Accepted"
    for cond in conditions:
        if cond.get("type") != wanted:
            continue
        reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
        if cond.get("status") == "True":
            return Acceptance(ACCEPTED_BY_GATEWAY, reason, message)
        if cond.get("status") == "False":
            return Acceptance(GATEWAY_REJECTED, reason, message)
    return Acceptance(PENDING)


def status(
    isvc: Mapping[str, Any],
    translator: str,
    translation: Translation | None,
    acceptance: Acceptance,
    now: str,
    error: str | None = None,
) -> Obj | None:
    """status.traffic, or None without intent. `error` is a TranslationError's message."""
    if not has_intent(isvc):
        return None
    generation = isvc["metadata"].get("generation")
    out: Obj = {"algorithm": algorithm(isvc)}
    policy = translation.policy if translation is not None and error is None else None
    if policy is not None:
        out["backendPolicyResource"] = {"apiVersion": policy["apiVersion"], "kind": policy["kind"],
                                        "name": policy["metadata"]["name"]}
        if translation is not None and translation.targeted_routes:
            out["targetedHTTPRoutes"] = list(translation.targeted_routes)
    if error is not None:
        ready = ("False", TRANSLATION_FAILED, error)
    elif translator == NOOP:
        ready = ("False", NO_TRANSLATOR, NO_TRANSLATOR_MESSAGE)
    elif acceptance.state == ACCEPTED_BY_GATEWAY:
        ready = ("True", ACCEPTED_BY_GATEWAY,
                 acceptance.message or "backend policy accepted by gateway controller")
    elif acceptance.state == GATEWAY_REJECTED:
        rejected = "backend policy rejected by gateway controller"
        if acceptance.reason:
            rejected += f": {acceptance.reason}"
        ready = ("False", GATEWAY_REJECTED, acceptance.message or rejected)
    else:
        ready = ("Unknown", PENDING, _pending_message(translation.passthroughs if translation else []))
    conditions = [_condition(BACKEND_POLICY_READY, *ready)]
    if translation is not None and error is None and translator != NOOP:
        if message := unsupported_message(translator, translation):
            conditions.append(_condition(UNSUPPORTED_FIELDS, "True", UNSUPPORTED_FIELD, message))
    out["conditions"] = _stamp(conditions, isvc, generation, now)
    return out


def _pending_message(paths: Sequence[str]) -> str:
    if not paths:
        return "backend policy emitted; awaiting gateway acceptance"
    return (f"backend policy emitted with {len(paths)} pass-through field(s) ([{' '.join(paths)}]); "
            "awaiting gateway acceptance")


def unsupported_message(translator: str, translation: Translation) -> str:
    parts = []
    if translation.unsupported_annotations:
        keys = translation.unsupported_annotations
        parts.append(f'translator "{translator}" does not honor {len(keys)} operator-declared annotation(s) '
                     f"[{' '.join(keys)}]")
    if translation.unsupported_fields:
        fields = translation.unsupported_fields
        parts.append(f'translator "{translator}" does not honor {len(fields)} typed spec.traffic field(s) '
                     f"[{' '.join(fields)}]")
    return "; ".join(parts)


def _condition(type_: str, status_: str, reason: str, message: str) -> Obj:
    return {"type": type_, "status": status_, "reason": reason, "message": message}


def _stamp(conditions: list[Obj], isvc: Mapping[str, Any], generation: Any, now: str) -> list[Obj]:
    """metav1.Conditions: lastTransitionTime moves only when the status does, so a no-op writes nothing."""
    traffic = (isvc.get("status") or {}).get("traffic") or {}
    old = {c.get("type"): c for c in traffic.get("conditions") or []}
    for cond in conditions:
        previous = old.get(cond["type"]) or {}
        same = previous.get("status") == cond["status"]
        cond["lastTransitionTime"] = previous.get("lastTransitionTime") if same and previous.get(
            "lastTransitionTime") else now
        if generation is not None:
            cond["observedGeneration"] = generation
    return conditions


def conflict_message(policy: Mapping[str, Any], existing: Mapping[str, Any]) -> str:
    """The TrafficReconcileError message for a same-named policy OME does not control."""
    meta = existing.get("metadata") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}"
    controller = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    detail = ("with no controller owner reference (hand-authored)" if controller is None
              else f"controlled by {controller.get('kind')} {controller.get('name')}")
    return ("backend policy with the OME-managed name exists but is not owned by this InferenceService: "
            f"{where} already exists {detail}")
