"""Whether one body sets every field another set (body_fields.py): it may say no where server-side apply
would drop nothing (the move is then made for nothing), never yes where it would drop a field."""

from __future__ import annotations

import copy
from typing import Any

from ome.framework import body_fields

Obj = dict[str, Any]


def deployment() -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "labels": {"app": "d"},
                     "ownerReferences": [{"uid": "u1", "kind": "InferenceService", "name": "s"}]},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [{
                        "name": "main", "image": "engine:1", "args": ["--port", "8080"],
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "volumeMounts": [{"name": "model", "mountPath": "/mnt/models"}],
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }],
                    "volumes": [{"name": "model", "hostPath": {"path": "/raid"}}],
                    "tolerations": [{"key": "gpu", "operator": "Exists"}],
                },
            },
        },
    }


def covered(after: Obj, before: Obj | None = None) -> bool:
    return body_fields.covers(body_fields.tree(after), body_fields.tree(before or deployment()))


def container(obj: Obj) -> Obj:
    return obj["spec"]["template"]["spec"]["containers"][0]


def test_the_same_body_and_changed_values_are_covered() -> None:
    assert covered(deployment())
    changed = deployment()
    container(changed)["image"] = "engine:2"  # containers are keyed by name
    container(changed)["env"][0]["value"] = "9"  # env by name
    container(changed)["args"] = ["--port", "9090", "--verbose"]  # atomic: replaced whole
    container(changed)["resources"]["limits"]["nvidia.com/gpu"] = "2"
    changed["metadata"]["labels"]["app"] = "other"
    assert covered(changed)


def test_added_fields_are_covered() -> None:
    more = deployment()
    more["spec"]["template"]["metadata"]["annotations"] = {"bench.ome.io/churn": "1"}
    container(more)["env"].append({"name": "C", "value": "3"})
    more["spec"]["minReadySeconds"] = 5
    assert covered(more)


def test_a_dropped_field_is_not_covered() -> None:
    for drop in (
        lambda d: d["metadata"]["labels"].clear(),
        lambda d: container(d)["env"].pop(),
        lambda d: container(d).pop("args"),
        lambda d: container(d)["resources"]["limits"].clear(),
        lambda d: d["spec"]["template"]["spec"].pop("tolerations"),
    ):
        body = deployment()
        drop(body)
        assert not covered(body)


def test_list_items_without_a_known_key_are_told_apart_by_all_their_scalar_fields() -> None:
    # A container port is keyed (containerPort, protocol) by the apiserver: a new port number is a new
    # item, and the old one would stay with the POST's entry. Its name alone must not match them.
    moved = deployment()
    container(moved)["ports"] = [{"name": "http", "containerPort": 9090}]
    assert not covered(moved)
    renamed = deployment()
    container(renamed)["volumeMounts"][0]["mountPath"] = "/models"  # a mount is keyed by its path
    assert not covered(renamed)
    tolerated = deployment()  # tolerations: any changed scalar is another item (stricter than atomic)
    tolerated["spec"]["template"]["spec"]["tolerations"][0]["operator"] = "Equal"
    assert not covered(tolerated)


def test_a_set_of_scalars_is_compared_by_member() -> None:
    before = {"metadata": {"name": "x", "finalizers": ["a", "b"]}}
    assert body_fields.covers(body_fields.tree({"metadata": {"name": "x", "finalizers": ["b", "a", "c"]}}),
                              body_fields.tree(before))
    assert not body_fields.covers(body_fields.tree({"metadata": {"name": "x", "finalizers": ["a"]}}),
                                  body_fields.tree(before))


def test_owner_references_and_server_fields_are_left_out() -> None:
    other = deployment()
    other["metadata"]["ownerReferences"] = []
    other["metadata"]["resourceVersion"] = "12"
    assert covered(deployment(), other)  # the references are checked against the cached object instead
    assert "f:ownerReferences" not in body_fields.tree(deployment())["f:metadata"]
    with_status = {**deployment(), "status": {"replicas": 1}}
    assert covered(deployment(), with_status)


def test_none_sets_nothing() -> None:
    body = deployment()
    body["spec"]["paused"] = None
    assert covered(deployment(), body)


def test_trees_of_the_same_shape_are_one_object() -> None:
    interned = body_fields.Interned(limit=2)
    a = deployment()
    b = copy.deepcopy(a)
    b["metadata"]["name"] = "e"  # values differ, fields do not
    b["metadata"]["ownerReferences"][0]["uid"] = "u2"
    assert interned(body_fields.tree(a)) is interned(body_fields.tree(b))
    c = deployment()
    c["spec"]["paused"] = True
    d = deployment()
    d["spec"]["minReadySeconds"] = 1
    interned(body_fields.tree(c))
    assert len(interned) == 2
    assert interned(body_fields.tree(d)) is not interned(body_fields.tree(d))  # past the limit: as built
