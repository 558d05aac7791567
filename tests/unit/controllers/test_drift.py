"""Drift of the fields a controller sets, against live objects as the apiserver returns them."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from ome.controllers import drift

Obj = dict[str, Any]


def desired() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "llama-engine",
            "namespace": "demo",
            "labels": {"app": "llama-engine"},
            "annotations": {"ome.io/desired-hash": "abc"},
            "ownerReferences": [{"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "llama",
                                 "uid": "u1", "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "selector": {"matchLabels": {"app": "llama-engine"}},
            "template": {
                "metadata": {"labels": {"app": "llama-engine"}},
                "spec": {
                    "hostNetwork": False,
                    "containers": [
                        {
                            "name": "ome-container",
                            "image": "vllm:1",
                            "args": ["--model", "/mnt/models"],
                            "env": [{"name": "MODEL_PATH", "value": "/mnt/models"}, {"name": "EMPTY", "value": ""}],
                            "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "0.5", "memory": "1024Mi"}},
                            "ports": [{"containerPort": 8080, "name": "http1"}],
                        }
                    ],
                    "tolerations": [{"operator": "Exists"}],
                    "volumes": [],
                },
            },
        },
    }


def live() -> Obj:
    """`desired()` as the apiserver and kube-controller-manager hand it back."""
    obj = copy.deepcopy(desired())
    meta = obj["metadata"]
    meta.update(uid="d1", resourceVersion="42", generation=1, creationTimestamp="2026-01-01T00:00:00Z")
    meta["annotations"]["deployment.kubernetes.io/revision"] = "1"
    spec = obj["spec"]
    spec.update(replicas=1, revisionHistoryLimit=10, progressDeadlineSeconds=600)
    pod = spec["template"]["spec"]
    del pod["hostNetwork"], pod["volumes"]  # omitempty
    pod.update(restartPolicy="Always", dnsPolicy="ClusterFirst", schedulerName="default-scheduler")
    container = pod["containers"][0]
    container["env"][1] = {"name": "EMPTY"}
    container["resources"]["limits"] = {"nvidia.com/gpu": "1", "cpu": "500m", "memory": "1Gi"}
    container["ports"][0]["protocol"] = "TCP"
    container.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
    obj["status"] = {"replicas": 1, "readyReplicas": 1, "observedGeneration": 1}
    return obj


def test_a_live_object_with_defaults_normalised_values_and_status_has_not_drifted() -> None:
    assert drift.drift(desired(), live()) == []


def test_kube_controller_manager_status_and_extra_fields_are_not_drift() -> None:
    obj = live()
    obj["status"] = {"replicas": 3, "conditions": [{"type": "Available", "status": "False"}]}
    obj["metadata"]["labels"]["team"] = "llm"  # added by someone else: theirs
    obj["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "mesh:1"})
    assert drift.drift(desired(), obj) == []


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda o: o["spec"]["template"]["spec"]["containers"][0].update(image="evil:1"),
         "spec.template.spec.containers[name=ome-container].image"),
        (lambda o: o["metadata"]["labels"].pop("app"), "metadata.labels.app"),
        (lambda o: o["spec"]["template"]["spec"]["containers"][0]["args"].append("--debug"),
         "spec.template.spec.containers[name=ome-container].args"),
        (lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].update(cpu="2"),
         "spec.template.spec.containers[name=ome-container].resources.limits.cpu"),
        (lambda o: o["spec"]["template"]["spec"]["containers"][0]["env"].pop(0),
         "spec.template.spec.containers[name=ome-container].env[name=MODEL_PATH]"),
        (lambda o: o["spec"]["template"]["spec"].update(hostNetwork=True), "spec.template.spec.hostNetwork"),
        (lambda o: o["spec"]["template"]["spec"]["tolerations"].append({"operator": "Equal"}),
         "spec.template.spec.tolerations"),
        (lambda o: o["metadata"]["annotations"].update({"ome.io/desired-hash": "old"}),
         "metadata.annotations.ome.io/desired-hash"),
    ],
)
def test_an_out_of_band_edit_of_a_field_we_set_is_drift(edit: Any, path: str) -> None:
    obj = live()
    edit(obj)
    assert [drift.render(p) for p in drift.drift(desired(), obj)] == [path]


def test_a_missing_object_has_drifted_and_ignored_paths_are_left_out() -> None:
    assert drift.drift(desired(), None) == [()]
    obj = live()
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = "mutated@sha256:1"
    paths = drift.drift(desired(), obj)
    assert drift.drifted(desired(), obj) and not drift.drifted(desired(), obj, ignore=paths)


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", Decimal("0.5")), ("1Gi", Decimal(1024**3)), ("1e3", Decimal(1000)), (2, Decimal(2)),
     ("1.5", Decimal("1.5")), ("vllm:1", None), (True, None)],
)
def test_quantities(text: Any, value: Decimal | None) -> None:
    assert drift.quantity(text) == value


def test_quantities_compare_by_value_only_where_quantities_live() -> None:
    want = {"spec": {"tag": "1", "resources": {"requests": {"memory": "1024Mi"}}}}
    assert drift.drift(want, {"spec": {"tag": "1.0", "resources": {"requests": {"memory": "1Gi"}}}}) == [
        ("spec", "tag")
    ]
