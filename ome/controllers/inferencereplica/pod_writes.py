"""The InferenceReplica reconciler's pod writes: a plan's creations, deletions and serving-gate writes.

Pod creations and deletions are covered by expectations, since the pod cache lags our own writes and a
second pass must not create or delete again. As in kube-controller-manager, every write of a batch is
awaited (creations in slow-start batches of 1, 2, 4, ... that stop at the first failing batch) and each
creation or deletion that did not happen lowers the expectations, so a failed write never leaves the
replica waiting for an event that cannot come.

A multi-pod Instance's PodGroup is made before its pods (`pod_groups`); what holds a create back this
pass (a terminating PodGroup, a ResourceQuota's refusal) is recorded in `create_holds`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import structlog

from ome.api.resources import PODS
from ome.controllers import quota_view
from ome.controllers.inferencereplica.create_holds import CreateHolds
from ome.controllers.inferencereplica.pod_groups import PodGroups
from ome.controllers.rolloutcoordination import observe as coordination
from ome.controllers.serving_gate import set_serving_gate
from ome.framework import errors, together
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.expectations import ControllerExpectations
from ome.omenative import instances, migration_relocate, operation_holds, pod_render
from ome.omenative.gang_timeout import schedule_timeout_seconds
from ome.omenative.revisions import RevisionData
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.inferencereplica")


class PodWrites:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        settings: InferenceReplicaSettings,
        expectations: ControllerExpectations,
        holds: CreateHolds,
        pod_groups: PodGroups,
        now: Callable[[], datetime],
    ) -> None:
        self._client = client
        self._cache = cache
        self._settings = settings
        self._expectations = expectations
        self._holds = holds
        self._pod_groups = pod_groups
        self._now = now
        self.writes = 0
        """API writes made, for the reconciler's count."""

    async def apply(
        self, replica: Obj, ctx: instances.Context, plan: instances.Plan, known: Mapping[str, RevisionData]
    ) -> None:
        """Make the plan's pod writes. Every write is attempted and awaited (creations in slow-start
        batches), each one that did not happen lowers the expectations, then the first error is raised."""
        ns = replica["metadata"]["namespace"]
        key = (ns, replica["metadata"]["name"])
        bodies = [self._pod_bodies(replica, ctx, create, known) for create in plan.creates]
        todo = [body for group in bodies for body in group]
        deletes = sorted(set(plan.deletes))
        if todo or deletes:
            self._expectations.expect_creations(key, len(todo))
            self._expectations.raise_expectations(key, deletes=len(deletes))
        failures: list[BaseException] = []
        if todo:
            try:
                await self._ensure_pod_groups(key, replica, ctx, plan)
                kept = self._holds.unheld(key, todo)  # none join a PodGroup on its way out
                for _ in range(len(todo) - len(kept)):
                    self._expectations.creation_observed(key)
                todo = kept
            except Exception as exc:  # no pod is created without its PodGroup: none of them will arrive
                self._skip_creations(key, len(todo), exc)
                failures.append(exc)
                todo = []
        failures += await self._create_pods(key, todo)
        failures += together.failures(await asyncio.gather(
            *(self._delete_pod(key, name, ns) for name in deletes), return_exceptions=True
        ))
        gates = [(name, "True") for name in sorted(set(plan.open_gates))]
        gates += [(name, "False") for name in sorted(set(plan.close_gates))]
        failures += together.failures(await asyncio.gather(
            *(self._set_gate(ns, name, value) for name, value in gates), return_exceptions=True
        ))
        for index in plan.removed:
            if self._pod_groups.served:
                await self._pod_groups.delete(ns, ctx.base, ctx.component, index)
        # A quota refusal is a hold (operation.waiting), retried on quota events, not an error.
        failures = [f for f in failures if not quota_view.is_quota_refusal(f)]
        if failures:
            raise next((f for f in failures if isinstance(f, Exception)), failures[0])

    async def _create_pods(self, key: tuple[str, str], bodies: list[Obj]) -> list[BaseException]:
        """kube-controller-manager's slowStartBatch: batches of 1, 2, 4, ... pods, each awaited whole;
        after a batch with a failure the rest are skipped (a quota or admission rule that rejects one
        pod rejects the others too) and their expected creations lowered."""
        batch, start = 1, 0
        while start < len(bodies):
            chunk = bodies[start : start + batch]
            start += len(chunk)
            failed = together.failures(await asyncio.gather(
                *(self._create_pod(key, body) for body in chunk), return_exceptions=True
            ))
            if failed:
                self._skip_creations(key, len(bodies) - start, failed[0])
                if quota_view.is_quota_refusal(failed[0]):
                    self._holds.quota_refused(key, bodies[start:])
                return failed
            batch *= 2
        return []

    def _skip_creations(self, key: tuple[str, str], count: int, cause: BaseException) -> None:
        if count <= 0:
            return
        log.info("Slow-start failure; skipping pod creations and lowering expectations",
                 key=f"{key[0]}/{key[1]}", skipped=count, error=str(cause))
        for _ in range(count):
            self._expectations.creation_observed(key)

    def _pod_bodies(
        self,
        replica: Obj,
        ctx: instances.Context,
        create: instances.PodCreate,
        known: Mapping[str, RevisionData],
    ) -> list[Obj]:
        data = known[create.revision_hash]
        ident = pod_render.PodIdentity(
            ctx.base,
            ctx.component,
            create.index,
            create.incarnation,
            "",
            0,
            create.revision_hash,
            ctx.desired,
            (replica["spec"].get("topologyKey") or None),
            tuple(coordination.peer_env_for(self._cache, replica, create.revision_hash)),
        )
        bodies = [
            p for p in pod_render.instance_pods(replica, data, ident) if p["metadata"]["name"] in create.names
        ]
        if not data.multi_pod and not bodies:
            # A single-pod Instance sits at its activeOrdinal, 1 after a SurgeThenDrain update: a restart
            # there rebuilds the pod under that name and ordinal.
            runner = data.runners[0]
            one = dataclasses.replace(ident, runner=runner.name, ordinal=1)
            bodies = [p for p in [pod_render.render_pod(replica, data, runner, one)]
                      if p["metadata"]["name"] in create.names]
        # An Instance OME relocated avoids the nodes it left (ome.omenative.migration_relocate).
        avoid = migration_relocate.avoided_nodes(replica.get("status"), create.index)
        for body in bodies if avoid else ():
            body["spec"]["affinity"] = migration_relocate.placement(body["spec"].get("affinity"), avoid)
        return bodies

    async def _create_pod(self, key: tuple[str, str], body: Obj) -> None:
        try:
            await self._client.create(PODS, body, body["metadata"]["namespace"])
            self.writes += 1
        except errors.AlreadyExists:
            self._expectations.creation_observed(key)  # no event will arrive for a pod we did not make
        except BaseException as exc:  # a cancelled create too: it may never reach the apiserver
            self._expectations.creation_observed(key)
            if quota_view.is_quota_refusal(exc):
                self._holds.quota_refused(key, [body])
            raise

    async def _delete_pod(self, key: tuple[str, str], name: str, ns: str) -> None:
        # Pod names repeat across incarnations: the uid precondition makes sure this delete (or a
        # transport retry of it) never takes the next incarnation's pod of the same name.
        cached = self._cache.get_or_none(PODS, name, ns)
        uid = (cached or {}).get("metadata", {}).get("uid")
        try:
            await self._client.delete(PODS, name, ns, uid=uid)
            self.writes += 1
        except (errors.NotFound, errors.Conflict) as exc:  # gone, or another pod now holds the name
            self._expectations.deletion_observed(key)
            # Usual when someone else deleted it first (the pod GC, a user); said, because a pass that
            # meets this again and again plans from a pod the watch never removed from the cache.
            log.info("Pod to delete already gone", key=f"{key[0]}/{key[1]}", pod=name, uid=uid,
                     status=exc.status)
        except BaseException:
            self._expectations.deletion_observed(key)
            raise

    async def _set_gate(self, ns: str, name: str, value: str) -> None:
        """The serving readiness gate: the kubelet (kwok here) folds it into the pod's Ready."""
        if await set_serving_gate(self._client, ns, name, value, self._now()):
            self.writes += 1

    async def _ensure_pod_groups(
        self, key: tuple[str, str], replica: Obj, ctx: instances.Context, plan: instances.Plan
    ) -> None:
        multi = [c for c in plan.creates if ctx.revisions[c.revision_hash].multi_pod]
        if not multi or not await self._pod_groups.gang_scheduling():
            return
        timeout = schedule_timeout_seconds(ctx.ready_timeout, self._settings.gang_schedule_timeout)
        gangs = [(c.index, ctx.revisions[c.revision_hash].pod_count) for c in multi]
        async for index in self._pod_groups.ensure(replica, ctx.base, ctx.component, gangs, timeout):
            self._holds.hold(key, index, operation_holds.POD_GROUP_TERMINATING)
