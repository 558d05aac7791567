"""The benchmark Job, built from a BenchmarkJob and what OME found about its target. Pure: no I/O.

benchmarks.md, "How a benchmark runs": a Job `{name}` labelled `benchmark: <name>` in the BenchmarkJob's
namespace, run once (backoffLimit 0, restartPolicy Never), `genai-bench benchmark ...`. For an
InferenceService the base URL is the scheme and host of `status.url`, the API format `openai` or the
engine runner's `PROTOCOL_VERSION`, the model name the engine's `--served-model-name` (else `--model`,
`--model-path`) as its pods run it, the tokenizer the model's `storage.path` mounted read-only from the
node, the API key `sample-key`, and the pod runs where the model is Ready. `podOverride` is merged field by
field as the page's table says (`merge_override`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from ome.controllers.benchmarkjob import output_storage

Obj = dict[str, Any]
LABEL: Final = "benchmark"
COMMAND: Final = "genai-bench"
SUBCOMMAND: Final = "benchmark"
API_KEY_PLACEHOLDER: Final = "sample-key"
HF_KEY: Final = "HUGGINGFACE_API_KEY"
GPU_TOLERATION: Final = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CONFIGMAP: Final = "benchmarkjob-config"
CONFIGMAP_KEY: Final = "benchmarkjob"
DEFAULT_IMAGE: Final = "ghcr.io/moirai-internal/genai-bench:0.1.113"
_FLAGS: Final = ("--served-model-name", "--model", "--model-path")


class BuildError(ValueError):
    """Why the Job can't be built yet; the message is the documented log text."""


@dataclass(frozen=True, slots=True)
class PodConfig:
    """The chart's `ome.benchmarkJob` values, as the `benchmarkjob-config` ConfigMap carries them."""

    image: str = DEFAULT_IMAGE
    cpu_request: str = "2"
    memory_request: str = "2Gi"
    cpu_limit: str = "2"
    memory_limit: str = "2Gi"


def pod_config(data: Mapping[str, str] | None) -> PodConfig:
    """From the ConfigMap's `benchmarkjob` JSON (`{"podConfig": {...}}`); missing keys keep the defaults."""
    raw = (data or {}).get(CONFIGMAP_KEY)
    if not raw:
        return PodConfig()
    try:
        pod = json.loads(raw).get("podConfig") or {}
    except (ValueError, AttributeError) as exc:
        raise BuildError(f"invalid {CONFIGMAP} ConfigMap: {exc}") from exc
    base = PodConfig()
    return PodConfig(image=pod.get("image") or base.image,
                     cpu_request=pod.get("cpuRequest") or base.cpu_request,
                     memory_request=pod.get("memoryRequest") or base.memory_request,
                     cpu_limit=pod.get("cpuLimit") or base.cpu_limit,
                     memory_limit=pod.get("memoryLimit") or base.memory_limit)


@dataclass(frozen=True, slots=True)
class Target:
    """What genai-bench is pointed at, and what the pod needs for it."""

    api_backend: str
    api_base: str
    model_name: str
    api_key: str | None = None
    tokenizer: str | None = None
    model_volume: str | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)


def endpoint_target(endpoint: Mapping[str, Any]) -> Target:
    return Target(api_backend=str(endpoint.get("apiFormat") or ""), api_base=str(endpoint.get("url") or ""),
                  model_name=str(endpoint.get("modelName") or ""))


def is_ready(isvc: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (isvc.get("status") or {}).get("conditions") or [])


def _flag_value(argv: list[str], flag: str) -> str:
    for i, arg in enumerate(argv):
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
        if arg == flag and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return argv[i + 1]
    return ""


def _expand(value: str, env: Iterable[Mapping[str, Any]]) -> str:
    # Runtimes pass $(SERVED_MODEL_NAME) / $(MODEL_PATH): the engine sees the expanded value.
    for var in env:
        if var.get("value"):
            value = value.replace(f"$({var['name']})", str(var["value"]))
    return value


