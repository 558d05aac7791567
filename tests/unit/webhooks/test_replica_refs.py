"""spec.replicaRefs: shape, the fixed-at-create rule and the live checks, with the seed's messages."""

from __future__ import annotations

from typing import Any

import pytest

from ome.api import resources
from ome.webhooks import registry
from tests.unit.resolution.fake_reader import FakeReader, isvc
from tests.unit.webhooks.reviews import call, review

PATH = "/validate-ome-io-v1beta1-inferenceservice"
IR = resources.INFERENCE_REPLICAS


def replica(name: str, component: str = "engine", parent: str | None = None, namespace: str = "demo") -> dict:
    spec: dict[str, Any] = {"component": component}
    if parent:
        spec["parentRef"] = {"name": parent}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def answer(svc: dict, reader: FakeReader | None = None, **kw: Any) -> dict:
    return call(registry.handlers(reader or FakeReader())[PATH], review("InferenceService", svc, **kw))


def message(svc: dict, reader: FakeReader | None = None, **kw: Any) -> str:
    got = answer(svc, reader, **kw)
    assert got["allowed"] is False, got
    return str(got["status"]["message"])


def test_fronting_a_standalone_replica_is_admitted_without_model_or_runtime() -> None:
    reader = FakeReader((IR, replica("llama-pool")))
    assert answer(isvc(replicaRefs={"engine": ["llama-pool"]}), reader) == {"uid": "uid-1", "allowed": True}


def test_engine_is_required() -> None:
    got = message(isvc(replicaRefs={"decoder": ["d"]}))
    assert got.startswith("spec.replicaRefs.engine is required when spec.replicaRefs is set")


def test_seed_missing_replica_message() -> None:
    assert message(isvc(replicaRefs={"engine": ["llama-pool"]})) == (
        "spec.replicaRefs.engine names InferenceReplica demo/llama-pool, which does not exist; create it first"
    )


@pytest.mark.parametrize(
    ("refs", "needle"),
    [
        ({"engine": ["a", "b"]}, "each role takes exactly one"),
        ({"engine": ["a"], "decoder": ["a"]}, "a replica serves one role"),
        ({"engine": ["Bad_Name"]}, "not a valid InferenceReplica name"),
    ],
)
def test_shape_rules(refs: dict, needle: str) -> None:
    assert needle in message(isvc(replicaRefs=refs))


@pytest.mark.parametrize(
    "extra",
    [
        {"engine": {}},
        {"router": {}},
        {"model": {"name": "m"}},
        {"runtime": {"name": "r"}},
        {"rollout": {}},
        {"scalingPolicy": {"mode": "Independent"}},
        {"acceleratorSelector": {}},
        {"placement": {}},
        {"routing": {}},
        {"deploymentMode": "RawDeployment"},
    ],
)
def test_nothing_rides_along(extra: dict) -> None:
    reader = FakeReader((IR, replica("pool")))
    assert "spec.replicaRefs" in message(isvc(replicaRefs={"engine": ["pool"]}, **extra), reader)


def test_omenative_mode_is_accepted() -> None:
    reader = FakeReader((IR, replica("pool")))
    assert answer(isvc(replicaRefs={"engine": ["pool"]}, deploymentMode="OMENative"), reader)["allowed"]


def test_projected_replica_cannot_be_referenced() -> None:
    reader = FakeReader((IR, replica("pool", parent="owner")))
    assert "which InferenceService owner projects" in message(isvc(replicaRefs={"engine": ["pool"]}), reader)


def test_replica_must_serve_the_role() -> None:
    reader = FakeReader((IR, replica("pool", component="decoder")))
    assert "whose spec.component is decoder, not engine" in message(
        isvc(replicaRefs={"engine": ["pool"]}), reader
    )


def test_replica_has_one_service() -> None:
    other = isvc(name="first", replicaRefs={"engine": ["pool"]})
    reader = FakeReader((IR, replica("pool")), (resources.INFERENCE_SERVICES, other))
    assert "which InferenceService first already fronts" in message(
        isvc(name="second", replicaRefs={"engine": ["pool"]}), reader
    )


def test_seed_fixed_at_create_message() -> None:
    old = isvc(replicaRefs={"engine": ["pool"]})
    new = isvc(replicaRefs={"engine": ["other"]})
    assert message(new, old=old, operation="UPDATE") == (
        "spec.replicaRefs is fixed at create; delete and recreate the InferenceService to front other replicas"
    )


def test_adding_refs_on_update_is_also_fixed() -> None:
    old = isvc(model={"name": "m"})
    assert message(isvc(replicaRefs={"engine": ["pool"]}), old=old, operation="UPDATE").startswith(
        "spec.replicaRefs is fixed"
    )


def test_unchanged_refs_update_does_not_read_the_replica() -> None:
    svc = isvc(replicaRefs={"engine": ["pool"]})
    assert answer(svc, old=svc, operation="UPDATE")["allowed"]
