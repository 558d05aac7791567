"""spec.replicaRefs rendering: roles, the problems of a named replica, the Services in front of it."""

from __future__ import annotations

from typing import Any

import pytest

from ome.resolution import replica_refs as refs

Obj = dict[str, Any]


def service(**replica_refs: list[str]) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "fronted", "namespace": "demo", "uid": "uid-fronted"},
        "spec": {"replicaRefs": replica_refs},
    }


def template(port: int | None = 8000) -> Obj:
    container: Obj = {"name": "ome-container", "image": "vllm:1"}
    if port is not None:
        container["ports"] = [{"name": "http", "containerPort": port}]
    return {"metadata": {"labels": {"team": "a"}}, "spec": {"containers": [container]}}


def replica(
    name: str = "pool", component: str = "engine", *, runners: list[Obj] | None = None, **spec: Any
) -> Obj:
    body: Obj = {"component": component, **spec}
    body["runners"] = [{"name": "default", "size": 1, "template": template()}] if runners is None else runners
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": body,
    }


def test_roles_engine_first_and_only_named_ones() -> None:
    isvc = service(router=["r"], engine=["e"], decoder=[])
    assert refs.roles(isvc) == [("engine", "e"), ("router", "r")]
    assert refs.is_referencing(isvc)
    plain = {"metadata": {"name": "x"}, "spec": {"engine": {}}}
    assert not refs.is_referencing(plain) and refs.roles(plain) == []


def test_a_standalone_replica_of_the_role_has_no_problem() -> None:
    assert refs.problem(service(engine=["pool"]), "engine", "pool", replica()) is None


@pytest.mark.parametrize(
    ("found", "reason", "message"),
    [
        (
            None,
            "ReplicaRefMissing",
            "spec.replicaRefs.engine references InferenceReplica demo/pool, which does not exist",
        ),
        (
            replica(parentRef={"name": "owner"}),
            "ReplicaRefInvalid",
            "spec.replicaRefs.engine references InferenceReplica demo/pool, which InferenceService owner "
            "projects; only a standalone replica can be referenced",
        ),
        (
            replica(component="decoder"),
            "ReplicaRefInvalid",
            "spec.replicaRefs.engine references InferenceReplica demo/pool, whose spec.component is decoder, "
            "not engine",
        ),
    ],
    ids=["missing", "projected", "other-component"],
)
def test_problems(found: Obj | None, reason: str, message: str) -> None:
    got = refs.problem(service(engine=["pool"]), "engine", "pool", found)
    assert got == refs.Problem(reason, message)


def test_a_controller_owner_makes_a_replica_projected() -> None:
    owned = replica()
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "chat", "controller": True}
    ]
    got = refs.problem(service(engine=["pool"]), "engine", "pool", owned)
    assert got is not None and got.reason == "ReplicaRefInvalid" and "InferenceService chat" in got.message


def test_stable_service_selects_the_replicas_pods_with_the_runner_port() -> None:
    template_ = refs.serving_template(replica(), None)
    assert template_ is not None and not template_.leader_only
    svc = refs.stable_service(service(engine=["pool"]), "engine", "pool", template_)
    assert svc["metadata"]["name"] == "fronted-engine"
    assert svc["metadata"]["labels"] == {"ome.io/inferenceservice": "fronted", "component": "engine"}
    assert svc["metadata"]["ownerReferences"][0]["uid"] == "uid-fronted"
    assert svc["spec"]["selector"] == {
        "ome.io/inferenceservice": "pool",
        "component": "engine",
        "ome.io/managed-by": "OMENative",
    }
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": 8000, "protocol": "TCP"}]
    assert refs.service_port(svc) == 8000


def test_multi_pod_instances_are_fronted_by_their_leaders() -> None:
    runners = [
        {"name": "leader", "size": 1, "template": template(9000)},
        {"name": "worker", "size": 2, "template": template(9100)},
    ]
    template_ = refs.serving_template(replica(runners=runners), None)
    assert template_ is not None and template_.leader_only
    svc = refs.stable_service(service(engine=["pool"]), "engine", "pool", template_)
    assert svc["spec"]["selector"]["ome.io/runner"] == "leader"
    assert svc["spec"]["ports"][0]["port"] == 9000


def test_a_replica_without_runners_takes_the_ports_of_its_revision() -> None:
    by_ref = replica(runners=[], modelRef={"name": "m"})
    by_ref["status"] = {"currentRevision": "pool-engine-abc"}
    revision = {"data": {"runners": [{"name": "default", "size": 1, "template": template(30000)}]}}
    got = refs.serving_template(by_ref, revision)
    assert (
        got is not None and refs.service_port(refs.stable_service(service(), "engine", "pool", got)) == 30000
    )
    assert refs.serving_template(by_ref, None) is None  # named but not readable yet: keep the Service
    del by_ref["status"]
    fresh = refs.serving_template(by_ref, None)  # nothing named yet: the default port
    assert fresh is not None
    assert refs.service_port(refs.stable_service(service(), "engine", "pool", fresh)) == 8080


def test_external_service_fronts_the_router_else_the_engine() -> None:
    assert refs.external_target([("engine", "e"), ("router", "r")]) == ("router", "r")
    assert refs.external_target([("engine", "e"), ("decoder", "d")]) == ("engine", "e")
    assert refs.external_target([]) is None
    svc = refs.external_service(service(engine=["e"]), "engine", "e", 8000)
    assert svc["metadata"]["name"] == "fronted"
    assert svc["metadata"]["labels"]["component"] == "external-service"
    assert svc["spec"]["selector"] == {"ome.io/inferenceservice": "e", "component": "engine"}
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": 8000, "protocol": "TCP"}]
