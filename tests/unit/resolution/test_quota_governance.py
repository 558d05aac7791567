"""`--accelerator-resources` (reference/operate-ome/controller-manager-flags.md, "Controllers"): "The
comma-separated resource names that send a Component through quota admission when its pods request one", and
`kueue.x-k8s.io/queue-name` (labels-and-annotations.md): "For OMENative, OME leaves it off the pods of a
component that requests none of the resources ... An empty list keeps it on every component."."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ome.cmd import manager
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import components, omenative, quota_governance
from tests.unit.resolution import builders

Obj = dict[str, Any]
QUEUE = "kueue.x-k8s.io/queue-name"
GPU_RUNNER = {"runner": {"name": "ome-container", "image": "e:1",
                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}}
ROUTER_RUNNER = {"runner": {"name": "router", "image": "r:1", "resources": {"requests": {"cpu": "1"}}}}


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    before = quota_governance.QUOTA.names
    yield
    quota_governance.QUOTA.names = before


def template_labels(names: tuple[str, ...] | None) -> dict[str, dict[str, str]]:
    quota_governance.QUOTA.names = names
    isvc = builders.isvc(labels={QUEUE: "team-a"}, engine={"minReplicas": 1}, router={"minReplicas": 1},
                         annotations={"ome.io/deploymentMode": "OMENative"})
    runtime = builders.runtime(engine_config=GPU_RUNNER, router_config=ROUTER_RUNNER)
    out = {}
    for plan in components.build_plans(isvc, runtime, None, InferenceServiceConfig()):
        [runner] = omenative.runners(plan)
        out[plan.component] = runner["template"]["metadata"]["labels"]
    return out


def test_a_component_requesting_no_listed_resource_loses_the_queue_label() -> None:
    labels = template_labels(quota_governance.parse_resources("nvidia.com/gpu,google.com/tpu"))
    assert labels["engine"][QUEUE] == "team-a"
    assert QUEUE not in labels["router"]


def test_without_the_flag_every_component_keeps_it() -> None:
    labels = template_labels(None)
    assert labels["engine"][QUEUE] == labels["router"][QUEUE] == "team-a"


def test_the_flag_parses_a_comma_separated_list() -> None:
    args = manager.parse_args(["--accelerator-resources=nvidia.com/gpu,google.com/tpu"])
    assert args.accelerator_resources == ("nvidia.com/gpu", "google.com/tpu")
    assert manager.parse_args([]).accelerator_resources is None
