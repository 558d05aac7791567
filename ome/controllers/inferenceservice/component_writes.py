"""The components of an InferenceService converged in order (engine, decoder, router).

Each component's objects are rendered (resolution/workloads.py, plus its PodMonitor when the CRD is
served) and applied together, the router's identity (ServiceAccount, Role, RoleBinding) first. An OMENative
InferenceReplica is created with the replica count the autoscaler would set, and with the InferenceReplica
controller's teardown finalizer when that controller runs beside this one.

A component in a mode it cannot run in (VirtualDeployment, or MultiNode on the router) logs `Failed to
reconcile component` and stops the components after it; the reconcile then fails (ComponentError) so the
key is retried with backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Final

import structlog

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler.decide import initial_replicas
from ome.controllers.inferenceservice import children, converge
from ome.framework.reconcile import RetryError
from ome.omenative import teardown
from ome.resolution import component_podmonitor, modes, workloads
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

_IDENTITY_KINDS: Final = frozenset({"ServiceAccount", "Role", "RoleBinding"})

log = structlog.get_logger("ome.controllers.inferenceservice")


class ComponentError(RetryError):
    """A component could not be reconciled; later components were skipped."""


class ComponentWrites:
    """The writer and the config come with each call: the reconciler's writer (which tests may wrap) and
    the config snapshot of its pass."""

    def __init__(
        self, owned: children.Children, *, lws_served: bool, pod_monitor_served: bool, replica_teardown: bool
    ) -> None:
        self._owned = owned
        self._lws_served = lws_served
        self._pod_monitor_served = pod_monitor_served
        self._replica_teardown = replica_teardown

    async def reconcile(
        self, writer: converge.Writer, isvc: Obj, plans: Sequence[ComponentPlan],
        runtime_spec: Mapping[str, Any], config: InferenceServiceConfig,
    ) -> tuple[list[ComponentPlan], Exception | None]:
        """Converge components in order; stop at the first that fails and return it as the error."""
        done: list[ComponentPlan] = []
        for plan in plans:
            try:
                desired = workloads.render_component(isvc, plan, config, lws_served=self._lws_served)
            except (modes.UnreconcilableModeError, workloads.LeaderWorkerSetUnavailableError) as exc:
                log.error(
                    "Failed to reconcile component", component=plan.component, mode=plan.mode, error=str(exc)
                )
                return done, ComponentError(str(exc))
            if self._pod_monitor_served and plan.mode in component_podmonitor.MODES:
                desired = [*desired, component_podmonitor.render(isvc, plan)]
            # A component's objects are independent and applied together (one round trip, not one
            # each), but the router's identity comes first: its pods cannot be created without it.
            identity = [obj for obj in desired if obj["kind"] in _IDENTITY_KINDS]
            for obj in identity:
                await self._owned.converge(writer, obj, self._owned.cached(obj), inline=True)
            # An OMENative replica is created with the count the autoscaler would set (no /scale after).
            initial = initial_replicas(isvc, plan, runtime_spec, config)
            counted = {"spec": {"replicas": initial}} if initial is not None else None
            rest = [(obj, self._owned.cached(obj)) for obj in desired if obj["kind"] not in _IDENTITY_KINDS]
            replica = "InferenceReplica"
            if self._replica_teardown:
                rest = [(teardown.on_create(obj, cached) if obj["kind"] == replica else obj, cached)
                        for obj, cached in rest]
            await asyncio.gather(*(
                self._owned.converge(writer, obj, cached,
                                     create_only=counted if obj["kind"] == replica else None)
                for obj, cached in rest))
            done.append(plan)
        return done, None
