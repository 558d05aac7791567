"""Deployment-mode resolution: the four rules of "How OME resolves the mode", in order."""

from __future__ import annotations

from typing import Any

import pytest

from ome.resolution import modes
from ome.resolution.merge import merge_component

Obj = dict[str, Any]
ANN = modes.ANNOTATION


def _resolve(
    component: str, isvc_component: Obj, runtime_config: Obj | None = None, spec_mode: str | None = None
) -> str:
    return str(modes.resolve(component, merge_component(runtime_config, isvc_component), spec_mode))


@pytest.mark.parametrize(
    ("component", "isvc_component", "runtime_config", "spec_mode", "expected"),
    [
        ("engine", {}, None, None, "RawDeployment (Default)"),
        ("router", {}, None, None, "RawDeployment (Default)"),
        ("engine", {}, None, "OMENative", "OMENative (Spec)"),
        ("router", {}, None, "OMENative", "OMENative (Spec)"),
        ("engine", {"annotations": {ANN: "RawDeployment"}}, None, "OMENative", "RawDeployment (Annotation)"),
        ("router", {"annotations": {ANN: "RawDeployment"}}, None, "OMENative", "RawDeployment (Annotation)"),
        ("engine", {}, {"annotations": {ANN: "OMENative"}}, "RawDeployment", "OMENative (Annotation)"),
        ("engine", {"annotations": {ANN: "RawDeployment"}}, {"annotations": {ANN: "OMENative"}}, None,
         "RawDeployment (Annotation)"),
        ("engine", {"annotations": {ANN: "MultiNode"}}, None, None, "MultiNode (Annotation)"),
        ("engine", {"annotations": {ANN: "VirtualDeployment"}}, None, None, "VirtualDeployment (Annotation)"),
        ("engine", {"annotations": {ANN: "MultiNodeRayVLLM"}}, None, "OMENative", "OMENative (Spec)"),
        ("engine", {"annotations": {ANN: "Serverless"}}, None, None, "RawDeployment (Default)"),
        ("engine", {"worker": {"size": 2}}, None, None, "OMENative (LeaderWorker)"),
        ("decoder", {"leader": {}}, None, None, "OMENative (LeaderWorker)"),
        ("engine", {}, {"worker": {"size": 1}}, None, "OMENative (LeaderWorker)"),
        ("engine", {"worker": {"size": 2}}, None, "RawDeployment", "RawDeployment (Spec)"),
        ("engine", {"worker": {"size": 2}, "annotations": {ANN: "MultiNode"}}, None, None, "MultiNode (Annotation)"),
        ("engine", {}, None, "MultiNode", "RawDeployment (Default)"),
    ],
    ids=[
        "default", "router-default", "spec-omenative", "spec-covers-router", "isvc-annotation-beats-spec",
        "router-kept-on-deployment", "runtime-annotation-beats-spec", "isvc-annotation-beats-runtime",
        "multinode-by-annotation", "virtual-on-component", "unknown-value-skipped", "serverless-skipped",
        "worker-means-omenative", "leader-on-decoder", "runtime-worker", "spec-beats-worker",
        "annotation-pins-multinode", "spec-accepts-only-two-values",
    ],
)  # fmt: skip
def test_mode_rules(
    component: str, isvc_component: Obj, runtime_config: Obj | None, spec_mode: str | None, expected: str
) -> None:
    assert _resolve(component, isvc_component, runtime_config, spec_mode) == expected


def test_router_never_takes_omenative_from_leader_or_worker() -> None:
    merged = {"worker": {"size": 1}}  # a router has no worker; an odd runtime must not change its mode
    assert modes.resolve("router", merged, None) == modes.ModeDecision("RawDeployment", "Default")


def test_isvc_metadata_annotation_sets_no_component_mode() -> None:
    assert modes.is_virtual({"metadata": {"annotations": {ANN: "VirtualDeployment"}}})
    assert not modes.is_virtual({"metadata": {"annotations": {ANN: "OMENative"}}})
    assert not modes.is_virtual({"metadata": {}})


@pytest.mark.parametrize(
    ("component", "mode"),
    [("engine", "VirtualDeployment"), ("decoder", "VirtualDeployment"), ("router", "VirtualDeployment"),
     ("router", "MultiNode")],
)  # fmt: skip
def test_unreconcilable_modes_raise(component: str, mode: str) -> None:
    with pytest.raises(modes.UnreconcilableModeError):
        modes.check_reconcilable(component, mode)


@pytest.mark.parametrize(("component", "mode"), [("engine", "MultiNode"), ("router", "OMENative"),
                                                 ("decoder", "RawDeployment")])  # fmt: skip
def test_reconcilable_modes_pass(component: str, mode: str) -> None:
    modes.check_reconcilable(component, mode)


@pytest.mark.parametrize(
    ("component", "spec_mode", "expected"),
    [({"annotations": {ANN: "OMENative"}}, None, "OMENative"), ({}, "OMENative", "OMENative"), ({}, None, ""),
     ({"annotations": {ANN: "bogus"}}, "RawDeployment", "RawDeployment")],
)  # fmt: skip
def test_declared_mode(component: Obj, spec_mode: str | None, expected: str) -> None:
    assert modes.declared_mode(component, spec_mode) == expected
