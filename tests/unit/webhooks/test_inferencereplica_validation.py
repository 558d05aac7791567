"""InferenceReplica admission: projected replicas are written only with `ome.io/controller-write: "true"`,
whoever the requester is; metadata-only updates (finalizers) pass; standalone replicas are RBAC's."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import modes, workloads
from ome.resolution.components import ModelSource, build_plans
from ome.webhooks import registry
from tests.unit.resolution import builders
from tests.unit.resolution.fake_reader import FakeReader
from tests.unit.webhooks.reviews import call, review

Obj = dict[str, Any]
IR_PATH = "/validate-ome-io-v1beta1-inferencereplica"
MARK = {"ome.io/controller-write": "true"}
SERVICE_ACCOUNT = "system:serviceaccount:ome:ome-controller-manager"


def ireplica(parent: str | None = None, replicas: int = 1, *, owned: bool | None = None,
             annotations: dict[str, str] | None = None) -> Obj:
    """A replica; `parent` sets parentRef and (unless owned=False) the InferenceService controller owner."""
    spec: Obj = {"component": "engine", "replicas": replicas}
    meta: Obj = {"name": "svc-engine", "namespace": "demo"}
    if parent:
        spec["parentRef"] = {"name": parent}
    if (parent and owned is not False) or owned:
        meta["ownerReferences"] = [{"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
                                    "name": parent or "svc", "uid": "u", "controller": True}]
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "metadata": meta, "spec": spec}


def run(obj: Obj, *, old: Obj | None = None, username: str = "alice") -> Obj:
    operation = "UPDATE" if old is not None else "CREATE"
    body = review("InferenceReplica", obj, old=old, operation=operation, username=username)
    return call(registry.handlers(FakeReader())[IR_PATH], body)


def message(answer: Obj) -> str:
    assert answer["allowed"] is False
    return str(answer["status"]["message"])


@pytest.mark.parametrize("username", ["alice", SERVICE_ACCOUNT, "kubernetes-admin"])
def test_projected_create_without_the_annotation_is_denied_whoever_asks(username: str) -> None:
    got = message(run(ireplica("svc"), username=username))
    assert got == (
        "InferenceReplica demo/svc-engine is projected by InferenceService demo/svc and rejects a direct "
        "CREATE without the ome.io/controller-write=true annotation; edit the InferenceService instead"
    )


@pytest.mark.parametrize("username", ["kubernetes-admin", "system:serviceaccount:elsewhere:manager"])
def test_projected_create_with_the_annotation_passes_whoever_asks(username: str) -> None:
    """The check no longer depends on the manager's user name: an out-of-cluster admin manager works."""
    assert run(ireplica("svc", annotations=MARK), username=username)["allowed"]


@pytest.mark.parametrize("value", ["True", "yes", "1", ""])
def test_only_the_literal_true_counts(value: str) -> None:
    assert "edit the InferenceService instead" in message(
        run(ireplica("svc", annotations={"ome.io/controller-write": value}))
    )


def test_projected_spec_update_without_the_annotation_is_denied() -> None:
    got = message(run(ireplica("svc", 2), old=ireplica("svc", 1, annotations=MARK)))
    assert "rejects a direct UPDATE without the ome.io/controller-write=true annotation" in got
    assert got.endswith("edit the InferenceService instead")


def test_projected_by_owner_reference_alone() -> None:
    old = ireplica(owned=True)
    assert "is projected by InferenceService demo/svc" in message(run(ireplica(replicas=2, owned=True), old=old))


def test_controller_spec_update_passes() -> None:
    assert run(ireplica("svc", 2, annotations=MARK), old=ireplica("svc", 1, annotations=MARK))["allowed"]


def test_finalizer_only_update_passes_without_the_annotation() -> None:
    old = ireplica("svc")
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["ome.io/inferencereplica-teardown"]
    assert run(new, old=old)["allowed"]
    assert run(old, old=new)["allowed"]  # and removing it


def test_user_can_annotate_and_label_a_projected_replica() -> None:
    old = ireplica("svc", annotations=MARK)
    new = copy.deepcopy(old)
    new["metadata"]["annotations"]["ome.io/reset-instances"] = "all"
    new["metadata"]["labels"] = {"team": "a"}
    assert run(new, old=old)["allowed"]


def test_garbage_collector_may_drop_the_owner_reference() -> None:
    old = ireplica("svc")
    new = copy.deepcopy(old)
    del new["metadata"]["ownerReferences"]
    assert run(new, old=old)["allowed"]


def test_parent_ref_alone_is_refused_on_create() -> None:
    got = message(run(ireplica("svc", owned=False, annotations=MARK)))
    assert "spec.parentRef is set by the InferenceService controller on the replicas it projects" in got


@pytest.mark.parametrize(("old", "new"), [(ireplica(), ireplica("svc", owned=False)),
                                          (ireplica("svc"), ireplica("other")),
                                          (ireplica("svc"), ireplica(owned=True))])
def test_parent_ref_is_immutable(old: Obj, new: Obj) -> None:
    new["metadata"]["annotations"] = dict(MARK)
    assert message(run(new, old=old)).endswith("spec.parentRef is immutable")


def test_component_is_immutable_for_every_writer() -> None:
    new = ireplica(annotations=MARK)
    new["spec"]["component"] = "decoder"
    assert message(run(new, old=ireplica())).endswith("spec.component is immutable")


def test_user_cannot_adopt_a_standalone_replica_by_owner_reference() -> None:
    got = message(run(ireplica(owned=True), old=ireplica()))
    assert "only the InferenceService controller sets an InferenceService controller owner reference" in got


def test_standalone_replica_is_its_owners() -> None:
    assert run(ireplica())["allowed"]
    assert run(ireplica(replicas=3), old=ireplica())["allowed"]


def test_standalone_create_must_not_carry_a_copied_annotation() -> None:
    got = message(run(ireplica(annotations=MARK)))
    assert "the controller creates only the replicas it projects" in got


def test_delete_is_never_gated() -> None:
    body = review("InferenceReplica", None, old=ireplica("svc"), operation="DELETE")
    assert call(registry.handlers(FakeReader())[IR_PATH], body)["allowed"]


def test_rendered_replica_carries_the_controller_marks_and_passes_the_webhook() -> None:
    """What the InferenceService controller applies is admitted; the same object stripped of the mark is not."""
    isvc = builders.isvc(engine={"annotations": {modes.ANNOTATION: "OMENative"}})
    isvc["metadata"]["generation"] = 7
    isvc["metadata"]["annotations"] = {"ome.io/controller-write": "false", "ome.io/parent-generation": "1"}
    config = InferenceServiceConfig()
    model = ModelSource.from_object("ClusterBaseModel", builders.model())
    [plan] = build_plans(isvc, builders.runtime(), model, config)
    [replica] = [o for o in workloads.render_component(isvc, plan, config, lws_served=False)
                 if o["kind"] == "InferenceReplica"]
    annotations = replica["metadata"]["annotations"]
    assert annotations["ome.io/controller-write"] == "true"  # ours win over a copied service annotation
    assert annotations["ome.io/parent-generation"] == "7"
    assert run(replica, username="kubernetes-admin")["allowed"]
    del replica["metadata"]["annotations"]["ome.io/controller-write"]
    assert not run(replica, username=SERVICE_ACCOUNT)["allowed"]
