"""resolve_model: kind defaults to ClusterBaseModel, no fallback to a BaseModel, the documented message."""

from __future__ import annotations

import pytest

from ome.api import resources
from ome.resolution import models
from tests.unit.resolution.fake_reader import FakeReader, isvc, model


def test_runtime_only_service_has_no_model() -> None:
    assert models.resolve_model(FakeReader(), isvc(runtime={"name": "rt"})) is None


@pytest.mark.parametrize(
    "ref", [{"name": ""}, {"kind": "BaseModel"}, "llama", None], ids=["empty", "no-name", "str", "null"]
)
def test_malformed_model_ref_counts_as_no_model(ref: object) -> None:
    assert models.resolve_model(FakeReader(), isvc(model=ref)) is None


def test_kind_defaults_to_cluster_base_model() -> None:
    reader = FakeReader((resources.CLUSTER_BASE_MODELS, model("llama")))
    found = models.resolve_model(reader, isvc(model={"name": "llama"}))
    assert found is not None
    assert (found.kind, found.name, found.namespace, found.ready) == ("ClusterBaseModel", "llama", None, True)


def test_no_fallback_to_base_model_without_kind() -> None:
    reader = FakeReader((resources.BASE_MODELS, model("llama", namespace="demo")))
    with pytest.raises(models.ModelNotFound) as raised:
        models.resolve_model(reader, isvc(model={"name": "llama"}))
    assert raised.value.message.startswith('referenced model "llama" not found in namespace "demo"')


def test_base_model_kind_reads_the_namespace() -> None:
    reader = FakeReader((resources.BASE_MODELS, model("llama", namespace="demo", state="In_Transit")))
    found = models.resolve_model(reader, isvc(model={"name": "llama", "kind": "BaseModel"}))
    assert found is not None and (found.kind, found.namespace, found.ready) == ("BaseModel", "demo", False)


def test_base_model_in_another_namespace_is_not_found() -> None:
    reader = FakeReader((resources.BASE_MODELS, model("llama", namespace="other")))
    with pytest.raises(models.ModelNotFound):
        models.resolve_model(reader, isvc(model={"name": "llama", "kind": "BaseModel"}))


def test_unknown_kind_is_not_found_and_says_why() -> None:
    with pytest.raises(models.ModelNotFound) as raised:
        models.resolve_model(FakeReader(), isvc(model={"name": "m", "kind": "FineTunedWeight"}))
    assert "FineTunedWeight" in raised.value.message


def test_disabled_flag_is_exposed() -> None:
    reader = FakeReader((resources.CLUSTER_BASE_MODELS, model("llama", disabled=True)))
    found = models.resolve_model(reader, isvc(model={"name": "llama"}))
    assert found is not None and found.disabled
