"""rollout-groups.md, What admission rejects: every reason, through the AdmissionReview handler, with the
exact message (B10 and B12)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ome.webhooks import rollout_group_validation as rgv
from tests.unit.resolution.fake_reader import isvc
from tests.unit.webhooks.test_inferenceservice_validation import check, denial, warnings

PD = {"engine": {"runner": {"image": "e:1"}}, "decoder": {"runner": {"image": "d:1"}}, "router": {}}


def svc(groups: list[dict[str, Any]], *, components: dict[str, Any] | None = None, **rollout: Any) -> dict:
    return isvc(model={"name": "llama"}, deploymentMode="OMENative", **copy.deepcopy(components or PD),
                rollout={"groups": groups, **rollout})


# -- B10: components ------------------------------------------------------------------------------------


def test_invalid_component() -> None:
    assert denial(svc([{"components": ["predictor"]}])) == (
        "spec.rollout.groups[0]: 'predictor' is not engine, decoder or router (InvalidComponentInCoordinationGroup)")


def test_orphan_component() -> None:
    components = {"engine": {"runner": {"image": "e:1"}}}
    assert denial(svc([{"components": ["engine", "decoder"]}], components=components)) == (
        "spec.rollout.groups[0]: component 'decoder' is not declared on the InferenceService "
        "(OrphanCoordinationGroup)")


def test_duplicate_component() -> None:
    message = denial(svc([{"components": ["engine"]}, {"components": ["engine"]}]))
    assert message == ("spec.rollout.groups[1]: component 'engine' is already in spec.rollout.groups[0] "
                       "(DuplicateComponentInCoordinationGroups)")


# -- B12: promises no progression keeps ---------------------------------------------------------------------


def test_order_not_honored() -> None:
    assert denial(svc([{"components": ["engine", "decoder"], "order": ["decoder", "engine"]}])) == (
        "spec.rollout.groups[0]: order is not applied by any progression — the Components in a group advance "
        "together; to roll Components one at a time, declare one single-Component blueGreen group per "
        "Component, in the desired sequence (OrderNotHonored)")


def test_group_ordering_not_honored_unless_concurrent() -> None:
    groups = [{"components": ["engine", "decoder"]}, {"components": ["router"]}]
    assert denial(svc(groups)) == (
        "spec.rollout.groups: groups[] is ordered (group N completes before group N+1 begins), but that is "
        "enforced only for a run of single-Component blueGreen groups; groups[0] is a multi-Component group, "
        "so the groups would run concurrently and the declared order would be dropped; set "
        "spec.rollout.groupOrdering: Concurrent to run them side by side (GroupOrderingNotHonored)")
    assert check(svc(groups, groupOrdering="Concurrent"))["allowed"]
    rolling = [{"components": ["decoder"], "rollingUpdate": {"maxSurge": 1}}, {"components": ["engine"]}]
    assert "groups[0] is a rollingUpdate group" in denial(svc(rolling))
    # A sequence alone, or one group, is fine.
    assert check(svc([{"components": ["decoder"]}, {"components": ["engine"]}]))["allowed"]
    assert check(svc([{"components": ["engine", "decoder", "router"]}]))["allowed"]


def test_soak_not_honored() -> None:
    assert denial(svc([{"components": ["engine", "decoder"], "soak": "5m"}])) == (
        "spec.rollout.groups[0]: soak is honored only when the rollout is a sequence of single-Component groups "
        "(which roll one-at-a-time); this rollout runs groups concurrently, so the soak would be dropped "
        "(SoakNotHonored)")
    canary = {"components": ["router"], "soak": "1m", "canary": {"steps": [{"capacity": "100%", "traffic": 100}]}}
    assert rgv.soak_error(svc([canary])["spec"]) == (
        "spec.rollout.groups[0]: soak is not honored on a canary group (the canary engine does not gate on it) "
        "(SoakNotHonored)")
    assert check(svc([{"components": ["decoder"], "soak": "10m"}, {"components": ["engine"]}]))["allowed"]


def test_policy_ref_while_rollout_policy_is_off() -> None:
    group = {"components": ["engine", "decoder"], "policyRef": {"name": "guarded", "progression": "blueGreen"}}
    assert denial(svc([group])) == (
        "spec.rollout.groups[0].policyRef: this cluster does not have the rollout policy feature enabled, so "
        "the ref would silently no-op — inline the progression instead (RolloutPolicyRefUnsupported)")
    assert rgv.policy_ref_error(svc([group])["spec"], enabled=True) is None


def update(old: dict, new: dict) -> dict:
    new["metadata"]["generation"] = 2
    return check(new, old=old, operation="UPDATE")


def test_rolling_update_lockstep() -> None:
    groups = [{"components": ["engine", "decoder"], "rollingUpdate": {"maxSurge": 1}}]
    old = svc(groups)
    new = svc(groups)
    new["spec"]["engine"]["runner"]["image"] = "e:2"
    answer = update(old, new)
    assert answer["allowed"] is False and answer["status"]["message"] == (
        "spec.rollout: rollingUpdate group requires all components to bump together; changed [engine] but not "
        "[decoder] (RollingUpdateLockstepViolation)")
    new["spec"]["decoder"]["runner"]["image"] = "d:2"
    assert update(old, new)["allowed"]
    scaled = svc(groups)
    scaled["spec"]["engine"]["minReplicas"] = 3  # a count is not a pod setting
    assert update(old, scaled)["allowed"]


@pytest.mark.parametrize("groups, allowed", [
    ([{"components": ["engine", "decoder"], "blueGreen": {}}], True),
    ([{"components": ["engine", "decoder"], "rollingUpdate": {"maxSurge": 1}}], False),
    ([{"components": ["decoder"]}, {"components": ["engine"]}], False),
    ([], False),
])
def test_pairing_protocol_change(groups: list[dict[str, Any]], allowed: bool) -> None:
    old = svc(groups, pairingProtocol="kv-v1")
    new = svc(groups, pairingProtocol="kv-v2")
    answer = update(old, new)
    assert answer["allowed"] is allowed, answer
    if not allowed:
        assert answer["status"]["message"] == (
            'spec.rollout.pairingProtocol: changing the pairing protocol ("kv-v1" -> "kv-v2") requires engine '
            "and decoder to roll as one blueGreen or canary group; declare a spec.rollout group listing both "
            "components (rollingUpdate groups and independent rollouts cannot keep a pairable engine+decoder "
            "pair serving through the transition) (PairingProtocolChangeUncoordinated)")
    # Setting a token the first time, or clearing it, is always accepted.
    assert update(svc(groups), svc(groups, pairingProtocol="kv-v1"))["allowed"]
    assert update(svc(groups, pairingProtocol="kv-v1"), svc(groups))["allowed"]


def test_ratio_tolerance_too_high_warns() -> None:
    group = {"components": ["engine", "decoder"], "rollingUpdate": {"maxSurge": 1}, "maintainRatio": {"tolerance": 60}}
    assert warnings(svc([group]))[-1] == (
        "spec.rollout.groups[0].maintainRatio.tolerance=60 effectively disables ratio enforcement (>50) "
        "(RatioToleranceTooHigh)")
    group["maintainRatio"] = {"tolerance": 50}
    assert not any("RatioToleranceTooHigh" in w for w in warnings(svc([group])))


def test_an_update_leaving_the_rollout_alone_keeps_a_stored_shape() -> None:
    groups = [{"components": ["engine", "decoder"], "soak": "5m"}]
    old, new = svc(groups), svc(groups)
    new["spec"]["engine"]["minReplicas"] = 2
    assert update(old, new)["allowed"]
