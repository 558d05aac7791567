"""Every documented InferenceService rule, through the AdmissionReview handler, with exact messages."""

from __future__ import annotations

from typing import Any

import pytest

from ome.api import resources
from ome.webhooks import registry
from tests.unit.resolution.fake_reader import FakeReader, entry, isvc, model, runtime
from tests.unit.webhooks.reviews import call, review

CBM, CSR = resources.CLUSTER_BASE_MODELS, resources.CLUSTER_SERVING_RUNTIMES
PATH = "/validate-ome-io-v1beta1-inferenceservice"


def world(*extra: Any) -> FakeReader:
    return FakeReader((CBM, model("llama")), (CSR, runtime("vllm-llama")), *extra)


def check(svc: dict, reader: FakeReader | None = None, **kw: Any) -> dict:
    handler = registry.handlers(reader or world())[PATH]
    return call(handler, review("InferenceService", svc, **kw))


def denial(svc: dict, reader: FakeReader | None = None, **kw: Any) -> str:
    answer = check(svc, reader, **kw)
    assert answer["allowed"] is False, answer
    assert answer["status"]["code"] == 403
    return str(answer["status"]["message"])


def warnings(svc: dict, reader: FakeReader | None = None, **kw: Any) -> list[str]:
    answer = check(svc, reader, **kw)
    assert answer["allowed"] is True, answer
    return list(answer.get("warnings", []))


def test_seed_minimal_service_warns_which_runtime_is_auto_selected() -> None:
    assert warnings(isvc(model={"name": "llama"}, engine={})) == [
        "Runtime vllm-llama will be auto-selected for model llama"
    ]


def test_neither_model_nor_runtime_is_rejected() -> None:
    assert denial(isvc(engine={})) == "at least one of spec.model or spec.runtime must be set"


def test_empty_model_name_counts_as_unset() -> None:
    assert (
        denial(isvc(model={"name": ""}, engine={}))
        == "at least one of spec.model or spec.runtime must be set"
    )


def test_missing_model_message_starts_as_documented() -> None:
    message = denial(isvc(model={"name": "nope"}, engine={}))
    assert message.startswith('referenced model "nope" not found in namespace "demo"')


def test_base_model_of_same_name_does_not_satisfy_default_kind() -> None:
    reader = FakeReader(
        (resources.BASE_MODELS, model("llama", namespace="demo")), (CSR, runtime("vllm-llama"))
    )
    assert denial(isvc(model={"name": "llama"}, engine={}), reader).startswith(
        'referenced model "llama" not found'
    )


def test_no_supporting_runtime_prefix() -> None:
    reader = FakeReader((CBM, model("llama")), (CSR, runtime("rt", entry(fmt="gguf"))))
    assert denial(isvc(model={"name": "llama"}, engine={}), reader).startswith(
        "no supporting runtime found for model llama"
    )


def test_engine_with_own_image_skips_auto_selection() -> None:
    reader = FakeReader((CBM, model("llama")))
    assert warnings(isvc(model={"name": "llama"}, engine={"runner": {"image": "x"}}), reader) == []


def test_model_is_checked_even_without_engine() -> None:
    assert denial(isvc(model={"name": "nope"})).startswith('referenced model "nope"')


def test_disabled_model_is_rejected() -> None:
    reader = FakeReader((CBM, model("llama", disabled=True)), (CSR, runtime("vllm-llama")))
    assert denial(isvc(model={"name": "llama"}, engine={}), reader) == "model llama is disabled"


def test_named_runtime_without_declared_support_is_admitted_with_warning() -> None:
    reader = FakeReader((CBM, model("llama")), (CSR, runtime("other", entry(arch="MistralForCausalLM"))))
    found = warnings(isvc(model={"name": "llama"}, runtime={"name": "other"}, engine={}), reader)
    assert len(found) == 1 and found[0].startswith(
        'runtime "other" does not declare support for model "llama"'
    )


def test_named_runtime_that_does_not_exist_is_rejected() -> None:
    message = denial(isvc(model={"name": "llama"}, runtime={"name": "ghost"}, engine={}))
    assert message == "runtime ghost not found in namespace demo or at cluster scope"


def test_runtime_only_service_with_missing_runtime_is_left_to_the_controller() -> None:
    assert warnings(isvc(runtime={"name": "ghost"}, engine={})) == []


def test_runtime_only_service_with_disabled_runtime_is_rejected() -> None:
    reader = FakeReader((CSR, runtime("rt", disabled=True)))
    assert denial(isvc(runtime={"name": "rt"}, engine={}), reader) == "cluster-scoped runtime rt is disabled"


