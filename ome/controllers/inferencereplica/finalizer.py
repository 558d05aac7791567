"""The teardown finalizer's writes (`ome.io/ir-teardown`, decided in `ome.omenative.teardown`).

A live replica carries the finalizer (put back if someone strips it). A deleted one lets go of it
once no owned pod is left on a live read, or at the teardown deadline; the reconciler plans its
Instances down to zero meanwhile.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import structlog

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.expectations import ControllerExpectations
from ome.omenative import instance_names as names
from ome.omenative import teardown

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.inferencereplica")


class Finalizer:
    def __init__(self, client: Client, expectations: ControllerExpectations) -> None:
        self._client = client
        self._expectations = expectations
        self.writes = 0
        """API writes made, for the reconciler's count."""

    async def ensure(self, replica: Obj) -> Obj:
        """The teardown finalizer, on every live replica (put back if someone strips it)."""
        if teardown.has_finalizer(replica):
            return replica
        meta = replica["metadata"]
        updated = await self._client.patch(
            INFERENCE_REPLICAS, meta["name"], teardown.add_patch(replica), meta["namespace"]
        )
        self.writes += 1
        return updated

    async def live_pods(self, replica: Mapping[str, Any]) -> list[Obj]:
        """Owned pods on a live read: the finalizer comes off only once the apiserver has none."""
        meta = replica["metadata"]
        selector = names.selector_labels(names.base_name(replica), replica["spec"]["component"])
        items, _ = await self._client.list(PODS, meta["namespace"], label_selector=selector)
        return [
            p
            for p in items
            if any(r.get("uid") == meta["uid"] for r in p["metadata"].get("ownerReferences") or [])
        ]

    async def remove(self, replica: Obj) -> None:
        meta = replica["metadata"]
        with contextlib.suppress(errors.NotFound):
            await self._client.patch(
                INFERENCE_REPLICAS, meta["name"], teardown.remove_patch(replica), meta["namespace"]
            )
            self.writes += 1
        self._expectations.delete((meta["namespace"], meta["name"]))
        log.info("teardown complete; finalizer removed", namespace=meta["namespace"], name=meta["name"])
