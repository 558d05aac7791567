from __future__ import annotations

import copy

from ome.framework.transforms import keep_label_prefixes, slim_pod

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
        "name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "labels": {"app": "x"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "ome.io/keep": "1"},
        "ownerReferences": [{"uid": "o1", "controller": True}], "managedFields": [{"manager": "kubectl"}],
        "deletionTimestamp": "2026-01-01T00:00:00Z",
    },
    "spec": {
        "nodeName": "gpu-node-0", "readinessGates": [{"conditionType": "ome.io/serving"}],
        "containers": [{"name": "main", "image": "img", "ports": [{"containerPort": 8080}],
                        "env": [{"name": "BIG", "value": "x" * 1000}], "command": ["serve"]}],
        "volumes": [{"name": "v"}], "tolerations": [{"key": "k"}],
    },
    "status": {
        "phase": "Running", "podIP": "10.0.0.5",
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None, "reason": "R"}],
        "containerStatuses": [{"name": "main", "ready": True, "restartCount": 2, "imageID": "sha",
                               "state": {"terminated": {"exitCode": 1}}}],
    },
}


def test_slim_pod_keeps_what_controllers_read() -> None:
    slim = slim_pod(copy.deepcopy(POD))
    meta = slim["metadata"]
    assert meta["labels"] == {"app": "x"}
    assert meta["ownerReferences"] == [{"uid": "o1", "controller": True}]
    assert meta["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    assert meta["annotations"] == {"ome.io/keep": "1"}
    assert "managedFields" not in meta
    assert slim["spec"]["nodeName"] == "gpu-node-0"
    assert slim["spec"]["readinessGates"] == [{"conditionType": "ome.io/serving"}]
    assert slim["spec"]["containers"] == [{"name": "main", "image": "img", "ports": [{"containerPort": 8080}]}]
    assert "volumes" not in slim["spec"]
    assert slim["status"]["conditions"] == [{"type": "Ready", "status": "True", "reason": "R"}]
    cs = slim["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 2 and cs["state"] == {"terminated": {"exitCode": 1}} and "imageID" not in cs


def test_slim_pod_interns_repeated_strings() -> None:
    a, b = slim_pod(copy.deepcopy(POD)), slim_pod(copy.deepcopy(POD))
    assert a["status"]["phase"] is b["status"]["phase"]
    assert next(iter(a["metadata"]["labels"])) is next(iter(b["metadata"]["labels"]))


def test_keep_label_prefixes() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "n", "uid": "u", "resourceVersion": "1",
        "labels": {"models.ome.io/clusterbasemodel.m": "Ready", "kubernetes.io/hostname": "n"}}}
    out = keep_label_prefixes("models.ome.io/")(node)
    assert out["metadata"]["labels"] == {"models.ome.io/clusterbasemodel.m": "Ready"}
    assert out["metadata"]["name"] == "n"


def test_intern_values_shares_short_values_between_decoded_objects_and_changes_nothing() -> None:
    import json

    from ome.framework.informer import _compose
    from ome.framework.transforms import intern_values

    text = json.dumps({"apiVersion": "apps/v1", "metadata": {"managedFields": [{"manager": "m"}],
                                                             "labels": {"app": "x" + "y" * 3}},
                       "spec": {"strategy": {"type": "Rolling" + "Update"}, "ports": [{"protocol": "T" + "CP"}],
                                "args": ["--port", "80" + "80"], "big": "z" * 100}})
    first, second = json.loads(text), json.loads(text)
    assert first["spec"]["strategy"]["type"] is not second["spec"]["strategy"]["type"]  # the decoder's own
    expected = json.loads(text)
    assert intern_values(first) == expected
    intern_values(second)
    for path in (("apiVersion",), ("metadata", "labels", "app"), ("spec", "strategy", "type")):
        a, b = first, second
        for key in path:
            a, b = a[key], b[key]
        assert a is b, path
    assert first["spec"]["ports"][0]["protocol"] is second["spec"]["ports"][0]["protocol"]
    assert first["spec"]["args"][1] is second["spec"]["args"][1]
    assert first["spec"]["big"] is not second["spec"]["big"]  # long values are left alone
    # The default transform of an informer: managedFields dropped, values shared.
    third = _compose(None)(json.loads(text))
    assert "managedFields" not in third["metadata"]
    assert third["spec"]["strategy"]["type"] is first["spec"]["strategy"]["type"]