@pytest.mark.parametrize("mode", ["OMENative", "RawDeployment"])
def test_deployment_mode_accepts_two_values(mode: str) -> None:
    assert check(isvc(model={"name": "llama"}, deploymentMode=mode, engine={"runner": {"image": "x"}}))[
        "allowed"
    ]


@pytest.mark.parametrize("mode", ["MultiNode", "omenative", "", "VirtualDeployment"])
def test_deployment_mode_rejects_others(mode: str) -> None:
    assert "spec.deploymentMode" in denial(isvc(model={"name": "llama"}, deploymentMode=mode, engine={}))


def test_seed_mode_combination_message() -> None:
    svc = isvc(
        model={"name": "llama"}, engine={"annotations": {"ome.io/deploymentMode": "OMENative"}}, decoder={}
    )
    assert denial(svc) == (
        'InvalidDeploymentModeCombination: engine deploymentMode="OMENative" does not match decoder '
        'deploymentMode=""; when either is OMENative, both must use the same value'
    )


@pytest.mark.parametrize(
    ("engine_ann", "decoder_ann", "spec_mode"),
    [
        (None, None, "OMENative"),
        ("OMENative", "OMENative", None),
        ("RawDeployment", None, None),
        (None, None, None),
    ],
    ids=["spec-mode-both", "both-annotated", "raw-vs-unset", "nothing"],
)
def test_mode_combinations_that_pass(
    engine_ann: str | None, decoder_ann: str | None, spec_mode: str | None
) -> None:
    def comp(ann: str | None) -> dict:
        return {"runner": {"image": "x"}, **({"annotations": {"ome.io/deploymentMode": ann}} if ann else {})}

    extra = {"deploymentMode": spec_mode} if spec_mode else {}
    assert check(isvc(model={"name": "llama"}, engine=comp(engine_ann), decoder=comp(decoder_ann), **extra))[
        "allowed"
    ]


def test_seed_deployment_strategy_warning() -> None:
    svc = isvc(
        model={"name": "llama"},
        deploymentMode="OMENative",
        engine={"runner": {"image": "x"}, "deploymentStrategy": {"type": "Recreate"}},
    )
    assert warnings(svc) == [
        'engine.deploymentStrategy is set but deploymentMode is "OMENative"; deploymentStrategy applies only to '
        "RawDeployment and is ignored here — use engine.lifecycle.updateStrategy.rollingUpdate for rollout pacing"
    ]


def test_no_deployment_strategy_warning_on_raw_deployment() -> None:
    svc = isvc(
        model={"name": "llama"}, engine={"runner": {"image": "x"}, "deploymentStrategy": {"type": "Recreate"}}
    )
    assert warnings(svc) == []


@pytest.mark.parametrize(
    ("engine", "needle"),
    [
        ({"leader": {}}, "LeaderRequiresWorker"),
        ({"worker": {}}, "WorkerRequiresLeader"),
        ({"leader": {}, "worker": {"size": 0}}, "WorkerSizeMustBePositive"),
    ],
)
def test_leader_worker_pairing(engine: dict, needle: str) -> None:
    message = denial(isvc(model={"name": "llama"}, engine=engine))
    assert message.startswith("InvalidLeaderWorkerPairing") and needle in message


def test_leader_and_worker_with_unset_size_pass() -> None:
    engine = {
        "leader": {"runner": {"name": "r", "image": "x"}},
        "worker": {"runner": {"name": "r", "image": "x"}},
    }
    assert check(isvc(model={"name": "llama"}, engine=engine))["allowed"]


@pytest.mark.parametrize("role", ["leader", "worker"])
def test_runner_under_leader_or_worker_needs_a_name(role: str) -> None:
    engine = {"leader": {}, "worker": {}, role: {"runner": {"image": "x"}}}
    assert denial(isvc(model={"name": "llama"}, engine=engine)).startswith(
        f"spec.engine.{role}.runner.name is required"
    )


def group(*components: str, **kw: Any) -> dict:
    return {"rollout": {"groups": [{"components": list(components), **kw}]}}


def test_rollout_group_requires_omenative_in_the_service() -> None:
    svc = isvc(model={"name": "llama"}, engine={"runner": {"image": "x"}}, **group("engine", blueGreen={}))
    assert denial(svc).endswith("(CoordinationRequiresOMENative)")


ONE_STEP_CANARY = {"steps": [{"capacity": "100%", "traffic": 100}]}  # an empty ladder is CanaryInvalid


def test_canary_group_requires_omenative_in_the_service() -> None:
    svc = isvc(
        model={"name": "llama"}, engine={"runner": {"image": "x"}}, **group("engine", canary=ONE_STEP_CANARY)
    )
    assert denial(svc).endswith("(CanaryRequiresOMENative)")


