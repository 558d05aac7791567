"""status.components.<c>.scaleTargetRef names what an autoscaler scales, for every mode that has one.

The InferenceService controller reports it, and the autoscaler's `autoscaler` entry beside it
(tests/unit/controllers/inferenceservice/test_autoscaler_entries.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from ome.api import resources as r
from ome.framework.reconcile import Request
from tests.unit.controllers.inferenceservice.fakes import (
    FakeRecorder,
    FakeWorld,
    fix_resolution,
    make_reconciler,
)
from tests.unit.resolution import builders

Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def resolvers(monkeypatch: pytest.MonkeyPatch) -> None:
    fix_resolution(monkeypatch)


@pytest.mark.parametrize(
    ("spec", "ref"),
    [
        ({}, {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama-engine"}),
        ({"deploymentMode": "OMENative"},
         {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "name": "llama-engine"}),
    ],
    ids=["rawdeployment", "omenative"],
)
async def test_every_component_reports_its_scale_target(spec: Obj, ref: Obj) -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc(**spec))
    reconciler = make_reconciler(world, FakeRecorder())
    await reconciler.reconcile(Request("demo", "llama"))
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None
    assert isvc["status"]["components"]["engine"]["scaleTargetRef"] == ref
    world.writes.clear()
    await reconciler.reconcile(Request("demo", "llama"))
    assert world.writes == []  # reported once; an unchanged world writes nothing
