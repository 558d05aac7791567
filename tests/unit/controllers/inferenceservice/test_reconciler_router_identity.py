"""The router's ServiceAccount, Role and RoleBinding: created with the router, owned by the
InferenceService, left alone by a no-op reconcile, deleted when the router goes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import children
from ome.framework.reconcile import Request
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("fixed_resolution")
NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
REQ = Request("demo", "llama")
IDENTITY = (r.SERVICE_ACCOUNTS, r.ROLES, r.ROLE_BINDINGS)


async def test_router_identity_is_created_owned_kept_and_removed_with_the_router() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.INFERENCE_SERVICES, builders.isvc(router={"runner": {"image": "router:1"}}))
    reconciler = make_reconciler(world, recorder, now=NOW)
    await reconciler.reconcile(REQ)

    for res in IDENTITY:
        obj = world.get_or_none(res, "llama-router", "demo")
        assert obj is not None, res.kind
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-llama"
        assert obj["metadata"]["labels"]["component"] == "router"
    role = world.get_or_none(r.ROLES, "llama-router", "demo")
    assert role is not None and role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    ]
    router = world.get_or_none(r.DEPLOYMENTS, "llama-router", "demo")
    assert router is not None
    assert router["spec"]["template"]["spec"]["serviceAccountName"] == "llama-router"
    assert world.get_or_none(r.SERVICE_ACCOUNTS, "llama-engine", "demo") is None

    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []

    world.put(r.INFERENCE_SERVICES, builders.isvc())
    await reconciler.reconcile(REQ)
    for res in IDENTITY:
        assert world.get_or_none(res, "llama-router", "demo") is None, res.kind


def test_the_controller_watches_and_cleans_up_the_identity_kinds() -> None:
    assert set(IDENTITY) <= set(children.CHILD_RESOURCES)
