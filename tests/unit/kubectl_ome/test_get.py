"""`kubectl ome get` against the docs' examples (golden files): columns per kind, merged views, errors."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.framework import errors
from ome.kubectl_ome import cmd_get
from ome.kubectl_ome.failures import CliError
from tests.unit.kubectl_ome.fakes import FakeClient, make_ctx

GOLDEN = Path(__file__).parent / "golden"
Obj = dict[str, Any]


def run(client: FakeClient, resource: str, name: str | None = None, output: str = "table",
        namespace: str = "team-a", **kw: Any) -> tuple[str, str]:
    ctx, err, _ = make_ctx(client, namespace=namespace)
    args = argparse.Namespace(resource=resource, object_name=name, all_namespaces=kw.get("all_namespaces", False),
                              selector=None, output=output)
    return str(asyncio.run(cmd_get.get(ctx, args))), err.getvalue()


def cond(type_: str, status: str, reason: str = "R", generation: int = 1) -> Obj:
    return {"type": type_, "status": status, "reason": reason, "observedGeneration": generation}


def test_isvc_models_and_replicas_match_the_docs() -> None:
    client = FakeClient()
    for name in ("a-isvc", "b-isvc"):
        client.put(resources.INFERENCE_SERVICES, {"metadata": {"name": name, "namespace": "team-a"}, "spec": {
            "model": {"name": "llama-3-3-70b"}, "runtime": {"name": "srt-llama"}}})
    assert run(client, "isvc")[0] == (GOLDEN / "get_isvc.txt").read_text()
    client.put(resources.BASE_MODELS, {"metadata": {"name": "ns-model", "namespace": "team-a"},
                                       "spec": {"modelArchitecture": "LlamaForCausalLM"}})
    client.put(resources.CLUSTER_BASE_MODELS, {"metadata": {"name": "cluster-model"},
                                               "spec": {"modelArchitecture": "LlamaForCausalLM"}})
    assert run(client, "models")[0] == (GOLDEN / "get_models.txt").read_text()
    for name, parent, desired, current in (("chat-engine", "chat", 4, 3), ("pool-a", None, 2, 2)):
        spec: Obj = {"component": "engine", "replicas": desired}
        if parent:
            spec["parentRef"] = {"name": parent}
        client.put(resources.INFERENCE_REPLICAS, {
            "metadata": {"name": name, "namespace": "demo"}, "spec": spec,
            "status": {"replicas": current, "readyReplicas": 2, "conditions": [cond("Ready", "True")]}})
    assert run(client, "ir", namespace="demo")[0] == (GOLDEN / "get_ir.txt").read_text()


def test_quota_budgets_and_traffic_map_wide_match_the_docs() -> None:
    client = FakeClient()
    budget = {"resourceName": "nvidia.com/gpu", "resourceFlavor": "h100", "nominal": "8"}
    client.put(resources.ACCELERATOR_QUOTAS, {
        "metadata": {"name": "team-a"},
        "spec": {"role": "ClusterQueue", "parentRef": {"name": "root"}, "budgets": [budget]},
        "status": {"observedGeneration": 1, "budgets": [{**budget, "admitted": "3"}],
                   "conditions": [cond("Ready", "True"), cond("Degraded", "False")]}})
    assert run(client, "aq")[0] == (GOLDEN / "get_aq.txt").read_text()
    # A status behind the spec adds the declared budgets.
    client.objects[("acceleratorquotas", None, "team-a")]["metadata"]["generation"] = 2
    rows = run(client, "aq")[0].splitlines()[1:]
    assert [r.split()[7] for r in rows] == ["Reported", "Declared"]
    client.put(resources.TRAFFIC_MAPS, {
        "metadata": {"name": "checkout", "namespace": "team-a"},
        "spec": {"service": "checkout", "mode": "Split", "entries": [
            {"cluster": "a", "weight": 3, "healthy": True}, {"cluster": "b", "weight": 0}]},
        "status": {"observedTrafficMapGeneration": 1,
                   "gatewayRef": {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "team-a",
                                  "name": "checkout"},
                   "conditions": [cond("Routable", "True", "Routable"), cond("Published", "True", "Published"),
                                  cond("OverrideActive", "False", "NoOverrides")]}})
    assert run(client, "tm", output="wide")[0] == (GOLDEN / "get_tm_wide.txt").read_text()


def test_empty_results_and_errors() -> None:
    client = FakeClient()
    assert run(client, "workloadclusters") == ("", "No workloadclusters found.\n")
    assert run(client, "isvc") == ("", "No resources found in team-a namespace.\n")
    assert run(client, "isvc", output="yaml")[0] == (GOLDEN / "get_empty.yaml").read_text()
    with pytest.raises(CliError, match="^get inferenceservices team-a/missing: NotFound$"):
        run(client, "isvc", "missing")
    client.fail_list[resources.CLUSTER_BASE_MODELS.plural] = errors.Forbidden(403, "Forbidden", "no")
    with pytest.raises(CliError, match="^list clusterbasemodels: Forbidden$"):
        run(client, "cbm")
    client.fail_list[resources.AUTOSCALER_POLICIES.plural] = errors.NotFound(404, "NotFound", "no")
    with pytest.raises(CliError, match=r"^list autoscalerpolicies team-a: OMEAPIMissing \(install OME first\)$"):
        run(client, "ap")


def test_policies_hide_stale_values_and_wc_columns() -> None:
    client = FakeClient()
    client.put(resources.ROLLOUT_POLICIES, {
        "metadata": {"name": "safe", "namespace": "team-a", "generation": 2}, "spec": {"canary": {}},
        "status": {"observedGeneration": 1, "portableDigest": "d", "attachedGroups": 2,
                   "conditions": [cond("Ready", "True")]}})
    row = run(client, "rp")[0].splitlines()[1].split()
    assert row[:5] == ["safe", "canary", "Unknown", "-", "-"]
    client.put(resources.WORKLOAD_CLUSTERS, {
        "metadata": {"name": "w", "generation": 3},
        "spec": {"clusterSource": {"kubeConfig": {"secretRef": {"name": "kc", "namespace": "ome"}}}},
        "status": {"conditions": [cond("Ready", "True", "Reachable", 2)]}})
    out = run(client, "wc", output="wide")[0].splitlines()
    assert out[1].split() == ["w", "KubeConfig", "ome/kc", "kubeconfig", "True", "3", "2", "-", "Reachable"]