def served_model_name(namespace: str, name: str, engine_pods: Iterable[Mapping[str, Any]]) -> str:
    """The name the engine serves: the first `--served-model-name`, else `--model` / `--model-path`."""
    location = ""
    for pod in engine_pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
            env = container.get("env") or []
            if served := _flag_value(argv, _FLAGS[0]):
                return _expand(served, env)
            if not location:
                location = next((_expand(v, env) for f in _FLAGS[1:] if (v := _flag_value(argv, f))), "")
    if location:
        return location
    raise BuildError(f"cannot determine the served model name of InferenceService {namespace}/{name}: "
                     f"no engine pod container specifies {', '.join(_FLAGS[:2])} or {_FLAGS[2]}")


def isvc_target(isvc: Mapping[str, Any], model: Mapping[str, Any] | None, model_label: str | None,
                engine_pods: Iterable[Mapping[str, Any]]) -> Target:
    """`model` is the InferenceService's BaseModel or ClusterBaseModel, `model_label` its node label key."""
    meta = isvc.get("metadata") or {}
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    spec = isvc.get("spec") or {}
    model_name = (spec.get("model") or {}).get("name")
    if not model_name:
        raise BuildError(f"InferenceService {namespace}/{name} has no Model defined")
    if model is None:
        raise BuildError(f"failed to get BaseModel {model_name}: not found")
    path = ((model.get("spec") or {}).get("storage") or {}).get("path")
    if not path:
        raise BuildError(f"BaseModel {model_name} has missing Storage or Path information")
    served = served_model_name(namespace, name, engine_pods)
    env = ((spec.get("engine") or {}).get("runner") or {}).get("env") or []
    protocol = next((e.get("value") for e in env
                     if e.get("name") == "PROTOCOL_VERSION" and e.get("value")), None)
    url = urlsplit(str((isvc.get("status") or {}).get("url") or ""))
    if not url.netloc:
        raise BuildError(f"InferenceService {namespace}/{name} has no URL.Host in status")
    return Target(api_backend=protocol or "openai", api_base=f"{url.scheme or 'http'}://{url.netloc}",
                  model_name=served, api_key=API_KEY_PLACEHOLDER, tokenizer=str(path),
                  model_volume=model_name,
                  node_selector={model_label: "Ready"} if model_label else {})


def command_args(spec: Mapping[str, Any], target: Target) -> list[str]:
    args = [SUBCOMMAND, "--api-backend", target.api_backend, "--api-base", target.api_base,
            "--api-model-name", target.model_name, "--task", str(spec.get("task")),
            "--max-time-per-run", str(spec.get("maxTimePerIteration")),
            "--max-requests-per-run", str(spec.get("maxRequestsPerIteration"))]
    if target.api_key:
        args += ["--api-key", target.api_key]
    if target.tokenizer:
        args += ["--model-tokenizer", target.tokenizer]
    for scenario in spec.get("trafficScenarios") or []:
        args += ["--traffic-scenario", str(scenario)]
    for level in spec.get("numConcurrency") or []:
        args += ["--num-concurrency", str(level)]
    if spec.get("resultFolderName"):
        args += ["--experiment-folder-name", str(spec["resultFolderName"])]
    if meta := spec.get("serviceMetadata"):
        args += ["--server-engine", str(meta.get("engine")), "--server-gpu-type", str(meta.get("gpuType")),
                 "--server-version", str(meta.get("version")),
                 "--server-gpu-count", str(meta.get("gpuCount"))]
    location = spec.get("outputLocation") or {}
    try:
        args += output_storage.storage_args(str(location.get("storageUri") or ""), location.get("parameters"))
    except output_storage.OutputStorageError as exc:
        raise BuildError(f"failed to build storage args: {exc}") from exc
    return args


def _by(items: Iterable[Obj], key: str, overrides: Iterable[Obj]) -> list[Obj]:
    """Items of `overrides` replace those with the same `key`, in place; the others are appended."""
    merged = [dict(i) for i in items]
    for item in overrides:
        at = next((n for n, old in enumerate(merged) if old.get(key) == item.get(key)), None)
        if at is None:
            merged.append(dict(item))
        else:
            merged[at] = dict(item)
    return merged


