"""Fine-tuned weights: the FineTunedWeight an InferenceService names, and what its serving pods get.

Pure: the reconciler passes the cached FineTunedWeight and the config entry. The `fine-tuned-adapter` init
container downloads the weights (one zip in OCI Object Storage) into a memory-backed emptyDir that the
runner mounts at /opt/ml/model (/opt/ml/tfew for a Cohere T-Few adapter). OME renders it into the pod
template itself rather than through a pod webhook, so a bad entry surfaces on the InferenceService (an
event and a retry) instead of as a ReplicaSet that cannot create pods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ome.config.inferenceservice_config import AgentImageConfig
from ome.resolution.merge import upsert_env
from ome.resolution.models import ResolutionError

Obj = dict[str, Any]

INIT_CONTAINER: Final = "fine-tuned-adapter"
VOLUME: Final = "model-empty-dir"
MODEL_DIR: Final = "/opt/ml/model"
TFEW_DIR: Final = "/opt/ml/tfew"
DOWNLOAD_DIR: Final = "/mnt/finetuned/download"
TFEW_PATH: Final = "/opt/ml/tfew/fastertransformer/1"
MERGED_SUFFIX: Final = "-merged-weight"
AGENT_CONFIG: Final = "/ome-agent.yaml"
# Pod labels and annotations (reference/api/labels-and-annotations).
LABEL_SERVING: Final = "fine-tuned-serving"
LABEL_STRATEGY: Final = "fine-tuned-weight-ft-strategy"
LABEL_MERGED: Final = "fine-tuned-serving-with-merged-weights"
ANNOTATION_INJECT: Final = "ome.io/inject-fine-tuned-adapter"
ANNOTATION_STRATEGY: Final = "ome.io/fine-tuned-weight-ft-strategy"
ANNOTATION_MERGED: Final = "ome.io/fine-tuned-serving-with-merged-weights"
ANNOTATION_MODEL_INIT: Final = "ome.io/inject-model-init"
_OCI: Final = re.compile(r"^oci://n/(?P<namespace>[^/]+)/b/(?P<bucket>[^/]+)/o/(?P<object>.+)$")


class FineTunedError(ResolutionError):
    """The fine-tuned weights cannot be served as specified; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class FineTuned:
    name: str
    merged: bool
    strategy: str
    vendor: str
    """The base model's vendor: `meta` sets MODEL_PATH and SERVED_MODEL_NAME, `cohere` + tfew TFEW_PATH."""
    oci_namespace: str
    bucket: str
    object_name: str
    """The object to download: the URI's, with `-merged-weight` appended for merged weights."""

    @property
    def tfew(self) -> bool:
        return self.vendor == "cohere" and self.strategy == "tfew"


def names(isvc: Mapping[str, Any]) -> list[str]:
    model = ((isvc.get("spec") or {}).get("model") or {})
    return [n for n in model.get("fineTunedWeights") or [] if isinstance(n, str)]


def parse_oci_uri(uri: str) -> tuple[str, str, str]:
    match = _OCI.match(uri or "")
    if match is None:
        raise FineTunedError(
            f"invalid OCI storage URI format {uri!r}: expected oci://n/<namespace>/b/<bucket>/o/<object>"
        )
    return match["namespace"], match["bucket"], match["object"]


def resolve(isvc: Mapping[str, Any], ftw: Mapping[str, Any] | None, base_model: Mapping[str, Any] | None
            ) -> FineTuned | None:
    """The one FineTunedWeight the InferenceService serves, or None when it names none."""
    wanted = names(isvc)
    if not wanted:
        return None
    if len(wanted) > 1:
        raise FineTunedError("stacked fine-tuned serving is not supported yet: "
                             "spec.model.fineTunedWeights lists more than one FineTunedWeight")
    if ftw is None:
        raise FineTunedError(f"No FineTunedWeight with the name: {wanted[0]}")
    spec = ftw.get("spec") or {}
    configuration = spec.get("configuration")
    if configuration is None:
        raise FineTunedError(f"FineTunedWeight {wanted[0]} has no configuration (merged weights or adapter)")
    merged = isinstance(configuration, Mapping) and configuration.get("merged_weights") is True
    strategy = (spec.get("hyperParameters") or {}).get("strategy")
    if not isinstance(strategy, str) or not strategy:
        raise FineTunedError(
            f'FineTunedWeight {wanted[0]}: hyper-parameter "strategy" is missing or not a string'
        )
    namespace, bucket, obj = parse_oci_uri((spec.get("storage") or {}).get("storageUri") or "")
    vendor = str(((base_model or {}).get("spec") or {}).get("vendor") or "")
    return FineTuned(wanted[0], merged, strategy, vendor, namespace, bucket,
                     obj + MERGED_SUFFIX if merged else obj)


