"""inferenceservice-config entries and their startup errors as the v1.3 docs word them (coverage rows F31,
G19, S11, S12). Each test quotes the page it checks."""

from __future__ import annotations

import pytest

from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg
from ome.framework import errors


def _error(data: dict[str, str]) -> str:
    with pytest.raises(cfg.ConfigError) as info:
        cfg.parse(data)
    return str(info.value)


def test_negative_min_ready_seconds_has_the_documented_message() -> None:
    """G19, pace-rollouts-with-min-ready-seconds.md: `invalid deploy config, minReadySeconds must be >= 0,
    got -30`, logged by the manager as `Failed to initialize deployment configuration`."""
    message = _error({"deploy": '{"minReadySeconds": -30}'})
    assert message == ("Failed to initialize deployment configuration: "
                       "invalid deploy config, minReadySeconds must be >= 0, got -30")
    assert cfg.parse({"deploy": '{"minReadySeconds": 0}'}).deploy.min_ready_seconds == 0


def test_unparsable_lifecycle_is_the_documented_startup_error() -> None:
    """S12, set-instance-readiness-deadlines.md: "A pod that failed to start logs `Failed to initialize lifecycle
    scale configuration`, with an error that contains `unable to parse lifecycle config json`. The `lifecycle`
    entry isn't valid JSON, or a duration in it is a bare number." """
    not_json = _error({"lifecycle": '{"instanceReadyTimeout": "30m",'})
    assert not_json.startswith("Failed to initialize lifecycle scale configuration: ")
    assert "unable to parse lifecycle config json" in not_json
    bare = _error({"lifecycle": '{"stuckPodGracePeriod": 60}'})
    assert bare.startswith("Failed to initialize lifecycle scale configuration: ")
    assert "unable to parse lifecycle config json" in bare and "stuckPodGracePeriod" in bare


@pytest.mark.parametrize(("entry", "key"), [
    ('{"scaleUpPodBatchSize": 0}', "scaleUpPodBatchSize"),
    ('{"scaleDownPodBatchSize": -4}', "scaleDownPodBatchSize"),
    ('{"scaleDownRequeueInterval": "0s"}', "scaleDownRequeueInterval"),
    ('{"scaleDownRequeueInterval": "-5s"}', "scaleDownRequeueInterval"),
    ('{"scaleDownRequeueInterval": "soon"}', "scaleDownRequeueInterval"),
    ('{"gangScheduleTimeout": "0s"}', "gangScheduleTimeout"),
    ('{"unschedulableGracePeriod": "15"}', "unschedulableGracePeriod"),
])
def test_bad_scale_budgets_and_intervals_stop_the_start(entry: str, key: str) -> None:
    """S11, tune-omenative-scale-batching: "The manager rejects a zero or negative budget, or a malformed, zero
    or negative interval, with `Failed to initialize lifecycle scale configuration` in its startup log." """
    message = _error({"lifecycle": entry})
    assert message.startswith("Failed to initialize lifecycle scale configuration: ")
    assert f"lifecycle.{key}" in message


def test_unschedulable_grace_period_reaches_the_rollout_settings() -> None:
    """S11: `unschedulableGracePeriod` | "Fails the attempt when the scheduler can't place a pod for this long"
    (chart 15m): read, not dropped as an unknown key."""
    config = cfg.parse({"lifecycle": '{"unschedulableGracePeriod": "15m", "stuckPodGracePeriod": "60s"}'})
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome").rollout_settings()
    assert (settings.unschedulable_grace, settings.stuck_grace) == (900, 60)


def test_documented_keys_not_acted_on_are_named() -> None:
    """S11: every documented lifecycle key is acted on or named in a startup warning (wiring.load_settings);
    gangScheduleTimeout and the pod batching keys are acted on now, so none is named."""
    config = cfg.parse({"lifecycle": '{"gangScheduleTimeout": {"min": "60s", "max": "600s"},'
                                     ' "scaleUpPodBatchSize": 100, "scaleDownPodBatchSize": 100,'
                                     ' "scaleDownRequeueInterval": "5s", "forceDelete": {"after": "10m"},'
                                     ' "instanceReadyTimeout": "30m"}'})
    assert cfg.LIFECYCLE_NOT_ACTED_ON == ()
    assert config.lifecycle.not_acted_on() == []


def test_omenative_status_block_uses_the_documented_keys() -> None:
    """F31, change-the-status-encoding.md: "`instanceStatusEncoding` | `ColumnarV2` ... `maxDecodedInstances` |
    `20000`"."""
    default = cfg.parse({}).omenative_status
    assert (default.instance_status_encoding, default.max_decoded_instances) == ("ColumnarV2", 20000)
    dense = cfg.parse({"omenativeStatus": '{"instanceStatusEncoding": "DenseV1", "maxDecodedInstances": 5000}'})
    assert (dense.omenative_status.status_encoding, dense.omenative_status.decode_bound) == ("DenseV1", 5000)
    unbounded = cfg.parse({"omenativeStatus": '{"instanceStatusEncoding": "DenseV1"}'}).omenative_status
    assert unbounded.max_decoded_instances is None and unbounded.decode_bound == 0