def merge_override(pod: Obj, override: Mapping[str, Any]) -> Obj:
    """benchmarks.md's podOverride table, on the built pod spec (a new dict)."""
    pod = json.loads(json.dumps(pod))
    container = pod["containers"][0]
    # As the Go merge does, an overridden container is named after the tool.
    container["name"] = COMMAND
    if override.get("image"):
        container["image"] = override["image"]
    resources = override.get("resources") or {}
    for part in ("requests", "limits"):
        if resources.get(part):
            container.setdefault("resources", {}).setdefault(part, {}).update(resources[part])
    if override.get("env"):
        container["env"] = _by(container.get("env") or [], "name", override["env"])
    if override.get("envFrom"):
        container["envFrom"] = list(override["envFrom"])
    if override.get("volumeMounts"):
        container["volumeMounts"] = _by(container.get("volumeMounts") or [], "mountPath",
                                        override["volumeMounts"])
    if override.get("volumes"):
        pod["volumes"] = _by(pod.get("volumes") or [], "name", override["volumes"])
    if override.get("nodeSelector"):
        pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **override["nodeSelector"]}
    if override.get("tolerations"):
        pod["tolerations"] = list(override["tolerations"])
    if override.get("affinity"):
        pod["affinity"] = override["affinity"]
    return pod


def build_job(benchmark: Mapping[str, Any], target: Target, config: PodConfig) -> Obj:
    meta = benchmark["metadata"]
    name, namespace = meta["name"], meta["namespace"]
    spec = benchmark.get("spec") or {}
    env: list[Obj] = [{"name": "ENABLE_UI", "value": "false"}]
    if (ref := spec.get("huggingFaceSecretReference") or {}).get("name"):
        env.append({"name": HF_KEY, "valueFrom": {"secretKeyRef": {"name": ref["name"], "key": HF_KEY}}})
    volumes: list[Obj] = []
    mounts: list[Obj] = []
    if target.model_volume and target.tokenizer:
        volumes.append({"name": target.model_volume, "hostPath": {"path": target.tokenizer}})
        mounts.append({"name": target.model_volume, "mountPath": target.tokenizer, "readOnly": True})
        env.append({"name": "MODEL_PATH", "value": target.tokenizer})
    location = spec.get("outputLocation") or {}
    try:
        claim = output_storage.claim_of(str(location.get("storageUri") or ""))
    except output_storage.OutputStorageError as exc:
        raise BuildError(f"error parsing PVC storage URI: {exc}") from exc
    if claim is not None:
        volumes.append({"name": output_storage.OUTPUT_VOLUME,
                        "persistentVolumeClaim": {"claimName": claim.claim}})
        mounts.append({"name": output_storage.OUTPUT_VOLUME, "mountPath": "/" + claim.sub_path,
                       "subPath": claim.sub_path})
    container: Obj = {
        "name": name, "image": config.image, "command": [COMMAND], "args": command_args(spec, target),
        "env": env,
        "resources": {"requests": {"cpu": config.cpu_request, "memory": config.memory_request},
                      "limits": {"cpu": config.cpu_limit, "memory": config.memory_limit}},
    }
    if mounts:
        container["volumeMounts"] = mounts
    pod: Obj = {"containers": [container], "tolerations": [dict(GPU_TOLERATION)], "restartPolicy": "Never"}
    if volumes:
        pod["volumes"] = volumes
    if target.node_selector:
        pod["nodeSelector"] = dict(target.node_selector)
    if override := spec.get("podOverride"):
        pod = merge_override(pod, override)
    labels = {LABEL: name}
    annotations = {"logging-forward": "true"}
    owner = {"apiVersion": "ome.io/v1beta1", "kind": "BenchmarkJob", "name": name, "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations,
                     "ownerReferences": [owner]},
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": dict(labels),
                                                              "annotations": dict(annotations)},
                                                 "spec": pod}},
    }


__all__ = ["CONFIGMAP", "LABEL", "BuildError", "PodConfig", "Target", "build_job", "endpoint_target",
           "is_ready", "isvc_target", "merge_override", "pod_config", "served_model_name"]
