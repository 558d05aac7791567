from __future__ import annotations

import re

import pytest

from ome.models import labels

LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def test_cluster_model_short_name_is_used_verbatim() -> None:
    assert labels.model_label_key("ClusterBaseModel", "qwen2-5-7b-instruct") == \
        "models.ome.io/clusterbasemodel.qwen2-5-7b-instruct"


def test_cluster_model_long_name_is_hashed_with_tail() -> None:
    name = "a-very-long-model-name-that-goes-past-the-budget-x"
    key = labels.model_label_key("ClusterBaseModel", name)
    part = key.split("/", 1)[1]
    assert len(part) == labels.MAX_NAME_PART
    assert part.endswith(name[-23:])
    assert re.fullmatch(r"clusterbasemodel\.[0-9a-f]{8}-.{23}", part)


def test_exactly_32_chars_is_not_hashed() -> None:
    name = "m" * 32
    assert labels.model_label_key("ClusterBaseModel", name).endswith("." + name)


def test_namespaced_model_fits_in_full() -> None:
    assert labels.model_label_key("BaseModel", "llama", "team-a") == "models.ome.io/team-a.basemodel.llama"


@pytest.mark.parametrize(("ns", "name"), [
    ("short", "x" * 60),
    ("a-rather-long-namespace", "llama-3-70b"),
    ("a-rather-long-namespace", "y" * 40),
    ("n" * 63, "z" * 63),
])
def test_namespaced_long_keys_stay_within_budget_and_valid(ns: str, name: str) -> None:
    key = labels.model_label_key("BaseModel", name, ns)
    part = key.split("/", 1)[1]
    assert len(part) <= labels.MAX_NAME_PART
    assert LABEL_NAME.match(part)
    assert ".basemodel." in part


def test_long_namespace_becomes_bare_hash() -> None:
    key = labels.model_label_key("BaseModel", "llama-3-70b-instruct", "a-rather-long-namespace")
    assert re.fullmatch(r"models\.ome\.io/[0-9a-f]{8}\.basemodel\.llama-3-70b-instruct", key)


def test_distinct_long_names_get_distinct_keys() -> None:
    a = labels.model_label_key("ClusterBaseModel", "prefix-" + "a" * 40 + "-same-tail-of-twenty-three")
    b = labels.model_label_key("ClusterBaseModel", "prefix-" + "b" * 40 + "-same-tail-of-twenty-three")
    assert a != b


def test_bad_kind_and_missing_namespace_are_errors() -> None:
    with pytest.raises(ValueError):
        labels.model_label_key("Model", "x")
    with pytest.raises(ValueError):
        labels.model_label_key("BaseModel", "x")


def test_ready_selector() -> None:
    assert labels.ready_selector("ClusterBaseModel", "m") == {"models.ome.io/clusterbasemodel.m": "Ready"}
