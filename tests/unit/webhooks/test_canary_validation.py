"""Canary admission (B13): every documented rejection, with its exact message, and the policy rules."""

from __future__ import annotations

from typing import Any

import pytest

from ome.webhooks import annotation_validation, canary_validation, inferenceservice_validation

STEPS = [{"capacity": "25%", "traffic": 10, "pause": {}}, {"capacity": "100%", "traffic": 100}]


def spec(*groups: dict[str, Any], decoder: bool = False, router: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "deploymentMode": "OMENative",
        "model": {"name": "m"},
        "engine": {"minReplicas": 4},
        "rollout": {"groups": list(groups)},
    }
    if decoder:
        out["decoder"] = {"minReplicas": 2}
    if router:
        out["router"] = {"minReplicas": 1}
    return out


def canary(*components: str, **extra: Any) -> dict[str, Any]:
    return {"components": list(components), "canary": {"steps": STEPS, **extra.pop("canary", {})}, **extra}


def error(s: dict[str, Any]) -> str | None:
    return inferenceservice_validation.spec_error("chat", s)


def test_a_valid_canary_passes() -> None:
    assert error(spec(canary("engine"))) is None
    assert error(spec(canary("engine", "decoder"), decoder=True)) is None


def test_naming_either_must_name_both() -> None:
    assert error(spec(canary("engine"), decoder=True)) == (
        "spec.rollout.groups[0]: this InferenceService declares both engine and decoder, so a canary group "
        "naming either must name both — they roll as one unit (CanaryInvalid)"
    )
    assert error(spec(canary("decoder"), decoder=True)) == (
        'spec.rollout.groups[0]: a canary group covering the "engine" unit must include its entrypoint '
        'Component "engine" — that is what the step machine and traffic weight are driven through (CanaryInvalid)'
    )


def test_canary_component_rules_give_canary_invalid_not_coordination_reasons() -> None:
    assert error(spec(canary("predictor"))) == (
        'spec.rollout.groups[0]: canary component "predictor" is not one of router/engine/decoder (CanaryInvalid)'
    )
    assert error(spec(canary("router"))) == (
        'spec.rollout.groups[0]: canary component "router" is not declared on the InferenceService (CanaryInvalid)'
    )
    assert error(spec(canary("engine", maintainRatio={"tolerance": 5}))) == (
        "spec.rollout.groups[0]: maintainRatio is not honored on a canary group (the canary engine does not "
        "enforce it) — remove it, or use a blueGreen/rollingUpdate group for ratio-guarded rollout (CanaryInvalid)"
    )


def test_multiple_canary_groups_on_one_unit() -> None:
    second = {"components": ["engine"], "policyRef": {"name": "p", "progression": "canary"}}
    assert error(spec(canary("engine"), second)) == (
        'spec.rollout.groups: canary unit "engine" is driven by both groups[0] and groups[1]; a unit may have '
        "at most one canary run (MultipleCanaryGroups)"
    )


W = "spec.rollout.groups[0].canary"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"steps": []}, f"{W}.steps must not be empty (CanaryInvalid)"),
        ({"steps": STEPS, "readyTimeout": "0s"}, f"{W}.readyTimeout must be > 0 when set (CanaryInvalid)"),
        ({"steps": [{"capacity": "100%", "traffic": 90}]}, f"{W} final step traffic must be 100, got 90 (CanaryInvalid)"),
        ({"steps": [{"capacity": "2", "traffic": 100}]},
         f'{W}.steps[0].capacity: capacity "2" is not a percentage — use "<N>%" for a fraction of desired '
         "replicas, or an unquoted integer for an absolute count (CanaryInvalid)"),
        ({"steps": [{"capacity": "x%", "traffic": 100}]},
         f'{W}.steps[0].capacity: capacity "x%" is not a valid percentage — use "<N>%" with integer N in '
         "[0,100] (CanaryInvalid)"),
        ({"steps": [{"capacity": "120%", "traffic": 100}]},
         f'{W}.steps[0].capacity: capacity "120%" must not exceed 100% (capacity is a fraction of desired '
         "replicas) (CanaryInvalid)"),
        ({"steps": [{"capacity": "50%", "traffic": 50}, {"capacity": "100%", "traffic": 20},
                    {"capacity": "100%", "traffic": 100}]},
         f"{W}.steps[1].traffic: traffic 20 must be >= the previous step's 50 (canary weights are "
         "non-decreasing) (CanaryInvalid)"),
        ({"steps": [{"capacity": "0%", "traffic": 10}, {"capacity": "100%", "traffic": 100}]},
         f'{W}.steps[0].capacity: capacity "0%" resolves to zero new capacity but traffic is 10 — a step cannot '
         "send traffic to zero capacity (CanaryInvalid)"),
        ({"steps": [{"capacity": "50%", "traffic": 100}]},
         f"{W}.steps[0].capacity: final step capacity must be 100% (rollout completes at full capacity), got "
         '"50%" (CanaryInvalid)'),
    ],
)
def test_plan_body_messages(body: dict[str, Any], message: str) -> None:
    assert error(spec({"components": ["engine"], "canary": body})) == message


