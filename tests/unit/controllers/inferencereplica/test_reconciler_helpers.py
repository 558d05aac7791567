from __future__ import annotations

import pytest

from ome.config.durations import parse_duration
from ome.omenative.replica_spec import desired_replicas, min_ready_seconds
from tests.unit.omenative.builders import replica


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800.0), ("1h30m", 5400.0), ("90s", 90.0), ("0", 0.0), ("1.5h", 5400.0), (None, None),
     ("soon", None), ("30", None), ("5d", None)],
)
def test_instance_ready_timeout_durations(text: str | None, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_no_replica_scales_to_zero_standalone_or_projected() -> None:
    standalone = replica("pool", replicas=0)
    del standalone["spec"]["parentRef"]
    assert desired_replicas(standalone) == 1
    assert desired_replicas(replica(replicas=0)) == 1
    assert desired_replicas(replica(replicas=None)) == 1
    assert desired_replicas(replica(replicas=3)) == 3


def test_min_ready_seconds_from_spec_then_lifecycle() -> None:
    assert min_ready_seconds(replica(minReadySeconds=5, lifecycle={"minReadySeconds": 9})) == 5
    assert min_ready_seconds(replica(lifecycle={"minReadySeconds": 9})) == 9
