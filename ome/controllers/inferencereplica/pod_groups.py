"""The PodGroups (scheduling.x-k8s.io) of multi-pod Instances, for gang scheduling: created before an
Instance's pods, deleted with its row, and kept at the current `scheduleTimeoutSeconds`
(`ome.omenative.gang_timeout`). Both the InferenceReplica and the Instance rollout reconcilers write
them, each through its own `PodGroups`; the CRD is optional, so whether it is served is looked up once,
when a group is first needed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Final

from ome.api import resources
from ome.controllers.inferencereplica import create_holds
from ome.framework import errors
from ome.framework.client import Client
from ome.omenative import instance_names as names
from ome.omenative import rollout_gang
from ome.omenative.gang_timeout import timeout_patches

Obj = dict[str, Any]

PODGROUPS: Final = resources.register(
    resources.Resource(
        "scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", True, frozenset({"status"})
    )
)


class PodGroups:
    def __init__(self, client: Client) -> None:
        self._client = client
        self.served: bool | None = None
        """Whether the PodGroup CRD is served; None until first looked up."""
        self._timeouts: dict[tuple[str, str], tuple[str, Any]] = {}
        """(uid, generation) of each replica whose PodGroups carry this process's gang schedule timeout."""
        self.writes = 0
        """API writes made, for the reconciler's count."""

    async def gang_scheduling(self) -> bool:
        if self.served is None:
            self.served = await self._client.is_served(PODGROUPS)
        return self.served

    async def ensure(
        self, replica: Obj, base: str, component: str, gangs: Iterable[tuple[int, int]], timeout: int | None
    ) -> AsyncIterator[int]:
        """The group of each (Instance index, member count), created when missing (one that exists is
        kept). Yields each Instance whose group name a PodGroup being deleted still holds, as it is
        found: its pods wait (`PodGroupTerminating`)."""
        for index, members in gangs:
            body = rollout_gang.pod_group(replica, base, component, index, members, timeout)
            outcome = await create_holds.ensure_pod_group(self._client, PODGROUPS, body)
            if outcome == create_holds.CREATED:
                self.writes += 1
            elif outcome == create_holds.TERMINATING:
                yield index

    async def delete(self, namespace: str, base: str, component: str, index: int) -> None:
        with contextlib.suppress(errors.NotFound):
            await self._client.delete(PODGROUPS, names.pod_group_name(base, component, index), namespace)
            self.writes += 1

    async def retime(
        self, key: tuple[str, str], replica: Mapping[str, Any], base: str, component: str, want: int | None
    ) -> None:
        """Existing PodGroups take the current scheduleTimeoutSeconds (gang-scheduling.md: "OME updates
        existing PodGroups to the new timeout"). The setting is read at start and the ready timeout is in
        the spec, so one list per replica generation in this process is enough."""
        meta = replica["metadata"]
        mark = (meta["uid"], meta.get("generation"))
        if self._timeouts.get(key) == mark:
            return
        if await self.gang_scheduling():
            selector = names.selector_labels(base, component)
            groups, _ = await self._client.list(PODGROUPS, meta["namespace"], label_selector=selector)
            for name, patch in timeout_patches(groups, want):
                with contextlib.suppress(errors.NotFound):
                    await self._client.patch(PODGROUPS, name, patch, meta["namespace"])
                    self.writes += 1
        self._timeouts[key] = mark

    def forget(self, key: tuple[str, str]) -> None:
        self._timeouts.pop(key, None)
