"""spec.replicaRefs: what an InferenceService renders in front of standalone InferenceReplicas (pure).

A referencing service owns no workload. Per referenced role it puts the stable Service `{isvc}-{role}` in
front of the replica's pods, and the external Service `{isvc}` in front of the router, else the engine. The
replica itself is only read: its spec, rollouts and scaling stay with whoever created it.

A standalone replica labels its pods with its own name as `ome.io/inferenceservice` (it has no parent),
so the Services select `{ome.io/inferenceservice: <replica>, component: <role>}`. Ports come from the
replica's serving template: its stored runners, else the runners pinned in its current ControllerRevision
(a replica rendered from a model or runtime reference stores none), else the default port.

A role whose replica is absent, projected by an InferenceService, or of another component is a problem,
reported as `ReplicaRefMissing` or `ReplicaRefInvalid`; the reconciler then leaves that role's Service as
it is and the role stops backing the external Service.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ome.resolution import modes, naming, objects

Obj = dict[str, Any]

REPLICA_REF_MISSING: Final = "ReplicaRefMissing"
REPLICA_REF_INVALID: Final = "ReplicaRefInvalid"
MANAGED_BY: Final = "OMENative"
RUNNER_LABEL: Final = "ome.io/runner"
_SERVING_RUNNERS: Final = ("leader", "default")


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a referenced role has no replica to front: the reason names the condition and the event."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ServingTemplate:
    """The pod spec the stable Service takes its ports from, and whether it selects only leaders."""

    pod_spec: Obj
    leader_only: bool


def is_referencing(isvc: Mapping[str, Any]) -> bool:
    """A service that fronts replicas instead of declaring components (the webhook keeps the two apart)."""
    return (isvc.get("spec") or {}).get("replicaRefs") is not None


def roles(isvc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(role, replica name) per referenced role, engine first; each role's list holds one name."""
    refs = (isvc.get("spec") or {}).get("replicaRefs")
    if not isinstance(refs, Mapping):
        return []
    found = []
    for role in modes.COMPONENTS:
        names = refs.get(role)
        if isinstance(names, list) and names and isinstance(names[0], str) and names[0]:
            found.append((role, names[0]))
    return found


def field_of(role: str) -> str:
    return f"spec.replicaRefs.{role}"


def projected_by(replica: Mapping[str, Any]) -> str:
    """The InferenceService projecting a replica (spec.parentRef, or its controller owner), or ""."""
    parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
    if parent:
        return str(parent)
    for ref in (replica.get("metadata") or {}).get("ownerReferences") or []:
        group = str(ref.get("apiVersion") or "").split("/")[0]
        if ref.get("controller") is True and ref.get("kind") == "InferenceService" and group == "ome.io":
            return str(ref.get("name") or "")
    return ""


def problem(
    isvc: Mapping[str, Any], role: str, name: str, replica: Mapping[str, Any] | None
) -> Problem | None:
    """None when `replica` is a standalone replica of `role`; else why the role cannot front it."""
    where = f"{field_of(role)} references InferenceReplica {isvc['metadata']['namespace']}/{name}"
    if replica is None:
        return Problem(REPLICA_REF_MISSING, f"{where}, which does not exist")
    if parent := projected_by(replica):
        return Problem(
            REPLICA_REF_INVALID,
            f"{where}, which InferenceService {parent} projects; only a standalone replica can be referenced",
        )
    component = (replica.get("spec") or {}).get("component")
    if component != role:
        return Problem(REPLICA_REF_INVALID, f"{where}, whose spec.component is {component}, not {role}")
    return None


def pod_selector(replica_name: str, role: str) -> dict[str, str]:
    """Every OMENative pod of a standalone replica (the label set of its status.labelSelector)."""
    return {**naming.selector_labels(replica_name, role), naming.MANAGED_BY_LABEL: MANAGED_BY}


def revision_name(replica: Mapping[str, Any]) -> str:
    """The ControllerRevision that serves (else the one rolling out), or "" while none is named."""
    status = replica.get("status") or {}
    return str(status.get("currentRevision") or status.get("updateRevision") or "")


def serving_template(
    replica: Mapping[str, Any], revision: Mapping[str, Any] | None
) -> ServingTemplate | None:
    """The leader's (else the single runner's) template, from the spec or the named revision.

    None when the replica names a revision that is not readable yet: the caller then leaves the Service's
    ports as they are rather than rewrite them to the default and back.
    """
    runners = (replica.get("spec") or {}).get("runners") or []
    if not runners and revision is not None:
        runners = (revision.get("data") or {}).get("runners") or []
    if runners:
        by_name = {r.get("name"): r for r in runners if isinstance(r, Mapping)}
        chosen = next((by_name[n] for n in _SERVING_RUNNERS if n in by_name), runners[0])
        pod_spec = copy.deepcopy(((chosen.get("template") or {}).get("spec")) or {})
        return ServingTemplate(pod_spec, "leader" in by_name)
    if revision_name(replica) and revision is None:
        return None
    return ServingTemplate({}, False)


def stable_service(isvc: Mapping[str, Any], role: str, replica_name: str, template: ServingTemplate) -> Obj:
    """The Service `{isvc}-{role}` in front of the replica's pods (its leaders, for multi-pod Instances)."""
    name = isvc["metadata"]["name"]
    selector = pod_selector(replica_name, role)
    if template.leader_only:
        selector[RUNNER_LABEL] = "leader"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": objects.metadata(
            isvc, naming.service_name(name, role), naming.selector_labels(name, role)
        ),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": objects.service_ports(copy.deepcopy(template.pod_spec)),
        },
    }


def service_port(service: Mapping[str, Any]) -> int | None:
    ports = (service.get("spec") or {}).get("ports") or []
    return int(ports[0]["port"]) if ports and ports[0].get("port") else None


def external_target(referenced: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The router's (role, replica) when one is referenced, else the engine's."""
    by_role = dict(referenced)
    for role in ("router", "engine"):
        if role in by_role:
            return role, by_role[role]
    return None


def external_service(isvc: Mapping[str, Any], role: str, replica_name: str, port: int) -> Obj:
    """The Service `{isvc}` in front of the target role's replica, while ingress creation is off."""
    return objects.external_service_for(isvc, naming.selector_labels(replica_name, role), port)