@pytest.mark.parametrize(("block", "problem"), [
    ('{"instanceStatusEncoding": "ColumnarV2"}',
     "maxDecodedInstances is required when instanceStatusEncoding is ColumnarV2"),
    ("{}", "instanceStatusEncoding is required"),
    ('{"instanceStatusEncoding": "SparseV3"}', 'instanceStatusEncoding "SparseV3" is not supported'),
    ('{"instanceStatusEncoding": "densev1"}', 'instanceStatusEncoding "densev1" is not supported'),
    ('{"instanceStatusEncoding": "DenseV1", "maxDecodedInstances": 0}',
     "maxDecodedInstances must be a positive integer, got 0"),
    ('{"instanceStatusEncoding": "DenseV1", "maxDecodedInstances": "100"}', "maxDecodedInstances must be a positive"),
    ('{"instanceStatusEncoding": 1}', "instanceStatusEncoding must be a string"),
    ('{"statusEncoding": "ColumnarV2"}', 'unknown field "statusEncoding"'),
    ('{"instanceStatusEncoding": "DenseV1", "instanceStatusEncoding": "ColumnarV2"}',
     'duplicate field "instanceStatusEncoding"'),
    ('{"instanceStatusEncoding": "DenseV1"} {}', "trailing data after the JSON object"),
    ('["DenseV1"]', "expected a JSON object"),
])
def test_bad_omenative_status_block_is_the_documented_startup_failure(block: str, problem: str) -> None:
    """F31: "`Failed to initialize OMENative status configuration` | The error ... starts with
    `invalid omenativeStatus config:`." """
    message = _error({"omenativeStatus": block})
    assert message.startswith("Failed to initialize OMENative status configuration: invalid omenativeStatus config: ")
    assert problem in message


def test_both_instance_controllers_get_the_same_bound() -> None:
    """F31: the InferenceReplica controller and the Instance rollout controller both write per-Instance rows;
    both follow `maxDecodedInstances`, so neither rewrites the other's list as columns."""
    config = cfg.parse({"omenativeStatus": '{"instanceStatusEncoding": "ColumnarV2", "maxDecodedInstances": 7}'})
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome")
    assert settings.replica_settings().max_decoded_instances == 7
    assert settings.rollout_settings().max_decoded_instances == 7
    assert settings.rollout_settings().columnar and settings.replica_settings().status_encoding == "ColumnarV2"


class _OneConfigMap:
    def __init__(self, data: dict[str, str] | None) -> None:
        self.data = data

    async def get(self, res: object, name: str, namespace: str | None = None) -> dict[str, object]:
        if self.data is None:
            raise errors.NotFound(404, "NotFound", f"{name} not found")
        return {"metadata": {"name": name}, "data": self.data}


@pytest.mark.parametrize(("data", "problem"), [
    ({"deploy": '{"defaultDeploymentMode": "RawDeployment"}'},
     'inferenceservice-config is missing the required "omenativeStatus" block'),
    ({"omenativeStatus": ""}, "invalid omenativeStatus config: expected a JSON object"),
])
async def test_manager_start_needs_the_omenative_status_block(data: dict[str, str], problem: str) -> None:
    """F31: "The manager reads the block only when it starts. It won't start when the block is missing or
    invalid" - "The error says `inferenceservice-config is missing the required "omenativeStatus" block`"."""
    with pytest.raises(cfg.ConfigError) as info:
        await cfg.load(_OneConfigMap(data), "ome", require_omenative_status=True)  # type: ignore[arg-type]
    assert str(info.value) == f"Failed to initialize OMENative status configuration: {problem}"
    if "deploy" in data:  # the controllers' later re-reads (no requirement) keep the defaults
        later = await cfg.load(_OneConfigMap(data), "ome")  # type: ignore[arg-type]
        assert later.omenative_status.max_decoded_instances == 20000
    later_without = await cfg.load(_OneConfigMap(None), "ome")  # type: ignore[arg-type]
    assert later_without.omenative_status.instance_status_encoding == "ColumnarV2"


async def test_manager_start_needs_the_configmap() -> None:
    """v1.3's manager reads the deploy entry first: without the ConfigMap it stops with
    `Failed to initialize deployment configuration` and `configmaps "inferenceservice-config" not found`."""
    with pytest.raises(cfg.ConfigError) as info:
        await cfg.load(_OneConfigMap(None), "ome", require_omenative_status=True)  # type: ignore[arg-type]
    assert str(info.value) == ('Failed to initialize deployment configuration: '
                               'configmaps "inferenceservice-config" not found')


def test_an_unknown_lifecycle_key_is_named_with_the_closest_documented_one() -> None:
    """S11: no lifecycle key is ignored silently; a typo is named at start with the key it resembles."""
    config = cfg.parse({"lifecycle": '{"stuckPodGracePeriods": "60s", "zzz": 1, "instanceReadyTimeout": "30m"}'})
    assert config.lifecycle.unknown_keys() == [("stuckPodGracePeriods", "stuckPodGracePeriod"), ("zzz", None)]


def test_the_chart_and_kustomize_lifecycle_defaults_have_no_unknown_key() -> None:
    import json
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[3]
    chart = yaml.safe_load((root / "config/chart/lifecycle.yaml").read_text())
    configmap = yaml.safe_load((root / "config/configmap/inferenceservice-config.yaml").read_text())
    for lifecycle in (json.dumps(chart), configmap["data"]["lifecycle"]):
        assert cfg.parse({"lifecycle": lifecycle}).lifecycle.unknown_keys() == []
