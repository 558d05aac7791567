"""Pieces every rendered object shares: owner references, metadata, Services (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.resolution import naming, workload_metadata
from ome.resolution.components import ComponentPlan, main_container

Obj = dict[str, Any]

DEFAULT_PORT: Final = 8080
SERVICE_TYPE_ANNOTATION: Final = "ome.io/service-type"
LOAD_BALANCER_IP_ANNOTATION: Final = "ome.io/load-balancer-ip"
_SERVICE_TYPES: Final = frozenset({"ClusterIP", "NodePort", "LoadBalancer"})


def owner_reference(isvc: Mapping[str, Any]) -> Obj:
    meta = isvc["metadata"]
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def metadata(
    isvc: Mapping[str, Any],
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": isvc["metadata"]["namespace"],
        "labels": dict(labels),
        "ownerReferences": [owner_reference(isvc)],
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def service_ports(pod_spec: Obj) -> list[Obj]:
    """The main container's ports, or one 8080 port named after the container."""
    container = main_container(pod_spec)
    ports = [p for p in container.get("ports") or [] if p.get("containerPort")]
    if not ports:
        name = naming.truncate(container.get("name") or "http", 15)
        return [{"name": name, "port": DEFAULT_PORT, "targetPort": DEFAULT_PORT, "protocol": "TCP"}]
    return [
        {
            "name": p.get("name") or f"port-{i}",
            "port": p["containerPort"],
            "targetPort": p["containerPort"],
            "protocol": p.get("protocol") or "TCP",
        }
        for i, p in enumerate(ports)
    ]


def service_type(annotations: Mapping[str, str]) -> str:
    value = annotations.get(SERVICE_TYPE_ANNOTATION, "ClusterIP")
    return value if value in _SERVICE_TYPES else "ClusterIP"


def component_service(isvc: Mapping[str, Any], plan: ComponentPlan, selector: Mapping[str, str]) -> Obj:
    """The Service `{isvc}-{component}` every mode puts in front of a component.

    It carries the component's annotations less the pod-only keys. `ome.io/load-balancer-ip` sets
    `spec.loadBalancerIP` when the Service is a LoadBalancer (traffic-annotations page: component
    Services only, never the Service named after the InferenceService).
    """
    pod_spec = plan.leader_pod_spec if plan.leader_pod_spec is not None else plan.pod_spec
    annotations = workload_metadata.service_annotations(plan.annotations)
    spec: Obj = {
        "type": service_type(plan.annotations),
        "selector": dict(selector),
        "ports": service_ports(pod_spec),
    }
    if spec["type"] == "LoadBalancer" and (ip := plan.annotations.get(LOAD_BALANCER_IP_ANNOTATION)):
        spec["loadBalancerIP"] = ip
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(isvc, naming.service_name(plan.isvc, plan.component), plan.labels, annotations),
        "spec": spec,
    }


def external_service(isvc: Mapping[str, Any], target: ComponentPlan) -> Obj:
    """The Service `{isvc}` in front of the router, else the engine (used while ingress creation is off).

    It selects by InferenceService and component labels only, so it reaches the component's pods in any
    mode: after a mode change it serves the old and the new pods alike, as documented.
    """
    port = component_service(isvc, target, {})["spec"]["ports"][0]["port"]
    selector = naming.selector_labels(isvc["metadata"]["name"], target.component)
    return external_service_for(isvc, selector, port)


def external_service_for(isvc: Mapping[str, Any], selector: Mapping[str, str], port: int) -> Obj:
    """The Service `{isvc}` with a given pod selector and port (also used in front of referenced replicas)."""
    name = isvc["metadata"]["name"]
    labels = {naming.ISVC_LABEL: name, naming.COMPONENT_LABEL: naming.EXTERNAL_SERVICE_COMPONENT}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(isvc, name, labels),
        "spec": {
            "type": service_type(isvc["metadata"].get("annotations") or {}),
            "selector": dict(selector),
            "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def is_cluster_local(isvc: Mapping[str, Any]) -> bool:
    labels = isvc["metadata"].get("labels") or {}
    return bool(labels.get(naming.CLUSTER_LOCAL_LABEL) == naming.CLUSTER_LOCAL)