def analysis(**fields: Any) -> dict[str, Any]:
    base = {"interval": "1m", "failureLimit": 1,
            "metrics": [{"name": "error-rate", "query": "q", "operator": "LT", "threshold": "0.01"}]}
    return {**base, **fields}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (analysis(interval="0s"), f"{W}.steps[0].analysis: interval must be > 0 (AnalysisInvalid)"),
        (analysis(metrics=[{"name": "", "query": "q", "operator": "LT", "threshold": "1"}]),
         f"{W}.steps[0].analysis.metrics[0].name must not be empty (AnalysisInvalid)"),
        (analysis(metrics=[{"name": "m", "query": "  ", "operator": "LT", "threshold": "1"}]),
         f'{W}.steps[0].analysis.metrics[0] ("m"): query must not be empty (AnalysisInvalid)'),
        (analysis(metrics=[{"name": "m", "query": "q", "operator": "LT", "threshold": "low"}]),
         f'{W}.steps[0].analysis.metrics[0] ("m"): threshold "low" must be numeric (AnalysisInvalid)'),
    ],
)
def test_analysis_messages(body: dict[str, Any], message: str) -> None:
    steps = [{"capacity": "25%", "traffic": 10, "analysis": body}, {"capacity": "100%", "traffic": 100}]
    assert error(spec({"components": ["engine"], "canary": {"steps": steps}})) == message


def test_ready_timeout_annotation_invalid_duration_and_short_warning() -> None:
    def obj(value: str) -> dict[str, Any]:
        return {"metadata": {"name": "chat", "annotations": {"ome.io/rollout-ready-timeout": value}}, "spec": {}}

    denial, _ = annotation_validation.validate(obj("soon"))
    assert denial is not None and denial.endswith("(InvalidDuration)")
    assert "ome.io/rollout-ready-timeout" in denial
    denial, warnings = annotation_validation.validate(obj("30s"))
    assert denial is None
    assert any(w.endswith("(RolloutTimeoutTooShort)") for w in warnings)


P = "(RolloutPolicyInvalid)"


def test_policy_portability_rules() -> None:
    steps = [{"capacity": "25%", "traffic": 10, "analysis": analysis()}, {"capacity": "100%", "traffic": 100}]
    server = {"canary": {"steps": steps, "prometheus": {"serverAddress": "http://p:9090"}}}
    assert canary_validation.policy_body_error(server) == (
        "spec.canary.prometheus.serverAddress is not allowed in a policy body — a cluster-local URL defeats "
        "portability; name a providerRef bound in the operator's metricProviders configuration instead " + P
    )
    auth = {"canary": {"steps": steps, "prometheus": {"providerRef": {"name": "x"}, "authRef": {"name": "s", "key": "k"}}}}
    assert canary_validation.policy_body_error(auth) == (
        "spec.canary.prometheus.authRef is not allowed in a policy body — auth comes from the providerRef's "
        "cluster binding " + P
    )
    assert canary_validation.policy_body_error({"canary": {"steps": steps}}) == (
        "spec.canary.prometheus.providerRef is required when any step declares analysis — a policy must never "
        "ship a gate with no resolvable metrics source " + P
    )
    count = {"canary": {"steps": [{"capacity": 3, "traffic": 100}]}}
    assert (canary_validation.policy_body_error(count) or "").endswith(P)
    assert canary_validation.policy_body_error({"canary": {"steps": [{"capacity": "100%", "traffic": 90}]}}) == (
        "spec.canary final step traffic must be 100, got 90 (CanaryInvalid)"
    )
    ok = {"canary": {"steps": steps, "prometheus": {"providerRef": {"name": "cluster-prometheus"}}}}
    assert canary_validation.policy_body_error(ok) is None
    assert canary_validation.policy_body_error({"blueGreen": {}}) is None


class _Reader:
    """The cache as the policy webhook reads it: InferenceServices that name the policy."""

    def __init__(self, *services: dict[str, Any]) -> None:
        self.services = list(services)

    def list(self, res: Any, namespace: str | None = None, **_: Any) -> list[dict[str, Any]]:
        return [s for s in self.services if res.plural == "inferenceservices"]

    def get_or_none(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return None


def _policy_request(operation: str, spec: dict[str, Any], old: dict[str, Any] | None = None) -> Any:
    from ome.webhooks.handler import AdmissionRequest

    obj = {"metadata": {"name": "canary-strict", "namespace": "llama-demo"}, "spec": spec}
    old_obj = {"metadata": obj["metadata"], "spec": old} if old is not None else None
    return AdmissionRequest("u", "RolloutPolicy", operation, "llama-demo", "canary-strict", "alice", obj, old_obj)


def test_the_rollout_policy_webhook_applies_the_body_rules_and_warns_on_an_edit_in_use() -> None:
    from ome.webhooks import policy_deletion

    user = {"metadata": {"name": "llama-chat", "namespace": "llama-demo"}, "spec": {"rollout": {"groups": [
        {"components": ["engine"], "policyRef": {"name": "canary-strict", "progression": "canary"}}]}}}
    reader = _Reader(user)
    bad = {"canary": {"steps": STEPS, "prometheus": {"serverAddress": "http://p:9090"}}}
    denied = policy_deletion.validate_rollout_policy(_policy_request("CREATE", bad), reader)
    assert (denied.denial or "").startswith("spec.canary.prometheus.serverAddress is not allowed in a policy body")
    good = {"canary": {"steps": STEPS}}
    assert policy_deletion.validate_rollout_policy(_policy_request("CREATE", good), reader).denial is None
    edited = {"canary": {"steps": [{"capacity": "50%", "traffic": 50, "pause": {}}, STEPS[1]]}}
    outcome = policy_deletion.validate_rollout_policy(_policy_request("UPDATE", edited, good), reader)
    assert outcome.denial is None and len(outcome.warnings) == 1
    assert "next rollout" in outcome.warnings[0]
    kind_change = policy_deletion.validate_rollout_policy(
        _policy_request("UPDATE", {"rollingUpdate": {"maxSurge": "25%"}}, good), reader)
    assert (kind_change.denial or "").endswith("(RolloutPolicyInvalid)")
    unused = policy_deletion.validate_rollout_policy(
        _policy_request("UPDATE", {"rollingUpdate": {"maxSurge": "25%"}}, good), _Reader())
    assert unused.denial is None and not unused.warnings
