"""Runtime inheritance (concepts/runtimes/runtime-inheritance.md): chains, merge rules, documented errors."""

from __future__ import annotations

from typing import Any

import pytest

from ome.api import resources
from ome.resolution import models, runtime_inheritance, runtimes
from tests.unit.resolution.fake_reader import FakeReader, entry, isvc, model, runtime

CSR, SR, CBM = resources.CLUSTER_SERVING_RUNTIMES, resources.SERVING_RUNTIMES, resources.CLUSTER_BASE_MODELS
Obj = dict[str, Any]


def child_of(parent: str, rt: Obj) -> Obj:
    rt["metadata"].setdefault("annotations", {})[runtime_inheritance.INHERIT_FROM] = parent
    return rt


def docs_profile() -> Obj:
    """The docs' sglang-profile (shortened): disabled, the shared command and image."""
    rt = runtime(
        "sglang-profile",
        disabled=True,
        engineConfig={
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            "runner": {
                "name": "ome-container",
                "image": "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64",
                "command": ["python3", "-m", "sglang.launch_server", "--served-model-name={{.Name}}"],
                "ports": [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}],
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                "resources": {"limits": {"cpu": "8"}},
            },
        },
        modelSizeRange={"min": "1B", "max": "8B"},
    )
    rt["metadata"]["annotations"] = {runtime_inheritance.RUNTIME_PROFILE: "true"}
    return rt


def docs_child() -> Obj:
    return child_of(
        "sglang-profile",
        runtime(
            "sglang-llama-3-2-3b",
            entry(auto=False),
            namespace="llama-demo",
            disabled=False,
            modelSizeRange={"max": "4B"},
            engineConfig={
                "runner": {
                    "name": "ome-container",
                    "args": ["--tp-size=1", "--mem-frac=0.9"],
                    "resources": {"requests": {"cpu": "10"}, "limits": {"memory": "30Gi"}},
                    "env": [],
                    "image": "",
                }
            },
        ),
    )


def test_docs_example_merges_from_the_root_down() -> None:
    reader = FakeReader((CSR, docs_profile()))
    merged = runtime_inheritance.resolve(reader, "ServingRuntime", docs_child())
    spec = merged["spec"]
    runner = spec["engineConfig"]["runner"]
    # Single values: the child's disabled: false replaces the profile's true; "" counts as unset.
    assert spec["disabled"] is False
    assert runner["image"] == "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"
    # The profile's command stays, the child's args are added; objects merge field by field.
    assert runner["command"][0] == "python3" and runner["args"] == ["--tp-size=1", "--mem-frac=0.9"]
    assert spec["modelSizeRange"] == {"min": "1B", "max": "4B"}
    assert runner["resources"] == {"requests": {"cpu": "10"}, "limits": {"cpu": "8", "memory": "30Gi"}}
    assert "env" not in runner  # [] counts as unset, never an empty override
    assert spec["engineConfig"]["tolerations"][0]["key"] == "nvidia.com/gpu"
    # Only the spec is inherited: the metadata is the child's, without the profile's annotation.
    assert merged["metadata"]["name"] == "sglang-llama-3-2-3b"
    assert runtime_inheritance.RUNTIME_PROFILE not in merged["metadata"]["annotations"]


def test_lists_merge_by_their_documented_keys() -> None:
    parent = runtime(
        "p",
        engineConfig={
            "tolerations": [{"key": "a"}],
            "runner": {
                "name": "ome-container",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}],
                "ports": [{"containerPort": 8080, "name": "http1"}],
                "volumeMounts": [{"name": "x", "mountPath": "/m"}],
            },
        },
    )
    child = child_of(
        "p",
        runtime(
            "c",
            engineConfig={
                "tolerations": [{"key": "b"}],
                "runner": {
                    "name": "ome-container",
                    "env": [{"name": "B", "value": "2"}, {"name": "C", "value": "3"}],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "volumeMounts": [{"name": "y", "mountPath": "/m"}],
                },
            },
        ),
    )
    spec = runtime_inheritance.resolve(FakeReader((CSR, parent)), "ClusterServingRuntime", child)["spec"]
    runner = spec["engineConfig"]["runner"]
    assert runner["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "3"},
    ]
    assert runner["ports"] == [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}]
    assert runner["volumeMounts"] == [{"name": "y", "mountPath": "/m"}]
    assert spec["engineConfig"]["tolerations"] == [{"key": "b"}]  # replaced, not merged


def test_missing_parent_message_as_documented() -> None:
    with pytest.raises(runtime_inheritance.InheritanceError) as caught:
        runtime_inheritance.chain(FakeReader(), "ServingRuntime", docs_child())
    assert (
        caught.value.message
        == 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    )
    assert caught.value.reason == "ParentNotFound"


def test_self_reference_is_a_cycle_as_documented() -> None:
    rt = child_of("sglang-llama-3-2-3b", runtime("sglang-llama-3-2-3b", namespace="llama-demo"))
    with pytest.raises(runtime_inheritance.InheritanceError) as caught:
        runtime_inheritance.chain(FakeReader((SR, rt)), "ServingRuntime", rt)
    assert caught.value.message == "inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]"
    assert caught.value.reason == "InheritanceCycle"


