"""Merge a runtime's engineConfig/decoderConfig/routerConfig with the InferenceService's component.

Kubernetes strategic-merge semantics with the runtime as the base and the InferenceService as the patch:
maps merge key by key, scalars from the InferenceService win, an InferenceService value of None (unset)
keeps the runtime's, and lists of named things merge element by element on their merge key (containers,
init containers, volumes, env, image pull secrets by `name`; ports by `containerPort`; volume mounts by
`mountPath`, as the core types declare them). Other lists (args, command, tolerations) are replaced.
`runner`, `leader` and `worker` are maps, so they merge recursively too.

`apply_runner` is different on purpose: the runner is merged into the pod's container of the same name
with its args appended, so a runner can add flags to the runtime's command line without repeating them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

Obj = dict[str, Any]

MAIN_CONTAINER: Final = "ome-container"

# list field -> merge key, as in the core/v1 strategic-merge patch tags.
MERGE_KEYS: Final[dict[str, str]] = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "resourceClaims": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}


def strategic_merge(base: Mapping[str, Any] | None, patch: Mapping[str, Any] | None) -> Obj:
    """A new dict: `patch` merged over `base`; neither input is modified."""
    result: Obj = copy.deepcopy(dict(base or {}))
    for key, value in (patch or {}).items():
        if value is None:
            continue
        current = result.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            result[key] = strategic_merge(current, value)
        elif isinstance(value, list) and isinstance(current, list) and key in MERGE_KEYS:
            result[key] = merge_list(current, value, MERGE_KEYS[key])
        else:
            result[key] = copy.deepcopy(value)
    return result


def merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    """Elements with the same merge key merge; new ones are appended in the patch's order."""
    result = [copy.deepcopy(item) for item in base]
    index = {item.get(key): i for i, item in enumerate(result) if isinstance(item, Mapping)}
    for item in patch:
        position = index.get(item.get(key)) if isinstance(item, Mapping) else None
        if position is None:
            result.append(copy.deepcopy(item))
            if isinstance(item, Mapping):
                index[item.get(key)] = len(result) - 1
        else:
            result[position] = strategic_merge(result[position], item)
    return result


def merge_component(runtime_config: Mapping[str, Any] | None, isvc_component: Mapping[str, Any]) -> Obj:
    """The effective component: the runtime's config for it, overridden by the InferenceService."""
    return strategic_merge(runtime_config, isvc_component)


def apply_runner(pod_spec: Mapping[str, Any], runner: Mapping[str, Any] | None) -> Obj:
    """The pod spec with `runner` merged into its container of the same name.

    With no runner, the pod spec is returned as is. A runner without a name targets `ome-container`;
    a missing container is added. The container's args come first and the runner's are appended.
    """
    spec = copy.deepcopy(dict(pod_spec))
    if not runner:
        return spec
    name = runner.get("name") or MAIN_CONTAINER
    containers: list[Obj] = spec.setdefault("containers", [])
    target = next((c for c in containers if c.get("name") == name), None)
    if target is None:
        target = {"name": name}
        containers.append(target)
    merged = strategic_merge(target, {k: v for k, v in runner.items() if k != "args"})
    merged["name"] = name
    args = [*(target.get("args") or []), *(runner.get("args") or [])]
    if args:
        merged["args"] = args
    containers[containers.index(target)] = merged
    return spec


def upsert_env(container: Obj, name: str, value: str, *, overwrite: bool) -> None:
    """Set env `name` on `container`; an existing entry is kept unless `overwrite`."""
    env: list[Obj] = container.setdefault("env", [])
    for entry in env:
        if entry.get("name") == name:
            if overwrite:
                entry.clear()
                entry.update({"name": name, "value": value})
            return
    env.append({"name": name, "value": value})
