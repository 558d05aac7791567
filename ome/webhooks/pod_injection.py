"""The pod webhook's container injections (labels-and-annotations.md, "Pods"): pure, on the pod as admitted.

* `ome.io/inject-model-init: "true"` (exactly): the init container `model-init` (`enigma`), configured by
  the `modelInit` entry, which decrypts the model with OCI Vault. It gets the model's name and format
  (`ome.io/base-model-name`, `ome.io/base-model-format`), the decryption settings
  (`ome.io/base-model-decryption-key-name`, `-secret-name`, `ome.io/disable-model-decryption`, default
  "false") and the pod label `base-model-type` (default `Serving`); a TensorRT-LLM model also gets the
  format version and the GPU count, and a pod whose `ome-container` has no `nvidia.com/gpu` limit is denied.
* `ome.io/inject-serving-sidecar: "true"` (exactly): the container `serving-sidecar` (`serving-agent`),
  configured by the `servingSidecar` entry, with `ome.io/fine-tuned-weight-ft-strategy`.
* `ome.io/inject-fine-tuned-adapter: <FineTunedWeight>`: the init container `fine-tuned-adapter`, unless the
  pod has one (OME's controller renders it into the pods it makes) or the weights are not on oci://.

Each is skipped when the pod already has the container. An entry missing what the container needs, a pod
without `ome-container`, or `authType: OkeWorkloadIdentity` without a ServiceAccount denies the pod with
v1.3's message. The injected container copies `ome-container`'s securityContext.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ome.config.inferenceservice_config import AgentImageConfig, FineTunedAdapterConfig
from ome.config.pod_injection import ServingSidecarConfig
from ome.resolution import fine_tuned
from ome.webhooks.handler import PodDenied
from ome.webhooks.loose import as_dict, as_list, text

Obj = dict[str, Any]

MAIN_CONTAINER: Final = "ome-container"
TRAINING_CONTAINER: Final = "trainer"
MODEL_INIT: Final = "model-init"
SERVING_SIDECAR: Final = "serving-sidecar"
INJECT_MODEL_INIT: Final = "ome.io/inject-model-init"
INJECT_SERVING_SIDECAR: Final = "ome.io/inject-serving-sidecar"
INJECT_FINE_TUNED_ADAPTER: Final = fine_tuned.ANNOTATION_INJECT
BASE_MODEL_NAME: Final = "ome.io/base-model-name"
BASE_MODEL_FORMAT: Final = "ome.io/base-model-format"
BASE_MODEL_FORMAT_VERSION: Final = "ome.io/base-model-format-version"
BASE_MODEL_VENDOR: Final = "ome.io/base-model-vendor"
DECRYPTION_KEY: Final = "ome.io/base-model-decryption-key-name"
DECRYPTION_SECRET: Final = "ome.io/base-model-decryption-secret-name"
DISABLE_DECRYPTION: Final = "ome.io/disable-model-decryption"
FT_STRATEGY: Final = fine_tuned.ANNOTATION_STRATEGY
BASE_MODEL_TYPE_LABEL: Final = "base-model-type"
OKE_WORKLOAD_IDENTITY: Final = "OkeWorkloadIdentity"
MODEL_VOLUME: Final = "model-empty-dir"
MODEL_DIR: Final = "/opt/ml/model"
MODEL_DIR_PREFIX: Final = "/opt/ml"
SOURCE_DIR: Final = "/mnt/model"
DOWNLOAD_DIR: Final = "/mnt/finetuned/download"
TENSORRT_LLM: Final = "tensorrtllm"
AGENT_CONFIG: Final = "/ome-agent.yaml"
_ENV: Final = "OME_AGENT_"
# v1.3 passes the variable's own name as the sidecar's info file path; kept so the agent sees the same.
FT_INFO_FILE: Final = _ENV + "FINE_TUNED_WEIGHT_INFO_FILE_PATH"


@dataclass(frozen=True, slots=True)
class Injections:
    """The config entries the injections read (None: the entry is not in inferenceservice-config)."""

    model_init: AgentImageConfig | None = None
    serving_sidecar: ServingSidecarConfig | None = None
    fine_tuned_adapter: FineTunedAdapterConfig | None = None
    fine_tuned_weight: Callable[[str], Obj | None] = field(default=lambda _name: None)
    """The FineTunedWeight of a name, from the cache."""


def _container(containers: Any, name: str) -> Obj | None:
    return next((c for c in as_list(containers) if isinstance(c, dict) and c.get("name") == name), None)


def _required(kind: str, entry: Any, fields: tuple[tuple[str, str], ...]) -> None:
    """go-playground's `required` failures, in v1.3's words, for the fields the entry lacks."""
    missing = [go for attr, go in fields if entry is None or not getattr(entry, attr, None)]
    if missing:
        detail = "\n".join(f"Key: '{kind}.{go}' Error:Field validation for '{go}' failed on the "
                           "'required' tag" for go in missing)
        raise PodDenied(f"failed to validate {kind}: {detail}")


def _auth(pod: Obj, auth_type: str | None) -> None:
    if auth_type != OKE_WORKLOAD_IDENTITY:
        return
    spec = pod.setdefault("spec", {})
    if not text(spec.get("serviceAccountName")):
        raise PodDenied("a service account should be specified when using OKEWorkloadIdentity")
    spec["automountServiceAccountToken"] = True


def _security_context(pod: Obj, *, allow_trainer: bool = False) -> Obj | None:
    containers = as_dict(pod.get("spec")).get("containers")
    main = _container(containers, MAIN_CONTAINER) or (
        _container(containers, TRAINING_CONTAINER) if allow_trainer else None)
    if main is None:
        if allow_trainer:
            raise PodDenied(f"no main container {MAIN_CONTAINER} or {TRAINING_CONTAINER} specified")
        raise PodDenied(f"no main container {MAIN_CONTAINER} specified")
    context = main.get("securityContext")
    return copy.deepcopy(context) if isinstance(context, dict) else None


def _resources(entry: Any) -> Obj:
    out: Obj = {}
    limits = {k: v for k, v in (("cpu", entry.cpu_limit), ("memory", entry.memory_limit)) if v}
    requests = {k: v for k, v in (("cpu", entry.cpu_request), ("memory", entry.memory_request)) if v}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    return out


def _agent_container(name: str, command: str, entry: Any, env: list[tuple[str, str]], mounts: list[Obj],
                     security: Obj | None) -> Obj:
    container: Obj = {"name": name, "image": entry.image, "terminationMessagePolicy": "FallbackToLogsOnError",
                      "env": [{"name": k, "value": v} for k, v in env],
                      "volumeMounts": mounts, "args": [command, "--config", AGENT_CONFIG, "--debug"],
                      "resources": _resources(entry)}
    if security is not None:
        container["securityContext"] = security
    return container


def _normalized_format(value: str) -> str:
    return value.replace("_", "").replace("-", "").lower()


def _gpu_count(pod: Obj) -> str:
    main = _container(as_dict(pod.get("spec")).get("containers"), MAIN_CONTAINER) or {}
    gpus = as_dict(as_dict(main.get("resources")).get("limits")).get("nvidia.com/gpu")
    if gpus is None or gpus == "":
        raise PodDenied("NVIDIA GPU resource not set for main container")
    return str(gpus)


def inject_model_init(pod: Obj, annotations: Mapping[str, Any], entry: AgentImageConfig | None) -> None:
    if annotations.get(INJECT_MODEL_INIT) != "true":
        return
    spec = pod.setdefault("spec", {})
    if _container(spec.get("initContainers"), MODEL_INIT) is not None:
        return
    _required("ModelInitInjector", entry, (("image", "Image"), ("compartment_id", "CompartmentId"),
                                           ("auth_type", "AuthType"), ("vault_id", "VaultId")))
    assert entry is not None
    _auth(pod, entry.auth_type)
    labels = as_dict(as_dict(pod.get("metadata")).get("labels"))
    model = text(annotations.get(BASE_MODEL_NAME))
    env = [(_ENV + "AUTH_TYPE", entry.auth_type or ""), (_ENV + "COMPARTMENT_ID", entry.compartment_id or ""),
           (_ENV + "VAULT_ID", entry.vault_id or ""), (_ENV + "MODEL_NAME", model),
           (_ENV + "KEY_NAME", text(annotations.get(DECRYPTION_KEY))),
           (_ENV + "SECRET_NAME", text(annotations.get(DECRYPTION_SECRET))),
           (_ENV + "DISABLE_MODEL_DECRYPTION", text(annotations.get(DISABLE_DECRYPTION, "false"))),
           (_ENV + "MODEL_TYPE", text(labels.get(BASE_MODEL_TYPE_LABEL, "Serving"))),
           (_ENV + "LOCAL_PATH", SOURCE_DIR), (_ENV + "MODEL_STORE_DIRECTORY", MODEL_DIR),
           (_ENV + "REGION", entry.region or "")]
    model_format = _normalized_format(text(annotations.get(BASE_MODEL_FORMAT)))
    if model_format == TENSORRT_LLM:
        env += [(_ENV + "MODEL_FRAMEWORK", TENSORRT_LLM),
                (_ENV + "TENSORRTLLM_VERSION", text(annotations.get(BASE_MODEL_FORMAT_VERSION))),
                (_ENV + "NUM_OF_GPU", _gpu_count(pod))]
    else:
        env.append((_ENV + "MODEL_FRAMEWORK", model_format))
    mounts = [{"name": MODEL_VOLUME, "mountPath": MODEL_DIR}, {"name": model, "mountPath": SOURCE_DIR}]
    security = _security_context(pod, allow_trainer=True)
    spec.setdefault("initContainers", []).append(
        _agent_container(MODEL_INIT, "enigma", entry, env, mounts, security))


def inject_serving_sidecar(pod: Obj, annotations: Mapping[str, Any],
                           entry: ServingSidecarConfig | None) -> None:
    if annotations.get(INJECT_SERVING_SIDECAR) != "true":
        return
    spec = pod.setdefault("spec", {})
    if _container(spec.get("containers"), SERVING_SIDECAR) is not None:
        return
    _required("ServingSidecarInjector", entry, (("image", "Image"), ("compartment_id", "CompartmentId"),
                                                ("auth_type", "AuthType")))
    assert entry is not None
    _auth(pod, entry.auth_type)
    if FT_STRATEGY not in annotations:
        raise PodDenied("failed to get the fine-tuned weight FT strategy for the serving sidecar")
    weights_dir = f"{MODEL_DIR_PREFIX}/{text(annotations.get(FT_STRATEGY))}".rstrip("/")
    env = [(_ENV + "AUTH_TYPE", entry.auth_type or ""), (_ENV + "COMPARTMENT_ID", entry.compartment_id or ""),
           (_ENV + "REGION", entry.region or ""), (FT_INFO_FILE, FT_INFO_FILE),
           (_ENV + "UNZIPPED_FINE_TUNED_WEIGHT_DIRECTORY", weights_dir),
           (_ENV + "ZIPPED_FINE_TUNED_WEIGHT_DIRECTORY", DOWNLOAD_DIR)]
    mounts = [{"name": MODEL_VOLUME, "mountPath": DOWNLOAD_DIR, "subPath": "download"},
              {"name": MODEL_VOLUME, "mountPath": weights_dir, "subPath": "finetuned"}]
    security = _security_context(pod)
    spec.setdefault("containers", []).append(
        _agent_container(SERVING_SIDECAR, "serving-agent", entry, env, mounts, security))


def inject_fine_tuned_adapter(pod: Obj, annotations: Mapping[str, Any], injections: Injections) -> None:
    name = text(annotations.get(INJECT_FINE_TUNED_ADAPTER))
    if not name:
        return
    spec = pod.setdefault("spec", {})
    if _container(spec.get("initContainers"), fine_tuned.INIT_CONTAINER) is not None:
        return  # rendered by the controller, as every pod OME makes has it
    ftw = injections.fine_tuned_weight(name)
    uri = text(as_dict(as_dict((ftw or {}).get("spec")).get("storage")).get("storageUri")).strip()
    if ftw is not None and not uri.startswith("oci://"):
        return  # only oci:// weights are downloaded; pvc://, s3:// and the rest reach the pod otherwise
    entry = injections.fine_tuned_adapter
    _required("FineTunedAdapterInjector", entry, (("image", "Image"), ("compartment_id", "CompartmentId"),
                                                  ("auth_type", "AuthType")))
    assert entry is not None
    _auth(pod, entry.auth_type)
    security = _security_context(pod)
    isvc = {"spec": {"model": {"fineTunedWeights": [name]}}}
    vendor = {"spec": {"vendor": text(annotations.get(BASE_MODEL_VENDOR))}}
    try:
        resolved = fine_tuned.resolve(isvc, ftw, vendor)
    except fine_tuned.FineTunedError as exc:
        raise PodDenied(str(exc)) from exc
    assert resolved is not None
    if text(annotations.get(fine_tuned.ANNOTATION_MERGED)) == "true" and not resolved.merged:
        resolved = fine_tuned.FineTuned(resolved.name, True, resolved.strategy, resolved.vendor,
                                        resolved.oci_namespace, resolved.bucket,
                                        resolved.object_name + fine_tuned.MERGED_SUFFIX)
    container = fine_tuned.init_container(resolved, entry)
    if security is not None:
        container["securityContext"] = security
    spec.setdefault("initContainers", []).append(container)


__all__ = ["Injections", "inject_fine_tuned_adapter", "inject_model_init", "inject_serving_sidecar"]
