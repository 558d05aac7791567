"""The documented admission rejections of autoscaling and budget fields, with their exact messages."""

from __future__ import annotations

from typing import Any

import pytest

from ome.webhooks import autoscaler_admission as adm
from ome.webhooks import inferenceservice_validation, servingruntime_validation
from ome.webhooks.handler import AdmissionRequest
from tests.unit.resolution import builders

Obj = dict[str, Any]
TRIGGER: Obj = {"type": "cron", "metadata": {"timezone": "UTC", "start": "0 9 * * *", "end": "0 17 * * *",
                                             "desiredReplicas": "1"}}


def _error(policy_enabled: bool = False, annotations: dict[str, str] | None = None, **components: Obj) -> str | None:
    isvc = builders.isvc(annotations=annotations, **components)
    return adm.isvc_error(isvc, policy_enabled=policy_enabled)


@pytest.mark.parametrize(
    ("components", "message"),
    [
        ({"engine": {"autoscaler": {"class": "KEDA"}}},
         "engine: KedaTriggersRequired: class=keda requires at least 1 trigger"),
        ({"engine": {}, "decoder": {"autoscaler": {"class": "KEDA", "keda": {"triggers": []}}}},
         "decoder: KedaTriggersRequired: class=keda requires at least 1 trigger"),
        ({"engine": {"autoscaler": {}}},
         "engine: AutoscalerClassUnknown: autoscaler.class '' is not one of HPA|KEDA|External|None"),
        ({"engine": {"autoscaler": {"class": "HPA", "hpa": {"metrics": [{"type": "Pods"}]}}}},
         "engine: HPAMetricMalformed: hpa.metrics[0].type=Pods but hpa.metrics[0].pods is nil"),
        ({"engine": {"autoscaler": {"class": "HPA", "hpa": {"metrics": [{"resource": {"name": "cpu"}}]}}}},
         "engine: HPAMetricMalformed: hpa.metrics[0].type is empty; must be one of "
         "Resource|Pods|Object|External|ContainerResource"),
        ({"router": {"minReplicas": 2, "autoscaler": {"class": "KEDA", "keda": {"triggers": [TRIGGER],
                                                                               "idleReplicaCount": 2}}}},
         "router: KedaIdleBelowMin: keda.idleReplicaCount must be < minReplicas (got idleReplicaCount=2, "
         "minReplicas=2)"),
        ({"engine": {"minReplicas": 0}},
         "InvalidScaleToZero: engine.minReplicas=0 requires KEDA autoscaling (set spec.engine.autoscaler.class=KEDA "
         "or the ome.io/autoscalerClass=keda annotation); Serverless mode no longer auto-promotes scale-to-zero"),
        ({"engine": {"minReplicas": 0, "autoscaler": {"class": "HPA"}}},
         "InvalidScaleToZero: engine.minReplicas=0 requires KEDA autoscaling (set spec.engine.autoscaler.class=KEDA "
         "or the ome.io/autoscalerClass=keda annotation); Serverless mode no longer auto-promotes scale-to-zero"),
        ({"engine": {"minAvailable": 1, "maxUnavailable": 1}},
         "spec.engine.minAvailable and spec.engine.maxUnavailable cannot both be set"),
        ({"engine": {"minAvailable": "150%"}},
         "spec.engine.minAvailable must be a non-negative integer or a percentage from 0% to 100%"),
        ({"engine": {"maxUnavailable": -1}},
         "spec.engine.maxUnavailable must be a non-negative integer or a percentage from 0% to 100%"),
        ({"engine": {"autoscalerPolicyRef": {"name": "queue-depth"}}},
         "AutoscalerPolicyFeatureDisabled: spec.engine.autoscalerPolicyRef names AutoscalerPolicy 'queue-depth', "
         "but the AutoscalerPolicy feature is not enabled"),
    ],
    ids=["keda-no-block", "keda-empty-triggers", "no-class", "pods-without-pods", "metric-no-type", "idle-at-min",
         "zero-without-keda", "zero-with-hpa", "both-budgets", "budget-over-100", "budget-negative",
         "policy-feature-off"],
)
def test_documented_rejections(components: dict[str, Obj], message: str) -> None:
    assert _error(**components) == message


