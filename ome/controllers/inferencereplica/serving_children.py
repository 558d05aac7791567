"""The replica's serving children: its headless Service, each live revision's Services, and its
PodMonitor (when the CRD was served at start).

A child is POSTed when missing and applied when it drifts (framework/post_creates.py); a ClusterIP
Service's create may run beside the pass (framework/write_behind.py). A revision's Services go when no
Instance runs that revision any more.
"""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine, Mapping
from functools import partial
from typing import Any

from ome.api import resources
from ome.api.resources import SERVICES
from ome.controllers import drift
from ome.controllers.inferencereplica.owned import owned_children
from ome.framework import errors, together
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.post_creates import USER_AGENT_MANAGER, PostCreates
from ome.framework.reconcile import Request
from ome.framework.write_behind import WriteBehind
from ome.omenative import instance_names as names
from ome.omenative import podmonitor, services
from ome.omenative.revisions import RevisionData
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]


class ServingChildren:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        settings: InferenceReplicaSettings,
        write_behind: WriteBehind | None,
    ) -> None:
        self._client = client
        # Its Services were POSTed without a field manager before (recorded as the user agent's name).
        self._posts = PostCreates(client, also=(USER_AGENT_MANAGER,))
        self._cache = cache
        self._settings = settings
        self._behind = write_behind
        self.writes = 0
        """API writes made, for the reconciler's count."""

    async def ensure_services(
        self, replica: Obj, data: RevisionData, digest: str, known: Mapping[str, RevisionData],
        rows: list[Obj],
    ) -> None:
        """The replica's headless Service and each live revision's Services (`digest`: the spec's)."""
        live = {names.hash_of_revision(r.get("runningRevision") or "") for r in rows}
        live.add(digest)
        desired = [services.headless_service(replica, data)]
        for revision in sorted(live & set(known)):
            desired += services.revision_services(replica, revision, known[revision])
        existing = {s["metadata"]["name"]: s for s in owned_children(self._cache, SERVICES, replica)}
        writes: list[Coroutine[Any, Any, None]] = []
        ns = replica["metadata"]["namespace"]
        for body in map(drift.stamp, desired):
            current = existing.pop(body["metadata"]["name"], None)
            if current is None:
                if not self._create_behind(Request(ns, replica["metadata"]["name"]), body):
                    writes.append(self._create_service(body))
            elif drift.reasons(body, current):
                writes.append(self._apply_owned(SERVICES, body, current))
        for name, stale in existing.items():
            if (stale["metadata"].get("labels") or {}).get(services.REVISION_SERVICE_LABEL):
                writes.append(self._delete(SERVICES, name, replica["metadata"]["namespace"]))
        await together.all_settled(*writes)  # each Service on its own: one round trip for all of them

    async def ensure_pod_monitor(self, replica: Obj, data: RevisionData) -> None:
        """The replica's PodMonitor, when the CRD was served at start; a same-named PodMonitor that
        another owner holds is left alone."""
        if not self._settings.pod_monitor_served:
            return
        body = drift.stamp(podmonitor.pod_monitor(replica, data, self._settings))
        existing = {
            m["metadata"]["name"]: m for m in owned_children(self._cache, podmonitor.POD_MONITORS, replica)
        }
        current = existing.get(body["metadata"]["name"])
        if current is None:
            await self._create_owned(podmonitor.POD_MONITORS, body)
        elif drift.reasons(body, current):
            await self._apply_owned(podmonitor.POD_MONITORS, body, current)

    def _create_behind(self, owner: Request, body: Obj) -> bool:
        """Whether the Service's create is on its way beside this pass (framework/write_behind.py): a
        ClusterIP create waits for the apiserver's allocator, and the pass need not."""
        if self._behind is None:
            return False
        key = (SERVICES.name, body["metadata"]["namespace"], body["metadata"]["name"])
        if self._behind.in_flight(key) is not None:
            return True  # its name carries its revision: the content in flight is the content wanted
        # False (inline) when there is no room, or its last create here failed: its error reaches this pass.
        create = partial(self._create_owned, SERVICES, body)
        return self._behind.start(key, drift.desired_hash(body), owner, create)

    async def _create_service(self, body: Obj) -> None:
        await self._create_owned(SERVICES, body)
        if self._behind is not None:
            self._behind.clear((SERVICES.name, body["metadata"]["namespace"], body["metadata"]["name"]))

    async def _create_owned(self, res: resources.Resource, body: Obj) -> None:
        """POST a child this controller converges by apply later (framework/post_creates.py); one that
        exists already is left to the next pass's comparison."""
        if await self._posts.create(res, body, self._settings.serving_gate_controller) is not None:
            self.writes += 1

    async def _apply_owned(self, res: resources.Resource, body: Obj, current: Mapping[str, Any]) -> None:
        """Apply a drifted or changed child, its created fields moved to the apply entry first."""
        await self._posts.apply(res, body, current, self._settings.serving_gate_controller)
        self.writes += 1

    async def _delete(self, res: resources.Resource, name: str, ns: str) -> None:
        with contextlib.suppress(errors.NotFound):
            await self._client.delete(res, name, ns)
            self.writes += 1
