"""Which autoscaler block applies: one whole block from the first source that has one."""

from __future__ import annotations

from typing import Any

import pytest

from ome.resolution import autoscaling, modes
from ome.resolution.autoscaling import PolicyHold, PolicyRendered

Obj = dict[str, Any]

INLINE: Obj = {"class": "HPA", "hpa": {"metrics": [autoscaling.cpu_metric(70)]}}
RUNTIME: Obj = {"class": "HPA", "hpa": {"metrics": [autoscaling.cpu_metric(55)]}}
POLICY_BLOCK: Obj = {"class": "KEDA", "keda": {"triggers": [{"type": "cron", "metadata": {"start": "0 9 * * *"}}]}}
REF: Obj = {"autoscalerPolicyRef": {"name": "queue-depth"}}


def _resolve(
    isvc: Obj | None = None,
    runtime: Obj | None = None,
    annotations: dict[str, str] | None = None,
    policy: autoscaling.PolicyOutcome | None = None,
    mode: str = modes.RAW_DEPLOYMENT,
) -> autoscaling.Resolution:
    return autoscaling.resolve(mode=mode, isvc_component=isvc or {}, runtime_component=runtime or {},
                               annotations=annotations or {}, policy=policy)


def test_inline_block_wins_over_everything_and_shadows_the_reference() -> None:
    got = _resolve({"autoscaler": INLINE, **REF}, {"autoscaler": RUNTIME},
                   {"ome.io/autoscalerClass": "external"}, PolicyRendered("queue-depth", POLICY_BLOCK))
    assert (got.block, got.source, got.shadowed) == (INLINE, "isvc", "queue-depth")
    assert got.condition == autoscaling.Condition("AutoscalerResolved", "True", "InlinePrecedence",
                                                  got.condition.message if got.condition else "")


def test_policy_wins_over_runtime_legacy_and_default() -> None:
    got = _resolve(REF, {"autoscaler": RUNTIME}, {"ome.io/autoscalerClass": "external"},
                   PolicyRendered("queue-depth", POLICY_BLOCK, generation=4))
    assert (got.block, got.source, got.policy, got.policy_generation) == (POLICY_BLOCK, "policy", "queue-depth", 4)
    assert got.condition is not None and got.condition.reason == "RenderedFromPolicy"


def test_runtime_block_wins_over_legacy_annotations_and_default() -> None:
    got = _resolve({}, {"autoscaler": RUNTIME}, {"ome.io/autoscalerClass": "external"})
    assert (got.block, got.source, got.condition) == (RUNTIME, "runtime", None)


def test_legacy_annotations_win_over_default_on_rawdeployment_only() -> None:
    got = _resolve(annotations={"ome.io/autoscalerClass": "external"})
    assert (got.block, got.source) == ({"class": "External"}, "legacy")
    omenative = _resolve(annotations={"ome.io/autoscalerClass": "external"}, mode=modes.OMENATIVE)
    assert (omenative.block, omenative.source) == ({"class": "HPA"}, "default")


def test_default_is_hpa() -> None:
    got = _resolve()
    assert (got.block, got.source, got.klass) == ({"class": "HPA"}, "default", "HPA")


def test_block_comes_whole_from_one_place_not_merged_field_by_field() -> None:
    # An inline class: HPA without hpa gets the default CPU target, never the runtime's metrics.
    got = _resolve({"autoscaler": {"class": "HPA"}}, {"autoscaler": RUNTIME})
    assert got.block == {"class": "HPA"} and got.source == "isvc"


@pytest.mark.parametrize(
    ("annotations", "block"),
    [
        ({"ome.io/autoscalerClass": "hpa"}, {"class": "HPA"}),
        ({"ome.io/autoscalerClass": "hpa", "ome.io/targetUtilizationPercentage": "65"},
         {"class": "HPA", "hpa": {"metrics": [autoscaling.cpu_metric(65)]}}),
        ({"ome.io/targetUtilizationPercentage": "40"},
         {"class": "HPA", "hpa": {"metrics": [autoscaling.cpu_metric(40)]}}),
        ({"ome.io/targetUtilizationPercentage": "140"}, {"class": "HPA"}),
        ({"ome.io/autoscalerClass": "keda"}, {"class": "KEDA"}),
        ({"ome.io/autoscalerClass": "external"}, {"class": "External"}),
        ({"ome.io/metrics": "memory"}, None),
    ],
    ids=["hpa", "hpa-target", "target-alone", "target-out-of-range", "keda", "external", "metrics-ignored"],
)
def test_legacy_annotation_values(annotations: dict[str, str], block: Obj | None) -> None:
    assert autoscaling.legacy_block(annotations) == block


def test_component_annotation_wins_over_the_inferenceservice() -> None:
    isvc = {"metadata": {"annotations": {"ome.io/targetUtilizationPercentage": "50"}}}
    merged = {"annotations": {"ome.io/targetUtilizationPercentage": "60"}}
    assert autoscaling.legacy_annotations(isvc, merged)["ome.io/targetUtilizationPercentage"] == "60"


def test_unusable_policy_holds_instead_of_falling_through() -> None:
    hold = PolicyHold("queue-depth", "PolicyNotFound", 'AutoscalerPolicy "queue-depth" not found in namespace x')
    got = _resolve(REF, {"autoscaler": RUNTIME}, policy=hold)
    assert got.hold == hold and got.block == {} and got.source == "policy"
    assert got.condition is not None
    assert (got.condition.status, got.condition.reason) == ("False", "PolicyNotFound")
    assert got.condition.message.startswith("holding last-known-good scaler: ")


def test_multinode_gets_no_autoscaler_and_a_reference_reports_unsupported_mode() -> None:
    got = _resolve(REF, mode=modes.MULTINODE)
    assert got.block == {} and got.condition is not None
    assert (got.condition.status, got.condition.reason) == ("False", "UnsupportedDeploymentMode")


def test_no_condition_without_a_reference() -> None:
    assert _resolve({"autoscaler": INLINE}).condition is None


def test_managed_by_per_class() -> None:
    assert [autoscaling.managed_by(c) for c in autoscaling.CLASSES] == ["ome", "ome", "external", "none"]
