"""config/default as kustomize builds it, with the chart's additions: what the ome-resources chart must
render with its default values."""

from __future__ import annotations

import copy
import json

from ome.cmd.chartgen.chart_files import KEEP
from ome.cmd.chartgen.chart_values import SERVING_SIDECAR_RESOURCES, bench_json, default_values
from ome.cmd.chartgen.go_format import go_json
from ome.cmd.chartgen.manifests import (
    CONFIG,
    NAMESPACE,
    Obj,
    chart_controller,
    chart_coordination,
    chart_event_recorder,
    chart_lifecycle,
    chart_ome_agent,
    chart_pod_disruption_budget,
    load,
)
from ome.controllers.benchmarkjob import builder as benchmark


def config_default_objects() -> list[Obj]:
    """config/default as kustomize builds it (namespace ome, the selfsigned component), less the Namespace,
    plus the benchmarkjob-config ConfigMap the chart adds: what the chart renders with its defaults."""
    docs: list[Obj] = []
    for parts in (("rbac", "service_account.yaml"), ("rbac", "role.yaml"), ("rbac", "role_binding.yaml"),
                  ("configmap", "inferenceservice-config.yaml"), ("manager", "manager.yaml"),
                  ("webhook", "service.yaml"), ("webhook", "manifests.yaml")):
        docs += copy.deepcopy(load(*parts))
    config = next(d for d in docs if d["metadata"]["name"] == "inferenceservice-config")
    data = config["data"]
    # config/chart/: the chart's lifecycle keys, rollout, coordination, eventRecorder and podDisruptionBudget
    # entries; omeAgent in v1.3's form.
    data["lifecycle"] = go_json({**json.loads(data["lifecycle"]), **chart_lifecycle()})
    data["rollout"] = go_json(chart_controller()["rollout"])
    data["coordination"] = go_json(chart_coordination())
    data["eventRecorder"] = go_json(chart_event_recorder())
    data["podDisruptionBudget"] = go_json(chart_pod_disruption_budget())
    agent = json.loads(data["omeAgent"])
    data["omeAgent"] = go_json({**agent.pop("metadataJob", {}), **agent})
    oci = chart_ome_agent()
    shared = {"image": agent["image"], "authType": oci["authType"], "compartmentId": oci["compartmentId"],
              "region": oci["region"]}
    data["modelInit"] = go_json({**shared, "vaultId": oci["vaultId"],
                                 **{k: str(v) for k, v in oci["modelInit"].items()}})
    data["servingSidecar"] = go_json({**shared, **SERVING_SIDECAR_RESOURCES})
    for crd in sorted((CONFIG / "crd").glob("ome.io_*.yaml")):
        for doc in load("crd", crd.name):
            doc["metadata"]["annotations"][KEEP[0]] = KEEP[1]
            docs.append(doc)
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"].append("--webhook-cert-bootstrap")
    for mount in container["volumeMounts"]:
        if mount["name"] == "cert":
            mount["readOnly"] = False
    deployment["spec"]["template"]["spec"]["volumes"] = [
        {"name": "cert", "emptyDir": {}} if v["name"] == "cert" else v
        for v in deployment["spec"]["template"]["spec"]["volumes"]]
    docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": benchmark.CONFIGMAP, "namespace": NAMESPACE},
                 "data": {benchmark.CONFIGMAP_KEY: bench_json(default_values())}})
    return docs
