"""Runtime chain health in status on the real control plane (runtime-inheritance.md, "When a chain breaks").

The inheritance controller runs in-process as ome-manager wires it (no webhooks, so a broken chain can be
written, as a later parent deletion would leave it). Checked: `status.inheritanceChain` root first and
`InheritanceReady` `True`/`Resolved`; the parent deleted: `False`/`ParentNotFound`, the last chain kept, a
warning event on the runtime; the parent created again: `Resolved`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import pytest

from ome.api import resources
from ome.controllers.runtimeinheritance import setup as runtimeinheritance
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import create_when_served, eventually, in_process_manager, runtime_body

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")


def _child(namespace: str, parent: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime",
            "metadata": {"name": "sglang-llama-3-2-3b", "namespace": namespace,
                         "annotations": {"ome.io/inherit-from": parent}},
            "spec": {"disabled": False, "engineConfig": {"runner": {"name": "ome-container",
                                                                     "args": ["--tp-size=1"]}}}}


async def _health(client: Client, namespace: str) -> tuple[list[str] | None, str | None, str | None]:
    obj = await client.get(resources.SERVING_RUNTIMES, "sglang-llama-3-2-3b", namespace)
    status = obj.get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c["type"] == "InheritanceReady"), {})
    return status.get("inheritanceChain"), cond.get("status"), cond.get("reason")


async def test_chain_health_follows_the_parent(client: Client, namespace: str) -> None:
    profile = f"sglang-profile-{uuid.uuid4().hex[:6]}"
    body = runtime_body(profile)
    body["metadata"]["annotations"] = {"ome.io/runtime-profile": "true"}
    body["spec"]["disabled"] = True
    manager = in_process_manager(client)
    runtimeinheritance.add_to_manager(manager)
    task = asyncio.create_task(manager.run())
    try:
        await create_when_served(client, resources.CLUSTER_SERVING_RUNTIMES, body)
        await create_when_served(client, resources.SERVING_RUNTIMES, _child(namespace, profile), namespace)
        chain = [profile, "sglang-llama-3-2-3b"]

        async def is_(want: tuple[Any, ...]) -> bool:
            return await _health(client, namespace) == want

        await eventually(lambda: is_((chain, "True", "Resolved")), timeout=30)
        await client.delete(resources.CLUSTER_SERVING_RUNTIMES, profile)
        await eventually(lambda: is_((chain, "False", "ParentNotFound")), timeout=30)

        async def warning() -> bool:
            events, _ = await client.list(resources.EVENTS, namespace)
            return any(e.get("type") == "Warning" and e.get("reason") == "ParentNotFound"
                       and e["involvedObject"]["name"] == "sglang-llama-3-2-3b"
                       and e.get("message", "").startswith(f'inherit-from parent "{profile}" not found')
                       for e in events)

        await eventually(warning, timeout=30)
        body["metadata"].pop("resourceVersion", None)
        await client.create(resources.CLUSTER_SERVING_RUNTIMES, body)
        await eventually(lambda: is_((chain, "True", "Resolved")), timeout=30)
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)
        with contextlib.suppress(errors.NotFound):
            await client.delete(resources.CLUSTER_SERVING_RUNTIMES, profile)