def check_config(entry: AgentImageConfig | None) -> AgentImageConfig:
    """The fineTunedAdapter entry must exist with its required keys; the install does not write it."""
    if entry is None:
        raise FineTunedError("failed to validate FineTunedAdapterInjector: the fineTunedAdapter entry is "
                             "missing from inferenceservice-config")
    missing = [k for k, v in (("image", entry.image), ("compartmentId", entry.compartment_id),
                              ("authType", entry.auth_type)) if not v]
    missing += [k for k, v in (("cpuRequest", entry.cpu_request), ("cpuLimit", entry.cpu_limit),
                               ("memoryRequest", entry.memory_request), ("memoryLimit", entry.memory_limit))
                if not v]
    if missing:
        raise FineTunedError("failed to validate FineTunedAdapterInjector: fineTunedAdapter lacks "
                             + ", ".join(missing))
    return entry


def pod_labels(ft: FineTuned) -> dict[str, str]:
    merged = "true" if ft.merged else "false"
    return {LABEL_SERVING: "true", LABEL_STRATEGY: ft.strategy, LABEL_MERGED: merged}


def pod_annotations(ft: FineTuned) -> dict[str, str]:
    annotations = {ANNOTATION_INJECT: ft.name, ANNOTATION_STRATEGY: ft.strategy}
    if ft.merged:
        annotations.update({ANNOTATION_MERGED: "true", ANNOTATION_MODEL_INIT: "false"})
    return annotations


def init_container(ft: FineTuned, entry: AgentImageConfig) -> Obj:
    target = TFEW_DIR if ft.tfew else MODEL_DIR
    env = {
        "OME_AGENT_AUTH_TYPE": entry.auth_type or "",
        "OME_AGENT_COMPARTMENT_ID": entry.compartment_id or "",
        "OME_AGENT_REGION": entry.region or "",
        "OME_AGENT_ZIPPED_FINE_TUNED_WEIGHT_DIRECTORY": DOWNLOAD_DIR,
        "OME_AGENT_UNZIPPED_FINE_TUNED_WEIGHT_DIRECTORY": target,
        "OME_AGENT_MODEL_NAMESPACE": ft.oci_namespace,
        "OME_AGENT_MODEL_BUCKET_NAME": ft.bucket,
        "OME_AGENT_MODEL_OBJECT_NAME": ft.object_name,
    }
    return {
        "name": INIT_CONTAINER,
        "image": entry.image,
        "args": [INIT_CONTAINER, "--config", AGENT_CONFIG, "--debug"],
        "env": [{"name": k, "value": v} for k, v in env.items() if v],
        "resources": {
            "requests": {"cpu": entry.cpu_request, "memory": entry.memory_request},
            "limits": {"cpu": entry.cpu_limit, "memory": entry.memory_limit},
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
            {"name": VOLUME, "mountPath": DOWNLOAD_DIR},
            {"name": VOLUME, "mountPath": target},
        ],
    }


def inject(pod_spec: Obj, container: Obj, ft: FineTuned, entry: AgentImageConfig) -> None:
    """The init container, the memory-backed volume, the runner's mount and its environment."""
    volumes: list[Obj] = pod_spec.setdefault("volumes", [])
    if not any(v.get("name") == VOLUME for v in volumes):
        volumes.append({"name": VOLUME, "emptyDir": {"medium": "Memory"}})
    inits: list[Obj] = pod_spec.setdefault("initContainers", [])
    inits[:] = [c for c in inits if c.get("name") != INIT_CONTAINER] + [init_container(ft, entry)]
    target = TFEW_DIR if ft.tfew else MODEL_DIR
    mounts: list[Obj] = container.setdefault("volumeMounts", [])
    if not any(m.get("mountPath") == target for m in mounts):
        mounts.append({"name": VOLUME, "mountPath": target})
    if ft.vendor == "meta":
        upsert_env(container, "MODEL_PATH", MODEL_DIR, overwrite=False)
        upsert_env(container, "SERVED_MODEL_NAME", f"/data/{ft.name}", overwrite=True)
    if ft.tfew:
        upsert_env(container, "TFEW_PATH", TFEW_PATH, overwrite=True)
