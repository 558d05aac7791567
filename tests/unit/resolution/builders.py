"""Test objects for InferenceService resolution: plain dicts as the cache holds them."""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]


def isvc(
    name: str = "llama",
    namespace: str = "demo",
    *,
    engine: Obj | None = None,
    decoder: Obj | None = None,
    router: Obj | None = None,
    model: str | None = "llama-3-2-1b-instruct",
    runtime: str | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    body: Obj = {"engine": {} if engine is None else engine}
    if decoder is not None:
        body["decoder"] = decoder
    if router is not None:
        body["router"] = router
    if model is not None:
        body["model"] = {"name": model}
    if runtime is not None:
        body["runtime"] = {"name": runtime}
    body.update(spec)
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "generation": 1,
        "resourceVersion": "1",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": meta, "spec": body}


def runtime(
    name: str = "vllm-llama",
    *,
    engine_config: Obj | None = None,
    decoder_config: Obj | None = None,
    router_config: Obj | None = None,
    namespace: str | None = None,
) -> Obj:
    spec: Obj = {
        "supportedModelFormats": [
            {
                "modelFormat": {"name": "safetensors"},
                "modelFramework": {"name": "transformers"},
                "autoSelect": True,
            }
        ],
        "engineConfig": engine_config
        if engine_config is not None
        else {
            "runner": {
                "name": "ome-container",
                "image": "vllm/vllm-openai:v0.9.0",
                "args": ["--model", "$(MODEL_PATH)"],
                "ports": [{"containerPort": 8080, "name": "http1"}],
            }
        },
    }
    if decoder_config is not None:
        spec["decoderConfig"] = decoder_config
    if router_config is not None:
        spec["routerConfig"] = router_config
    meta: Obj = {"name": name, "uid": f"uid-{name}"}
    kind = "ClusterServingRuntime"
    if namespace:
        meta["namespace"] = namespace
        kind = "ServingRuntime"
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def model(
    name: str = "llama-3-2-1b-instruct", *, path: str = "/raid/models/llama", state: str = "Ready"
) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {
            "modelFormat": {"name": "safetensors"},
            "storage": {"storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct", "path": path},
        },
        "status": {"state": state},
    }


def with_(obj: Obj, **changes: Any) -> Obj:
    copied = copy.deepcopy(obj)
    copied.update(changes)
    return copied