def test_leader_worker_does_not_count_as_declared_omenative() -> None:
    engine = {
        "leader": {"runner": {"name": "r", "image": "x"}},
        "worker": {"runner": {"name": "r", "image": "x"}},
    }
    svc = isvc(model={"name": "llama"}, engine=engine, **group("engine", blueGreen={}))
    assert denial(svc).endswith("(CoordinationRequiresOMENative)")


def test_rollout_group_with_omenative_passes() -> None:
    svc = isvc(
        model={"name": "llama"},
        deploymentMode="OMENative",
        engine={"runner": {"image": "x"}},
        **group("engine", canary=ONE_STEP_CANARY),
    )
    assert check(svc)["allowed"]


@pytest.mark.parametrize("mode", ["Proportional", "Pinned"])
def test_unimplemented_scaling_modes(mode: str) -> None:
    assert denial(isvc(model={"name": "llama"}, scalingPolicy={"mode": mode})).endswith(
        "(ScalingModeNotImplemented)"
    )


def test_scaling_policy_ratchets_on_update() -> None:
    old = isvc(model={"name": "llama"}, scalingPolicy={"mode": "Pinned"})
    new = isvc(model={"name": "llama"}, scalingPolicy={"mode": "Pinned"}, engine={"runner": {"image": "x"}})
    assert check(new, old=old, operation="UPDATE")["allowed"]


def budgets(surge: Any, unavailable: Any) -> dict:
    rolling = {k: v for k, v in (("maxSurge", surge), ("maxUnavailable", unavailable)) if v is not None}
    return {"runner": {"image": "x"}, "lifecycle": {"updateStrategy": {"rollingUpdate": rolling}}}


@pytest.mark.parametrize(("surge", "unavailable"), [(0, 0), ("0%", 0), ("0%", "0%")])
def test_both_update_budgets_zero_rejected(surge: Any, unavailable: Any) -> None:
    assert denial(isvc(model={"name": "llama"}, engine=budgets(surge, unavailable))).endswith(
        "(RollingUpdateZeroBudget)"
    )


@pytest.mark.parametrize(("surge", "unavailable"), [(0, None), (0, 1), ("0%", "1%"), (None, None)])
def test_one_budget_above_zero_or_unset_passes(surge: Any, unavailable: Any) -> None:
    assert check(isvc(model={"name": "llama"}, engine=budgets(surge, unavailable)))["allowed"]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (-1, "InvalidRollingUpdateInteger"),
        ("101%", "InvalidRollingUpdatePercent"),
        ("ten", "InvalidRollingUpdatePercent"),
    ],
)
def test_budget_values_are_checked(value: Any, reason: str) -> None:
    assert denial(isvc(model={"name": "llama"}, engine=budgets(value, 1))).endswith(f"({reason})")


def test_group_rolling_update_with_zero_budgets_rejected() -> None:
    svc = isvc(
        model={"name": "llama"},
        deploymentMode="OMENative",
        engine={"runner": {"image": "x"}},
        **group("engine", rollingUpdate={"maxSurge": 0, "maxUnavailable": "0%"}),
    )
    assert denial(svc).endswith("(ZeroBudgetPacingUnstartable)")


@pytest.mark.parametrize(
    ("ext", "needle"),
    [
        ({"minReplicas": -1}, "spec.engine.minReplicas must be >= 0"),
        ({"maxReplicas": -2}, "spec.engine.maxReplicas must be >= 1"),
        ({"minReplicas": 3, "maxReplicas": 2}, "spec.engine.minReplicas (3) must be <= maxReplicas (2)"),
    ],
)
def test_replica_bounds(ext: dict, needle: str) -> None:
    """The reason is v1.3's whole: the documented `must be <= maxReplicas` included."""
    assert denial(isvc(model={"name": "llama"}, engine={"runner": {"image": "x"}, **ext})).endswith(needle)


def test_max_replicas_zero_means_unset() -> None:
    assert check(
        isvc(model={"name": "llama"}, engine={"runner": {"image": "x"}, "minReplicas": 2, "maxReplicas": 0})
    )["allowed"]


def test_decoder_without_engine_is_admitted() -> None:
    """inference-services.md §Components: without an engine "OME creates no workload and records a
    `DeploymentModeError` event" (the controller's answer, not a webhook denial)."""
    assert check(isvc(model={"name": "llama"}, decoder={}))["allowed"]


def test_invalid_name_is_rejected() -> None:
    assert "is invalid" in denial(isvc(name="Bad.Name", model={"name": "llama"}))


def test_update_of_a_deleting_service_is_always_admitted() -> None:
    old = isvc(engine={})
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert check(isvc(engine={}), old=old, operation="UPDATE")["allowed"]


def test_delete_is_admitted() -> None:
    assert check(None, old=isvc(engine={}), operation="DELETE")["allowed"]
