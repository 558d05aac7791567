"""Render a component's autoscaler: the HorizontalPodAutoscaler or the KEDA ScaledObject (pure).

The HPA is `{isvc}-{component}`; the ScaledObject `scaledobject-{isvc}-{component}`. Both scale the
component's workload: the Deployment on RawDeployment, the InferenceReplica (through its scale
subresource) on OMENative. `hpa.metrics`/`hpa.behavior` and the `keda` fields are copied as they are.
The rendered block is kept on the object (`ome.io/last-rendered-autoscaler`) so a component whose policy
holds can keep its last-known-good scaler while its bounds still follow the spec.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ome.framework import resources
from ome.resolution import autoscaling, modes, naming, objects
from ome.resolution.autoscaling import Bounds

Obj = dict[str, Any]

SCALED_OBJECTS: Final = resources.register(
    resources.Resource("keda.sh", "v1alpha1", "ScaledObject", "scaledobjects", True, frozenset({"status"}))
)
LAST_RENDERED_ANNOTATION: Final = "ome.io/last-rendered-autoscaler"
POLICY_ANNOTATION: Final = "ome.io/autoscaler-policy"
SCALED_OBJECT_PREFIX: Final = "scaledobject-"
_KEDA_COPIED: Final = ("pollingInterval", "cooldownPeriod", "idleReplicaCount", "fallback", "advanced")


@dataclass(frozen=True, slots=True)
class Target:
    """One component as its autoscaler sees it."""

    isvc: Mapping[str, Any]
    component: str
    mode: str
    bounds: Bounds
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return naming.component_name(self.isvc["metadata"]["name"], self.component)


def hpa_name(isvc: str, component: str) -> str:
    return naming.component_name(isvc, component)


def scaled_object_name(isvc: str, component: str) -> str:
    return SCALED_OBJECT_PREFIX + naming.component_name(isvc, component)


def scale_target_ref(mode: str, name: str) -> Obj | None:
    """What the autoscaler scales: the Deployment or the InferenceReplica (MultiNode: nothing)."""
    if mode == modes.OMENATIVE:
        return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "name": name}
    if mode == modes.RAW_DEPLOYMENT:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    return None


def render(target: Target, block: Mapping[str, Any], *, policy: str | None = None) -> Obj | None:
    """The object OME creates for `block`; None for External and None (and for MultiNode)."""
    klass = block.get("class")
    if target.mode == modes.MULTINODE:
        return None
    if klass == autoscaling.HPA:
        return hpa(target, block, policy=policy)
    if klass == autoscaling.KEDA:
        return scaled_object(target, block, policy=policy)
    return None


def hpa(target: Target, block: Mapping[str, Any], *, policy: str | None = None) -> Obj:
    settings = block.get("hpa") or {}
    ref = scale_target_ref(target.mode, target.name)
    spec: Obj = {
        "scaleTargetRef": ref,
        # An HPA cannot hold zero; a zero minimum only works through KEDA.
        "minReplicas": max(target.bounds.min, 1),
        "maxReplicas": max(target.bounds.max, 1),
        "metrics": copy.deepcopy(settings.get("metrics")) or [
            autoscaling.cpu_metric(autoscaling.DEFAULT_CPU_UTILIZATION)
        ],
    }
    if settings.get("behavior"):
        spec["behavior"] = copy.deepcopy(settings["behavior"])
    name = hpa_name(target.isvc["metadata"]["name"], target.component)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(target, name, block, policy),
        "spec": spec,
    }


def scaled_object(target: Target, block: Mapping[str, Any], *, policy: str | None = None) -> Obj:
    """The ScaledObject; raises AutoscalingError for a block KEDA cannot run."""
    keda = block.get("keda") or {}
    triggers = keda.get("triggers") or []
    if not triggers:
        if target.bounds.min == 0:
            raise autoscaling.AutoscalingError("minReplicas=0 requires typed KEDA with at least one trigger")
        raise autoscaling.AutoscalingError("KEDA autoscaler requires at least one trigger")
    name = hpa_name(target.isvc["metadata"]["name"], target.component)
    hpa_config = ((keda.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}).get("name")
    if hpa_config and hpa_config == name:
        raise autoscaling.AutoscalingError(
            f"keda.advanced.horizontalPodAutoscalerConfig.name must differ from {name!r}, "
            "which OME keeps for its own HorizontalPodAutoscaler"
        )
    spec: Obj = {
        "scaleTargetRef": scale_target_ref(target.mode, target.name),
        "minReplicaCount": autoscaling.floor_for_mode(target.mode, target.bounds.min),
        "maxReplicaCount": max(target.bounds.max, 1),
        "triggers": copy.deepcopy(list(triggers)),
    }
    for key in _KEDA_COPIED:
        if keda.get(key) is not None:
            spec[key] = copy.deepcopy(keda[key])
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": _metadata(target, scaled_object_name(target.isvc["metadata"]["name"], target.component),
                              block, policy),
        "spec": spec,
    }


def _metadata(target: Target, name: str, block: Mapping[str, Any], policy: str | None) -> Obj:
    annotations = dict(target.annotations)
    annotations[LAST_RENDERED_ANNOTATION] = orjson.dumps(block, option=orjson.OPT_SORT_KEYS).decode()
    if policy:
        annotations[POLICY_ANNOTATION] = policy
    return objects.metadata(target.isvc, name, target.labels, annotations)


def keda_hpa_name(scaled_object: Mapping[str, Any]) -> str:
    """The HorizontalPodAutoscaler KEDA keeps for a ScaledObject: as its status says, else as configured
    in advanced.horizontalPodAutoscalerConfig.name, else `keda-hpa-<scaledobject>`."""
    status_name = (scaled_object.get("status") or {}).get("hpaName")
    advanced = (scaled_object.get("spec") or {}).get("advanced") or {}
    configured = advanced.get("horizontalPodAutoscalerConfig") or {}
    return str(status_name or configured.get("name") or f"keda-hpa-{scaled_object['metadata']['name']}")


def last_rendered(obj: Mapping[str, Any] | None) -> tuple[Obj, str | None] | None:
    """The block (and policy) a scaler OME wrote was rendered from, or None."""
    if obj is None:
        return None
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(LAST_RENDERED_ANNOTATION)
    if not raw:
        return None
    try:
        block = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return (block, annotations.get(POLICY_ANNOTATION)) if isinstance(block, dict) else None
