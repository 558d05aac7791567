"""How an InferenceService is reached from outside: the external Service `{isvc}`, or the Ingress or the
HTTPRoutes (routing.py).

The Service `{isvc}` exists while ingress creation is off and the service is not cluster-local; it fronts
the router, else the engine (for spec.replicaRefs, the target role's replica: replica_fronts.py). Once
there is none to have, ours is deleted. With ingress creation on, routing.py converges the Ingress or
the HTTPRoutes and the backend policy, and reports IngressReady's state and status.traffic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import children, converge, routing, status
from ome.resolution import ingress, objects, workloads
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]


class ExternalAccess:
    """The writer and the config come with each call: the reconciler's writer (which tests may wrap) and
    the config snapshot of its pass."""

    def __init__(self, reader: children.Reader, owned: children.Children, routes: routing.Routing) -> None:
        self._reader = reader
        self._owned = owned
        self._routing = routes

    async def reconcile_service(
        self, writer: converge.Writer, isvc: Obj, plans: Sequence[ComponentPlan],
        config: InferenceServiceConfig,
    ) -> int | None:
        """The Service `{isvc}` while ingress creation is off; returns its port (None when there is none)."""
        return await self.converge_service(writer, isvc, _service(isvc, plans), config)

    async def converge_service(
        self, writer: converge.Writer, isvc: Obj, desired: Obj | None, config: InferenceServiceConfig
    ) -> int | None:
        """Apply `desired` as the Service `{isvc}`, or delete ours when there is none to have."""
        name, namespace = isvc["metadata"]["name"], isvc["metadata"]["namespace"]
        cached = self._reader.get_or_none(resources.SERVICES, name, namespace)
        wanted = _wanted(isvc, desired, config)
        if wanted is None:
            if cached is not None and children.owned_by(cached, isvc):
                await self._owned.delete(writer, resources.SERVICES, cached)
            return None
        await self._owned.converge(writer, wanted, cached)
        return _port(wanted)

    async def reconcile_ingress(
        self, writer: converge.Writer, isvc: Obj, plans: Sequence[ComponentPlan],
        config: InferenceServiceConfig, now: str,
    ) -> tuple[status.IngressState | None, Obj | None]:
        """The Ingress or the HTTPRoutes with ingress creation on, and the backend policy (routing.py);
        returns IngressReady's state (None while creation is off) and status.traffic."""
        found = self._owned.workloads(isvc, plans)

        def serving(plan: ComponentPlan) -> bool:
            workload = found.get(plan.component)
            return routing.can_back_route(plan, workload, status.workload_condition(plan, workload).ok)

        exposure = await self._routing.reconcile(isvc, plans, config, serving, now, writer=writer)
        if exposure.created is None:
            return None, exposure.traffic
        state = status.IngressState(exposure.created, exposure.reason, exposure.message, exposure.url,
                                    exposure.address, exposure.addresses)
        return state, exposure.traffic


def service_port(isvc: Obj, plans: Sequence[ComponentPlan], config: InferenceServiceConfig) -> int | None:
    """The port `ExternalAccess.reconcile_service` reports, from the plans alone."""
    return _port(_wanted(isvc, _service(isvc, plans), config))


def _wanted(isvc: Obj, desired: Obj | None, config: InferenceServiceConfig) -> Obj | None:
    """`desired` when the Service `{isvc}` is to exist: not cluster-local, ingress creation off."""
    if desired is None or objects.is_cluster_local(isvc) or ingress.creation_enabled(isvc, config):
        return None
    return desired


def _service(isvc: Obj, plans: Sequence[ComponentPlan]) -> Obj | None:
    """The Service `{isvc}` in front of the plans' external target (None: no target)."""
    target = workloads.external_target(plans)
    return objects.external_service(isvc, target) if target is not None else None


def _port(service: Mapping[str, Any] | None) -> int | None:
    return int(service["spec"]["ports"][0]["port"]) if service is not None else None
