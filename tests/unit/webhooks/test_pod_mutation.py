"""The pod webhook (labels-and-annotations.md "Pods", row B27): profiles and scraping annotations through
the AdmissionReview handler, the patch applied to the pod as the apiserver would."""

from __future__ import annotations

import base64
from typing import Any

import jsonpatch
import orjson
import pytest

from ome.webhooks import registry
from tests.unit.resolution.fake_reader import FakeReader
from tests.unit.webhooks.reviews import call, review

Obj = dict[str, Any]
PATH = "/mutate-pods"


def pod(annotations: dict[str, str], *containers: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "demo",
            "labels": {"ome.io/inferenceservice": "svc"},
            "annotations": annotations,
        },
        "spec": {"containers": list(containers or [{"name": "ome-container", "image": "x"}])},
    }


def answer(obj: Obj) -> Obj:
    return call(registry.handlers(FakeReader())[PATH], review("Pod", obj))


def mutated(obj: Obj) -> Obj:
    got = answer(obj)
    assert got["allowed"] is True, got
    patch = orjson.loads(base64.b64decode(got["patch"])) if got.get("patch") else []
    result: Obj = jsonpatch.JsonPatch(patch).apply(obj)
    return result


def main(p: Obj) -> Obj:
    return next(c for c in p["spec"]["containers"] if c["name"] == "ome-container")


def test_scraping_annotations_default_from_the_chart() -> None:
    got = mutated(pod({}))["metadata"]["annotations"]
    assert got["ome.io/enable-metric-aggregation"] == "false"
    assert got["ome.io/enable-prometheus-scraping"] == "false"
    assert "prometheus.io/port" not in got


@pytest.mark.parametrize(("aggregation", "port"), [("false", "9091"), ("true", "9088")])
def test_scraping_sets_port_and_path_overwriting(aggregation: str, port: str) -> None:
    annotations = {
        "ome.io/enable-prometheus-scraping": "true",
        "ome.io/enable-metric-aggregation": aggregation,
        "prometheus.io/port": "1234",
    }
    got = mutated(pod(annotations))["metadata"]["annotations"]
    assert got["prometheus.io/port"] == port and got["prometheus.io/path"] == "/metrics"
    assert "prometheus.io/scrape" not in got  # documented: scraping doesn't set it


def test_shm_profile_mounts_an_unbounded_memory_emptydir() -> None:
    p = mutated(pod({"runtime.ome.io/shm-profile": "default"}))
    assert p["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert main(p)["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_probe_profile_adds_only_missing_probes_on_the_port() -> None:
    container = {"name": "ome-container", "readinessProbe": {"httpGet": {"path": "/custom", "port": 9999}}}
    p = mutated(
        pod({"runtime.ome.io/probe-profile": "sglang-http", "runtime.ome.io/probe-port": "8080"}, container)
    )
    c = main(p)
    assert c["readinessProbe"]["httpGet"]["path"] == "/custom"
    assert c["livenessProbe"] == c["startupProbe"] == {"httpGet": {"path": "/health", "port": 8080}}
    default = main(mutated(pod({"runtime.ome.io/probe-profile": "vllm-http"})))
    assert default["readinessProbe"]["httpGet"]["port"] == 30000


def test_observability_profile_fills_unset_prometheus_annotations() -> None:
    got = mutated(pod({"runtime.ome.io/observability-profile": "prometheus", "prometheus.io/path": "/m"}))
    annotations = got["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "30000"
    assert annotations["prometheus.io/path"] == "/m"


def test_oci_roce_rdma_profile() -> None:
    container = {"name": "ome-container", "env": [{"name": "NCCL_DEBUG", "value": "WARN"}]}
    c = main(mutated(pod({"rdma.ome.io/auto-inject": "true"}, container)))
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["NCCL_DEBUG"] == "WARN" and env["NCCL_IB_GID_INDEX"] == "3"  # existing values win
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/dev/shm", "/dev/infiniband"}
    assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}  # never privileged (v1.3)


def test_cks_gb_rdma_merges_sixteen_attachments() -> None:
    existing = '[{"name":"ibs0p0-macvlan","namespace":"cw-multus"},{"name":"other"}]'
    got = mutated(
        pod(
            {
                "rdma.ome.io/auto-inject": "true",
                "rdma.ome.io/profile": "cks-gb-rdma",
                "k8s.v1.cni.cncf.io/networks": existing,
            }
        )
    )
    networks = orjson.loads(got["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"])
    assert len(networks) == 17 and networks[1] == {"name": "other"}
    assert {"name": "ibs3p3-macvlan", "namespace": "cw-multus"} in networks
    assert "env" not in main(got) and "securityContext" not in main(got)


def test_rdma_skips_a_missing_container() -> None:
    p = mutated(pod({"rdma.ome.io/auto-inject": "true", "rdma.ome.io/container-name": "nope"}))
    assert "volumes" not in p["spec"]


@pytest.mark.parametrize(
    ("annotations", "needle"),
    [
        ({"rdma.ome.io/auto-inject": "true", "rdma.ome.io/profile": "bogus"}, "unknown RDMA profile: bogus"),
        (
            {
                "rdma.ome.io/auto-inject": "true",
                "rdma.ome.io/profile": "cks-gb-rdma",
                "k8s.v1.cni.cncf.io/networks": "x",
            },
            "not a valid JSON array",
        ),
        ({"runtime.ome.io/shm-profile": "big"}, "runtime.ome.io/shm-profile"),
        ({"runtime.ome.io/probe-profile": "grpc"}, "runtime.ome.io/probe-profile"),
        ({"runtime.ome.io/probe-profile": "sglang-http", "runtime.ome.io/probe-port": "70000"}, "probe-port"),
        ({"runtime.ome.io/observability-profile": "otel"}, "observability-profile"),
        (
            {"runtime.ome.io/observability-profile": "prometheus", "runtime.ome.io/observability-port": "0"},
            "port",
        ),
    ],
)
def test_bad_annotations_deny_the_pod(annotations: dict[str, str], needle: str) -> None:
    got = answer(pod(annotations))
    assert got["allowed"] is False and got["status"]["code"] == 403 and needle in got["status"]["message"]


def test_registered_for_serving_pods_outside_control_planes() -> None:
    mutating_config, _ = registry.webhook_configurations(registry.service_client_config())
    hook = next(
        h
        for h in mutating_config["webhooks"]
        if h["name"] == "inferenceservice.ome-webhook-server.pod-mutator"
    )
    assert hook["rules"][0] == {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["pods"],
    }
    assert hook["objectSelector"] == {
        "matchExpressions": [{"key": "ome.io/inferenceservice", "operator": "Exists"}]
    }
    assert hook["namespaceSelector"] == {
        "matchExpressions": [{"key": "control-plane", "operator": "DoesNotExist"}]
    }
