"""The labels and annotations OME sets on a component's objects and pods (pure).

Per the labels-and-annotations reference page (v1.3):

- Workload labels: the InferenceService's labels, then the component's, then OME's own, which win:
  `ome.io/inferenceservice`, `component`, `serving-runtime`, `fine-tuned-serving` ("true"/"false",
  always), and with a base model `base-model-name`, `base-model-size` (the model's
  `models.ome.io/category` annotation, else SMALL), `base-model-type` (Serving) and `base-model-vendor`
  (when the model has a vendor).
- Workload annotations: the InferenceService's annotations except the keys OME never copies, then the
  component's, then OME's: `ome.io/base-model-name`, `-vendor`, `-format`, `-format-version` and
  `ome.io/serving-runtime`. They go to every generated object (Deployment, Service, HPA, PDB, pods).
- Services never carry the pod-only keys (`SERVICE_EXCLUDED_PREFIXES`).
- Scheduling queues: `ome.io/volcano-queue`, else `ome.io/dedicated-ai-cluster` (switched to Kueue by the
  presence of `kueue-enabled`), become queue labels on RawDeployment and MultiNode pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ome.resolution import naming

# Labels (reference/api/labels-and-annotations, "Pods").
LABEL_FINE_TUNED_SERVING: Final = "fine-tuned-serving"
LABEL_BASE_MODEL_NAME: Final = "base-model-name"
LABEL_BASE_MODEL_SIZE: Final = "base-model-size"
LABEL_BASE_MODEL_TYPE: Final = "base-model-type"
LABEL_BASE_MODEL_VENDOR: Final = "base-model-vendor"
BASE_MODEL_TYPE_SERVING: Final = "Serving"
DEFAULT_MODEL_SIZE: Final = "SMALL"
MODEL_CATEGORY_ANNOTATION: Final = "models.ome.io/category"

# Annotations OME sets ("Keys OME sets").
ANNOTATION_BASE_MODEL_NAME: Final = "ome.io/base-model-name"
ANNOTATION_BASE_MODEL_VENDOR: Final = "ome.io/base-model-vendor"
ANNOTATION_BASE_MODEL_FORMAT: Final = "ome.io/base-model-format"
ANNOTATION_BASE_MODEL_FORMAT_VERSION: Final = "ome.io/base-model-format-version"
ANNOTATION_SERVING_RUNTIME: Final = "ome.io/serving-runtime"

NOT_COPIED: Final = frozenset(
    {
        "ome.io/rollout-promote",
        "ome.io/rollout-rollback",
        "internal.ome.io/in-place-image-transition",
        "kubectl.kubernetes.io/last-applied-configuration",
    }
)
"""InferenceService annotations OME does not copy to the objects it generates (the documented list)."""

SERVICE_EXCLUDED_PREFIXES: Final = (
    "prometheus.io/",
    "k8s.grafana.com/",
    "loki.grafana.com/",
    "networking.gke.io/",
    "rdma.ome.io/",
    "runtime.ome.io/",
    "ome.io/inject-model-init",
    "ome.io/inject-fine-tuned-adapter",
    "ome.io/inject-serving-sidecar",
)
"""Pod-only keys: prefixes, and exact keys matched as prefixes as OME does."""

# Scheduling queues.
VOLCANO_QUEUE_ANNOTATION: Final = "ome.io/volcano-queue"
DEDICATED_AI_CLUSTER_ANNOTATION: Final = "ome.io/dedicated-ai-cluster"
KUEUE_ENABLED_ANNOTATION: Final = "kueue-enabled"
VOLCANO_QUEUE_LABEL: Final = "volcano.sh/queue-name"
KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"
KUEUE_PRIORITY: Final = "kueue-scheduling-high-priority"


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What the labels and annotations say about the base model."""

    name: str
    vendor: str | None = None
    format: str = ""
    format_version: str | None = None
    category: str = DEFAULT_MODEL_SIZE

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> ModelFacts:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        model_format = spec.get("modelFormat") or {}
        category = (meta.get("annotations") or {}).get(MODEL_CATEGORY_ANNOTATION)
        return cls(
            name=str(meta.get("name") or ""),
            vendor=_str_or_none(spec.get("vendor")),
            format=str(model_format.get("name") or ""),
            format_version=_str_or_none(model_format.get("version")),
            category=category if isinstance(category, str) else DEFAULT_MODEL_SIZE,
        )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def workload_labels(
    isvc: Mapping[str, Any],
    component: str,
    component_labels: Mapping[str, str] | None,
    runtime_name: str | None,
    model: ModelFacts | None,
    *,
    fine_tuned_serving: bool,
) -> dict[str, str]:
    """ISVC labels, then the component's, then OME's own (which win)."""
    meta = isvc.get("metadata") or {}
    result = {**(meta.get("labels") or {}), **(component_labels or {})}
    result.update(naming.selector_labels(meta["name"], component))
    if runtime_name:
        result[naming.RUNTIME_LABEL] = runtime_name
    result[LABEL_FINE_TUNED_SERVING] = "true" if fine_tuned_serving else "false"
    if model is not None:
        result[LABEL_BASE_MODEL_NAME] = model.name
        result[LABEL_BASE_MODEL_SIZE] = model.category
        result[LABEL_BASE_MODEL_TYPE] = BASE_MODEL_TYPE_SERVING
        if model.vendor:
            result[LABEL_BASE_MODEL_VENDOR] = model.vendor
    return result


def workload_annotations(
    isvc: Mapping[str, Any],
    component_annotations: Mapping[str, str] | None,
    runtime_name: str | None,
    model: ModelFacts | None,
) -> dict[str, str]:
    """ISVC annotations (less the ones never copied), then the component's, then OME's own."""
    own = (isvc.get("metadata") or {}).get("annotations") or {}
    result = {k: v for k, v in own.items() if k not in NOT_COPIED}
    result.update(component_annotations or {})
    result.pop("internal.ome.io/in-place-image-transition", None)  # never on a new object, whoever set it
    if model is not None:
        result[ANNOTATION_BASE_MODEL_NAME] = model.name
        if model.vendor:
            result[ANNOTATION_BASE_MODEL_VENDOR] = model.vendor
        result[ANNOTATION_BASE_MODEL_FORMAT] = model.format
        if model.format_version:
            result[ANNOTATION_BASE_MODEL_FORMAT_VERSION] = model.format_version
    if runtime_name:
        result[ANNOTATION_SERVING_RUNTIME] = runtime_name
    return result


def service_annotations(source: Mapping[str, str]) -> dict[str, str]:
    """`source` without the pod-only keys."""
    return {k: v for k, v in source.items() if not k.startswith(SERVICE_EXCLUDED_PREFIXES)}


def queue_labels(pod_annotations: Mapping[str, str]) -> dict[str, str]:
    """The queue labels a RawDeployment or MultiNode pod gets from its merged annotations."""
    if (queue := pod_annotations.get(VOLCANO_QUEUE_ANNOTATION)) is not None:
        return {VOLCANO_QUEUE_LABEL: queue}
    if (cluster := pod_annotations.get(DEDICATED_AI_CLUSTER_ANNOTATION)) is not None:
        if KUEUE_ENABLED_ANNOTATION in pod_annotations:  # its presence counts, whatever the value
            return {KUEUE_QUEUE_LABEL: cluster, KUEUE_PRIORITY_LABEL: KUEUE_PRIORITY}
        return {VOLCANO_QUEUE_LABEL: cluster}
    return {}
