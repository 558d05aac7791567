"""spec.replicaRefs: an InferenceService that fronts standalone InferenceReplicas (inference-services page,
"Referenced replicas").

Three layers, each a function returning the first error or None:
* `shape_error`: the block alone (engine required, one name per role, no replica in two roles, nothing
  the referenced form cannot honour rides along);
* `fixed_error`: on update, the block is unchanged, since the Services and the route are named for the
  service and fronting other replicas means a new service;
* `live_error`: on create, each named replica exists in the namespace, is standalone, serves the role's
  component and is fronted by no other InferenceService. Two services created in the same moment can
  both pass; the docs accept that (both then front the replica until one is deleted).
"""

from __future__ import annotations

import re
from typing import Any, Final

from ome.api import resources
from ome.resolution import runtimes
from ome.webhooks.loose import COMPONENTS, as_dict, as_list, dig, text

Obj = dict[str, Any]

FIXED_AT_CREATE: Final = (
    "spec.replicaRefs is fixed at create; delete and recreate the InferenceService to front other replicas"
)
# A replica's name prefixes its pods and Services, so it has the form of an InferenceService name.
_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_OWN_MODEL = "the referenced replicas carry their own model and runtime"
_NOTHING_RENDERED = "a referenced replica is not rendered or scaled by the service"
_LOCAL_ONLY = "referenced replicas live in this cluster only"
_NOT_WITH_REFS: Final = (
    ("model", _OWN_MODEL),
    ("runtime", _OWN_MODEL),
    ("rollout", "a referenced replica rolls out on its own"),
    ("scalingPolicy", _NOTHING_RENDERED),
    ("acceleratorSelector", _NOTHING_RENDERED),
    ("placement", _LOCAL_ONLY),
    ("routing", _LOCAL_ONLY),
)


Reader = runtimes.Reader


def field_of(role: str) -> str:
    return f"spec.replicaRefs.{role}"


def is_set(spec: Obj) -> bool:
    return spec.get("replicaRefs") is not None


def referenced(spec: Obj, role: str) -> str:
    """The replica named for a role, or "". A block without an engine references nothing at all."""
    refs = as_dict(spec.get("replicaRefs"))
    if not as_list(refs.get("engine")):
        return ""
    names = as_list(refs.get(role))
    return text(names[0]) if names else ""


def shape_error(spec: Obj) -> str | None:
    if not is_set(spec):
        return None
    refs = as_dict(spec.get("replicaRefs"))
    if not as_list(refs.get("engine")):
        return f"{field_of('engine')} is required when spec.replicaRefs is set; every service has an engine"
    seen: dict[str, str] = {}
    for role in COMPONENTS:
        names = as_list(refs.get(role))
        if len(names) > 1:
            return f"{field_of(role)} lists {len(names)} replicas; each role takes exactly one"
        for name in names:
            if not isinstance(name, str) or not _NAME.match(name):
                return f"{field_of(role)}[0] {name!r} is not a valid InferenceReplica name"
            if name in seen:
                both = f"{seen[name]} and {field_of(role)}"
                return f"InferenceReplica {name} is named for both {both}; a replica serves one role"
            seen[name] = field_of(role)
    return _riders_error(spec)


def _riders_error(spec: Obj) -> str | None:
    for role in COMPONENTS:
        if spec.get(role) is not None:
            return (
                f"spec.{role} cannot be set next to spec.replicaRefs; a service either references all "
                "of its roles or declares them"
            )
    for key, why in _NOT_WITH_REFS:
        if spec.get(key) is not None:
            return f"spec.{key} cannot be set with spec.replicaRefs: {why}"
    mode = spec.get("deploymentMode")
    if mode is not None and mode != "OMENative":
        return f"spec.deploymentMode {mode} is not accepted with spec.replicaRefs (replicas run on OMENative)"
    return None


def fixed_error(old_spec: Obj, new_spec: Obj) -> str | None:
    return None if old_spec.get("replicaRefs") == new_spec.get("replicaRefs") else FIXED_AT_CREATE


def live_error(reader: Reader, namespace: str, service: str, spec: Obj) -> str | None:
    """On create: each named replica must exist, be standalone, serve its role, and have no other service."""
    if not referenced(spec, "engine"):
        return None
    fronted = _fronted_by_others(reader, namespace, service)
    for role in COMPONENTS:
        name = referenced(spec, role)
        if not name:
            continue
        where = f"{field_of(role)} names InferenceReplica {namespace}/{name}"
        replica = reader.get_or_none(resources.INFERENCE_REPLICAS, name, namespace)
        if replica is None:
            return f"{where}, which does not exist; create it first"
        if parent := projected_by(replica):
            return (
                f"{where}, which InferenceService {parent} projects; reference a standalone replica instead"
            )
        component = dig(replica, "spec", "component")
        if component != role:
            return f"{where}, whose spec.component is {component}, not {role}"
        if other := fronted.get(name):
            return f"{where}, which InferenceService {other} already fronts; a replica has one service"
    return None


def projected_by(replica: Obj) -> str:
    """The InferenceService that projects a replica (its parentRef, or its controller owner), or ""."""
    return text(dig(replica, "spec", "parentRef", "name")) or isvc_controller_owner(replica)


def isvc_controller_owner(replica: Obj) -> str:
    """The InferenceService that is the replica's controller owner (any served version), or ""."""
    for ref in as_list(dig(replica, "metadata", "ownerReferences")):
        ref = as_dict(ref)
        group = text(ref.get("apiVersion")).split("/")[0]
        if ref.get("controller") is True and ref.get("kind") == "InferenceService" and group == "ome.io":
            return text(ref.get("name"))
    return ""


def _fronted_by_others(reader: Reader, namespace: str, service: str) -> dict[str, str]:
    """Replica name -> the other InferenceService in the namespace that already references it."""
    fronted: dict[str, str] = {}
    for other in reader.list(resources.INFERENCE_SERVICES, namespace):
        name = text(dig(other, "metadata", "name"))
        if name == service:
            continue
        spec = as_dict(other.get("spec"))
        for role in COMPONENTS:
            if (replica := referenced(spec, role)) and replica not in fronted:
                fronted[replica] = name
    return fronted
