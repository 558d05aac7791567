"""A dict-backed reader with the cache's sync get_or_none/list, and builders for models and runtimes."""

from __future__ import annotations

from typing import Any

from ome.framework.resources import Resource

Obj = dict[str, Any]


class FakeReader:
    def __init__(self, *objs: tuple[Resource, Obj]) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        for res, obj in objs:
            self.put(res, obj)

    def put(self, res: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        self.objects[(res.name, meta.get("namespace") or "", meta["name"])] = obj
        return obj

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get((res.name, (namespace or "") if res.namespaced else "", name))

    def list(self, res: Resource, namespace: str | None = None) -> list[Obj]:
        return [
            o
            for (kind, ns, _), o in self.objects.items()
            if kind == res.name and (not namespace or ns == namespace)
        ]


def model(
    name: str,
    *,
    namespace: str | None = None,
    fmt: str = "safetensors",
    fmt_version: str | None = "1.0.0",
    framework: str | None = "transformers",
    fw_version: str | None = "4.45.0",
    arch: str | None = "LlamaForCausalLM",
    size: str | None = None,
    state: str = "Ready",
    **extra: Any,
) -> Obj:
    spec: Obj = {"modelFormat": {"name": fmt, **({"version": fmt_version} if fmt_version else {})}}
    if framework:
        spec["modelFramework"] = {"name": framework, **({"version": fw_version} if fw_version else {})}
    if arch:
        spec["modelArchitecture"] = arch
    if size:
        spec["modelParameterSize"] = size
    spec.update(extra)
    meta: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "BaseModel" if namespace else "ClusterBaseModel",
        "metadata": meta,
        "spec": spec,
        "status": {"state": state},
    }


def entry(
    *,
    fmt: str = "safetensors",
    fmt_version: str | None = "1.0.0",
    framework: str | None = "transformers",
    fw_version: str | None = "4.45.0",
    arch: str | None = "LlamaForCausalLM",
    auto: bool | None = True,
    priority: int | None = 1,
    **extra: Any,
) -> Obj:
    e: Obj = {"modelFormat": {"name": fmt, **({"version": fmt_version} if fmt_version else {})}}
    if framework:
        e["modelFramework"] = {"name": framework, **({"version": fw_version} if fw_version else {})}
    if arch:
        e["modelArchitecture"] = arch
    if auto is not None:
        e["autoSelect"] = auto
    if priority is not None:
        e["priority"] = priority
    e.update(extra)
    return e


def runtime(
    name: str, *entries: Obj, namespace: str | None = None, created: str = "2026-01-01T00:00:00Z", **spec: Any
) -> Obj:
    meta: Obj = {
        "name": name,
        "creationTimestamp": created,
        **({"namespace": namespace} if namespace else {}),
    }
    body: Obj = {"supportedModelFormats": list(entries or [entry()]), **spec}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime" if namespace else "ClusterServingRuntime",
        "metadata": meta,
        "spec": body,
    }


def isvc(name: str = "svc", namespace: str = "demo", **spec: Any) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
