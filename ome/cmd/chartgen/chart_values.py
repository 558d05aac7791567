"""The ome-resources chart's values: their defaults (values.yaml, read from config/) and, in Python, what
the chart's ConfigMaps hold for given values (the logic the templates carry in Go template text)."""

from __future__ import annotations

import json
from typing import Any, Final

from ome.cmd.chartgen.go_format import go_json, go_text
from ome.cmd.chartgen.manifests import (
    Obj,
    chart_controller,
    chart_coordination,
    chart_event_recorder,
    chart_lifecycle,
    chart_ome_agent,
    chart_pod_disruption_budget,
    load,
    manager_doc,
)
from ome.controllers.benchmarkjob import builder as benchmark
from ome.resolution import quota_governance

QUOTA_FLAG: Final = "--accelerator-resources"

# Lists the chart appends, as the user writes them, after the manager's own (sentinel -> values path):
# the container's env and volumeMounts, the pod's volumes. Empty (the default), they add nothing.
EXTRA_LISTS: Final = {
    "HELMBLOCK_EXTRAENV": "ome.controller.extraEnv",
    "HELMBLOCK_EXTRAVOLUMES": "ome.controller.extraVolumes",
    "HELMBLOCK_EXTRAVOLUMEMOUNTS": "ome.controller.extraVolumeMounts",
}


def _args(deployment: Obj) -> list[str]:
    return [str(a) for a in deployment["spec"]["template"]["spec"]["containers"][0]["args"]]


def _arg(args: list[str], flag: str) -> str:
    return next(a.split("=", 1)[1] for a in args if a.startswith(flag + "="))


# flag -> values path (under .Values), the names the docs give (controller-manager-flags.md)
ARG_VALUES: Final = {
    "--leader-elect-lease-duration": "ome.controller.leaderElection.leaseDuration",
    "--leader-elect-renew-deadline": "ome.controller.leaderElection.renewDeadline",
    "--leader-elect-retry-period": "ome.controller.leaderElection.retryPeriod",
    "--kube-api-qps": "ome.controller.kubeAPIQPS",
    "--kube-api-burst": "ome.controller.kubeAPIBurst",
    "--inferenceservice-max-concurrent-reconciles": "ome.controller.inferenceServiceMaxConcurrentReconciles",
    "--inferencereplica-max-concurrent-reconciles": "ome.controller.inferenceReplicaMaxConcurrentReconciles",
    "--config-cache-ttl": "ome.controller.configCacheTTL",
}
OPTIONAL_ARGS: Final = frozenset({
    "--kube-api-qps", "--kube-api-burst", "--inferenceservice-max-concurrent-reconciles",
    "--inferencereplica-max-concurrent-reconciles", "--config-cache-ttl"})
"""Rendered only when the value is set and not zero (Go's truth: an unquoted 0 is false, "0" is not), so
setting one to 0 gives the manager its own default: 1 worker, no rate limit, a 30 s config cache."""


def _set(tree: Obj, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        tree = tree.setdefault(key, {})
    tree[last] = value


# inferenceservice-config entries written from structured values rather than `ome.inferenceserviceConfig`.
STRUCTURED: Final = ("lifecycle", "omeAgent")


def _config_data() -> dict[str, str]:
    return dict(next(d for d in load("configmap", "inferenceservice-config.yaml"))["data"])


def default_values() -> Obj:
    deployment = manager_doc()
    args = _args(deployment)
    image, _, tag = deployment["spec"]["template"]["spec"]["containers"][0]["image"].rpartition(":")
    values: Obj = {"ome": {"controller": {"image": image, "tag": tag,
                                          "replicaCount": deployment["spec"]["replicas"]}}}
    for flag, path in ARG_VALUES.items():
        raw = _arg(args, flag)
        _set(values, path, int(raw) if raw.isdigit() else raw)
    data = _config_data()
    controller = values["ome"]["controller"]
    controller["quotaAcceleratorResources"] = list(quota_governance.parse_resources(_arg(args, QUOTA_FLAG)))
    values["ome"]["inferenceserviceConfig"] = {k: v for k, v in data.items() if k not in STRUCTURED}
    controller["lifecycle"] = {**json.loads(data.get("lifecycle") or "{}"), **chart_lifecycle()}
    controller["rollout"] = dict(chart_controller()["rollout"])
    controller["coordination"] = chart_coordination()
    controller["eventRecorder"] = chart_event_recorder()
    controller["podDisruptionBudget"] = chart_pod_disruption_budget()
    for path in EXTRA_LISTS.values():
        _set(values, path, [])
    agent = json.loads(data["omeAgent"])
    agent_image, _, agent_tag = agent["image"].rpartition(":")
    values["ome"]["omeAgent"] = {"image": agent_image, "tag": agent_tag, **chart_ome_agent(),
                                 "metadataJob": dict(agent.get("metadataJob") or {})}
    bench = benchmark.PodConfig()
    image, _, tag = bench.image.rpartition(":")
    values["ome"]["benchmarkJob"] = {"image": image, "tag": tag, "cpuRequest": bench.cpu_request,
                                     "memoryRequest": bench.memory_request, "cpuLimit": bench.cpu_limit,
                                     "memoryLimit": bench.memory_limit}
    values["webhook"] = {"certManager": {"enabled": False}}
    values["modelAgent"] = {"enabled": False}
    return values


# The model-init resources from ome.omeAgent.modelInit; the serving sidecar's are fixed, as in v1.3's chart.
MODEL_INIT_KEYS: Final = ("memoryRequest", "memoryLimit", "cpuRequest", "cpuLimit")
SERVING_SIDECAR_RESOURCES: Final = {"memoryRequest": "2Gi", "memoryLimit": "4Gi", "cpuRequest": "1",
                                    "cpuLimit": "2"}


def chart_entries(values: Obj) -> dict[str, str]:
    """inferenceservice-config's data as the chart renders it from `values` (the template's logic)."""
    ome = values["ome"]
    controller = ome["controller"]
    entries = {k: str(v) for k, v in (ome.get("inferenceserviceConfig") or {}).items()}
    for key in ("lifecycle", "rollout", "coordination", "eventRecorder", "podDisruptionBudget"):
        if controller.get(key):
            entries[key] = go_json(controller[key])
    agent = ome.get("omeAgent")
    if agent:
        image = f"{agent['image']}:{go_text(agent.get('tag'))}"
        entries["omeAgent"] = go_json({**(agent.get("metadataJob") or {}), "image": image})
        oci = {key: go_text(agent.get(key)) for key in ("authType", "compartmentId", "region")}
        init = {"image": image, "vaultId": go_text(agent.get("vaultId")), **oci}
        resources = agent.get("modelInit") or {}
        init |= {key: go_text(resources[key]) for key in MODEL_INIT_KEYS if resources.get(key)}
        entries["modelInit"] = go_json(init)
        entries["servingSidecar"] = go_json({"image": image, **SERVING_SIDECAR_RESOURCES, **oci})
    return entries


def bench_json(values: Obj) -> str:
    """benchmarkjob-config's data as the chart renders it from `values`."""
    bench = values["ome"]["benchmarkJob"]
    return json.dumps({"podConfig": {"image": f"{bench['image']}:{bench['tag']}",
                                     "cpuRequest": bench["cpuRequest"],
                                     "memoryRequest": bench["memoryRequest"], "cpuLimit": bench["cpuLimit"],
                                     "memoryLimit": bench["memoryLimit"]}})