def test_scale_to_zero_with_own_keda_is_admitted() -> None:
    engine = {"minReplicas": 0, "maxReplicas": 2, "autoscaler": {"class": "KEDA", "keda": {"triggers": [TRIGGER]}}}
    assert _error(engine=engine) is None


def test_scale_to_zero_with_only_a_policy_reference_is_rejected() -> None:
    error = _error(policy_enabled=True, engine={"minReplicas": 0, "autoscalerPolicyRef": {"name": "queue-depth"}})
    assert error is not None and error.startswith("InvalidScaleToZero")


def test_policy_reference_admitted_when_the_feature_is_on() -> None:
    assert _error(policy_enabled=True, engine={"autoscalerPolicyRef": {"name": "queue-depth"}}) is None


def test_annotation_conflict() -> None:
    error = _error(annotations={"ome.io/autoscalerClass": "hpa"}, engine={"autoscaler": {"class": "External"}})
    assert error == ("AutoscalerAnnotationConflict: ome.io/autoscalerClass annotation is present together with "
                     "spec.engine.autoscaler; remove the annotation — per-Component autoscaler block wins")


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({"ome.io/autoscalerClass": "knative"}, "[knative] is not a supported autoscaler class type"),
        ({"ome.io/targetUtilizationPercentage": "0"}, "the target utilization percentage should be a [1-100] integer"),
        ({"ome.io/targetUtilizationPercentage": "x"}, "the target utilization percentage should be a [1-100] integer"),
        ({"ome.io/autoscalerClass": "hpa", "ome.io/metrics": "gpu"}, "[gpu] is not a supported metric"),
    ],
)
def test_legacy_annotation_values(annotations: dict[str, str], message: str) -> None:
    assert _error(annotations=annotations) == message


def test_legacy_keda_annotation_admits_scale_to_zero() -> None:
    assert _error(annotations={"ome.io/autoscalerClass": "keda"}, engine={"minReplicas": 0}) is None


def test_runtime_blocks_are_checked_and_policy_refs_rejected() -> None:
    assert adm.runtime_error({"engineConfig": {"autoscaler": {"class": "KEDA"}}}) == (
        "engineConfig: KedaTriggersRequired: class=keda requires at least 1 trigger")
    assert adm.runtime_error({"routerConfig": {"autoscalerPolicyRef": {"name": "p"}}}) == (
        "routerConfig.autoscalerPolicyRef is not allowed: references go only in an InferenceService")


def test_the_inferenceservice_webhook_denies_with_the_message() -> None:
    isvc = builders.isvc(engine={"autoscaler": {"class": "KEDA"}})
    request = _request(isvc)
    outcome = inferenceservice_validation.validate(request, _EmptyReader())
    assert outcome.denial == "engine: KedaTriggersRequired: class=keda requires at least 1 trigger"


def test_the_runtime_webhook_denies_a_policy_reference() -> None:
    runtime = builders.runtime(engine_config={"autoscalerPolicyRef": {"name": "p"}})
    outcome = servingruntime_validation.validate(_request(runtime), _EmptyReader())
    assert outcome.denial == "engineConfig.autoscalerPolicyRef is not allowed: references go only in an InferenceService"


class _EmptyReader:
    def get_or_none(self, *args: Any, **kwargs: Any) -> None:
        return None

    def list(self, *args: Any, **kwargs: Any) -> list[Obj]:
        return []


def _request(obj: Obj) -> AdmissionRequest:
    meta = obj["metadata"]
    return AdmissionRequest(uid="1", kind=obj["kind"], operation="CREATE", namespace=meta.get("namespace") or "",
                            name=meta["name"], username="u", obj=obj, old=None)