def test_serving_runtime_naming_a_cluster_runtime_of_its_own_name_is_a_cycle() -> None:
    local = child_of("x", runtime("x", namespace="ns"))
    cluster = runtime("x")
    with pytest.raises(runtime_inheritance.InheritanceError, match=r"inheritance cycle detected: \[x x\]"):
        runtime_inheritance.chain(FakeReader((CSR, cluster)), "ServingRuntime", local)


def test_chain_of_five_resolves_and_six_exceeds_the_limit() -> None:
    reader = FakeReader((CSR, runtime("r0")))
    for i in range(1, 6):
        reader.put(CSR, child_of(f"r{i - 1}", runtime(f"r{i}")))
    five = runtime_inheritance.chain(reader, "ClusterServingRuntime", reader.get_or_none(CSR, "r4") or {})
    assert runtime_inheritance.chain_names(five) == ["r0", "r1", "r2", "r3", "r4"]
    with pytest.raises(runtime_inheritance.InheritanceError) as caught:
        runtime_inheritance.chain(reader, "ClusterServingRuntime", reader.get_or_none(CSR, "r5") or {})
    assert caught.value.message.startswith("inheritance chain exceeds max depth 5")
    assert caught.value.reason == "MaxDepthExceeded"


def test_serving_runtime_parents_come_from_its_namespace_first() -> None:
    reader = FakeReader(
        (
            SR,
            runtime(
                "p", namespace="ns", engineConfig={"runner": {"name": "ome-container", "image": "local"}}
            ),
        ),
        (CSR, runtime("p", engineConfig={"runner": {"name": "ome-container", "image": "cluster"}})),
        (
            SR,
            runtime(
                "p", namespace="other", engineConfig={"runner": {"name": "ome-container", "image": "other"}}
            ),
        ),
    )
    local = runtime_inheritance.resolve(reader, "ServingRuntime", child_of("p", runtime("c", namespace="ns")))
    assert local["spec"]["engineConfig"]["runner"]["image"] == "local"
    cluster = runtime_inheritance.resolve(reader, "ClusterServingRuntime", child_of("p", runtime("c")))
    assert cluster["spec"]["engineConfig"]["runner"]["image"] == "cluster"


def test_profile_must_be_disabled() -> None:
    profile = docs_profile()
    assert runtime_inheritance.profile_error(profile) is None
    profile["spec"]["disabled"] = False
    assert runtime_inheritance.profile_error(profile) == (
        'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'
    )


# -- used by runtime selection ----------------------------------------------------------------------


def _served(reader: FakeReader, runtime_name: str) -> runtimes.ResolvedRuntime:
    svc = isvc(namespace="llama-demo", model={"name": "llama"}, runtime={"name": runtime_name}, engine={})
    return runtimes.resolve_runtime(reader, svc, models.resolve_model(reader, svc))


def test_named_child_runtime_is_used_with_its_merged_spec() -> None:
    reader = FakeReader((CBM, model("llama", size="3B")), (CSR, docs_profile()), (SR, docs_child()))
    resolved = _served(reader, "sglang-llama-3-2-3b")
    assert resolved.kind == "ServingRuntime" and resolved.name == "sglang-llama-3-2-3b"
    assert resolved.obj["spec"]["engineConfig"]["runner"]["command"][0] == "python3"
    assert resolved.obj["spec"]["disabled"] is False


def test_named_child_with_broken_chain_reports_the_chain_error() -> None:
    reader = FakeReader((CBM, model("llama", size="3B")), (SR, docs_child()))
    with pytest.raises(runtime_inheritance.InheritanceError) as caught:
        _served(reader, "sglang-llama-3-2-3b")
    assert caught.value.message == (
        'Runtime sglang-llama-3-2-3b does not support model llama: inherit-from parent "sglang-profile" not '
        "found (chain so far: [sglang-llama-3-2-3b])"
    )


def test_naming_the_disabled_profile_itself_is_refused() -> None:
    reader = FakeReader((CBM, model("llama", size="3B")), (CSR, docs_profile()))
    with pytest.raises(runtimes.RuntimeDisabled):
        _served(reader, "sglang-profile")


def test_auto_selection_matches_each_runtime_without_inheritance() -> None:
    """A child that only inherits autoSelect formats is not auto-selected: its own spec has none."""
    parent = runtime("p", entry(), disabled=True)
    child = child_of("p", runtime("c", disabled=False))
    child["spec"]["supportedModelFormats"] = []  # merged, it would take the parent's autoSelect entry
    reader = FakeReader((CBM, model("llama")), (CSR, parent), (CSR, child))
    svc = isvc(model={"name": "llama"}, engine={})
    with pytest.raises(runtimes.NoSupportingRuntime):
        runtimes.resolve_runtime(reader, svc, models.resolve_model(reader, svc))
