"""External access and backend policy of one InferenceService: the Ingress or the HTTPRoutes, and the
BackendTrafficPolicy or DestinationRule (I/O; the objects come from resolution/ingress.py,
gateway_routes.py and traffic_policy.py).

Modes (ingress creation on or off, `enableGatewayAPI`): none (the external Service, converged elsewhere),
Ingress, or Gateway API. Each pass converges what the mode calls for and deletes what OME created for the
other modes, so switching leaves only the current mode's objects; on delete, owner references let the
garbage collector remove everything.

Gateway API: each route is written once the component it sends to can serve (ready, or for OMENative at
least one ready and serving Instance); IngressReady is True once every declared component's route exists
and every Gateway on it accepted its current generation. A route written in this pass reports
`ParentStatusNotAvailable` until the route watch brings its status. The HTTPRoute CRD is looked up once at
start (`detect`); without it, IngressReady is False with `GatewayAPINotInstalled`.

Policy: with traffic intent, the active translator's policy (traffic_policy.py); without intent and with
Gateway API ingress, the default BackendTrafficPolicy; otherwise none, and OME deletes the policy it
wrote. A same-named policy OME does not control, or one the API server rejects, records a
`TrafficReconcileError` event and fails the reconcile (retried), so the status keeps its earlier values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import structlog

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import converge
from ome.framework import errors, resources
from ome.framework.events import EventRecorder
from ome.framework.own_applies import OwnApplies
from ome.framework.reconcile import RetryError
from ome.framework.resources import Resource
from ome.resolution import gateway_routes, ingress, ingress_settings, modes, naming
from ome.resolution import traffic_policy as tp
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

log = structlog.get_logger("ome.controllers.inferenceservice")

GATEWAY_API_NOT_INSTALLED: Final = "GatewayAPINotInstalled"
GATEWAY_API_NOT_INSTALLED_MESSAGE: Final = (
    "enableGatewayAPI is true, but the Gateway API HTTPRoute CRD (gateway.networking.k8s.io/v1) was not "
    "served when the controller started: install the Gateway API CRDs, then restart the controller"
)
DEFAULT_POLICY_UNAVAILABLE: Final = "BackendTrafficPolicyNotInstalled"
DEFAULT_POLICY_UNAVAILABLE_MESSAGE: Final = (
    'no matches for kind "BackendTrafficPolicy" in version "gateway.envoyproxy.io/v1alpha1": the default '
    "BackendTrafficPolicy needs Envoy Gateway's CRDs (v1.7 or later); install them, then restart the "
    "controller"
)
NONE: Final = "none"
INGRESS: Final = "ingress"
GATEWAY: Final = "gateway"


@dataclass(frozen=True, slots=True)
class RoutingFacts:
    """Which optional CRDs the cluster served when the controller started (looked up once, like
    controller-runtime's scheme registration: installing one later needs a restart)."""

    http_routes: bool = False
    translator: str = tp.NOOP

    @property
    def policy_resource(self) -> Resource | None:
        return {tp.ENVOY: tp.BACKEND_TRAFFIC_POLICIES, tp.ISTIO: tp.DESTINATION_RULES}.get(self.translator)


class Served(Protocol):
    async def is_served(self, res: Resource, *, timeout: float | None = None) -> bool: ...


async def detect(client: Served) -> RoutingFacts:
    """Envoy Gateway's BackendTrafficPolicy first, then Istio's DestinationRule, else no translator."""
    routes = await client.is_served(resources.HTTP_ROUTES)
    if await client.is_served(tp.BACKEND_TRAFFIC_POLICIES):
        translator = tp.ENVOY
    elif await client.is_served(tp.DESTINATION_RULES):
        translator = tp.ISTIO
    else:
        translator = tp.NOOP
    log.info("Selected traffic translator", translator=translator, httproute_served=routes)
    return RoutingFacts(http_routes=routes, translator=translator)


@dataclass(frozen=True, slots=True)
class Exposure:
    """What the status reports: IngressReady (None while ingress creation is off), the URLs and
    status.traffic."""

    created: bool | None = None
    reason: str = ""
    message: str = ""
    url: str | None = None
    address: str | None = None
    addresses: list[Obj] | None = None
    traffic: Obj | None = None


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(
        self, res: Resource, namespace: str | None = None, *, label_selector: Mapping[str, str] | None = None,
        index: tuple[str, str] | None = None,
    ) -> list[Obj]: ...


def mode(isvc: Mapping[str, Any], config: InferenceServiceConfig) -> str:
    if not ingress.creation_enabled(isvc, config):
        return NONE
    return GATEWAY if config.ingress.enable_gateway_api else INGRESS


def can_back_route(plan: ComponentPlan, workload: Mapping[str, Any] | None, ready: bool) -> bool:
    """Ready, or an OMENative component with a ready and serving Instance while it converges."""
    if ready:
        return True
    if plan.mode != modes.OMENATIVE or workload is None:
        return False
    counts = workload.get("status") or {}
    return int(counts.get("readyReplicas") or 0) > 0 and int(counts.get("servingReplicas") or 0) > 0


class Routing:
    def __init__(
        self, reader: Reader, recorder: EventRecorder, facts: RoutingFacts, *,
        applies: OwnApplies | None = None,
    ) -> None:
        self._reader = reader
        self._recorder = recorder
        self.facts = facts
        self._writer: converge.Writer | None = None
        # The reconciler's own applies: a route or policy informer behind our apply (a CRD's watch
        # cache still initialising) must not make each pass apply the same object again.
        self._applies = applies if applies is not None else OwnApplies()

    def resources(self) -> tuple[Resource, ...]:
        """The optional kinds this controller writes and watches, given what the cluster serves."""
        found = (resources.HTTP_ROUTES,) if self.facts.http_routes else ()
        policy = self.facts.policy_resource
        return found + ((policy,) if policy is not None else ())

    async def reconcile(
        self,
        isvc: Obj,
        plans: Sequence[ComponentPlan],
        config: InferenceServiceConfig,
        serving: Callable[[ComponentPlan], bool],
        now: str,
        *,
        writer: converge.Writer,
    ) -> Exposure:
        """Converge the objects of the service's mode, delete the others', report what status needs."""
        self._writer = writer  # the reconciler's, which tests may wrap to count writes
        current = mode(isvc, config)
        exposure = Exposure()
        if current == INGRESS:
            exposure = await self._ingress(isvc, plans, config, serving)
        else:
            await self._delete_owned(isvc, resources.INGRESSES, isvc["metadata"]["name"])
        if current == GATEWAY:
            exposure = await self._routes(isvc, plans, config, serving)
        else:
            await self._delete_routes(isvc, keep=())
        traffic, problem = await self._policy(isvc, plans, config, gateway=current == GATEWAY, now=now)
        if problem is not None and exposure.created:
            return Exposure(False, *problem, url=exposure.url, address=exposure.address,
                            addresses=exposure.addresses, traffic=traffic)
        return Exposure(exposure.created, exposure.reason, exposure.message, exposure.url, exposure.address,
                        exposure.addresses, traffic)

    # -- Kubernetes Ingress ------------------------------------------------------------------------

    async def _ingress(
        self, isvc: Obj, plans: Sequence[ComponentPlan], config: InferenceServiceConfig,
        serving: Callable[[ComponentPlan], bool],
    ) -> Exposure:
        not_ready = Exposure(False, ingress.COMPONENT_NOT_READY, ingress.COMPONENT_NOT_READY_MESSAGE)
        gate = ingress.target(plans)
        if gate is None or not serving(gate):
            return not_ready
        try:
            desired = ingress.desired(isvc, plans, config)
            url = ingress.url(isvc, plans, config)
        except ingress.IngressError as exc:
            log.error("fails to reconcile ingress", error=str(exc))
            return Exposure(False, ingress.INVALID_INGRESS_CONFIG, str(exc))
        if desired is None:
            return not_ready
        await self._converge(desired, "Ingress")
        return Exposure(True, url=url)

    # -- Gateway API -------------------------------------------------------------------------------

    async def _routes(
        self, isvc: Obj, plans: Sequence[ComponentPlan], config: InferenceServiceConfig,
        serving: Callable[[ComponentPlan], bool],
    ) -> Exposure:
        if not self.facts.http_routes:
            return Exposure(False, GATEWAY_API_NOT_INSTALLED, GATEWAY_API_NOT_INSTALLED_MESSAGE)
        settings = ingress_settings.resolve(isvc, config.ingress)
        specs = gateway_routes.route_specs(isvc, plans)
        try:
            gateway_routes.check_gateways(settings)
            desired = {spec.name: gateway_routes.render(isvc, spec, settings) for spec in specs}
            ends = gateway_routes.endpoints(isvc, plans, settings, config.cluster_domain)
        except ingress.IngressError as exc:
            log.error("fails to reconcile ingress", error=str(exc))
            return Exposure(False, ingress.INVALID_INGRESS_CONFIG, str(exc))
        namespace = isvc["metadata"]["namespace"]
        verdicts = []
        for spec in specs:
            if not serving(spec.target):
                verdicts.append(gateway_routes.component_not_ready(spec.route))
                continue
            cached = self._reader.get_or_none(resources.HTTP_ROUTES, spec.name, namespace)
            if await self._converge(desired[spec.name], f"{spec.route} HttpRoute"):
                verdicts.append(gateway_routes.awaiting_programming(spec.route, created=cached is None))
            else:
                verdicts.append(gateway_routes.verdict(cached or {}))
        await self._delete_routes(isvc, keep=tuple(desired))
        first = next((v for v in verdicts if not v.ok), None)
        if first is not None:
            return Exposure(False, first.reason, first.message, ends.url, ends.address, ends.addresses)
        return Exposure(True, url=ends.url, address=ends.address, addresses=ends.addresses)

    async def _delete_routes(self, isvc: Obj, keep: Sequence[str]) -> None:
        if not self.facts.http_routes:
            return
        meta = isvc["metadata"]
        for route in self._reader.list(resources.HTTP_ROUTES, meta["namespace"],
                                       label_selector={naming.ISVC_LABEL: meta["name"]}):
            if route["metadata"]["name"] not in keep and _controlled_by(route, isvc):
                await self._delete(resources.HTTP_ROUTES, route)

    # -- backend policy ----------------------------------------------------------------------------

    async def _policy(
        self, isvc: Obj, plans: Sequence[ComponentPlan], config: InferenceServiceConfig, *, gateway: bool,
        now: str,
    ) -> tuple[Obj | None, tuple[str, str] | None]:
        """Converge the policy; returns status.traffic and, for Gateway API ingress without the
        BackendTrafficPolicy CRD, the IngressReady problem."""
        translator = self.facts.translator
        translation: tp.Translation | None = None
        error: str | None = None
        desired: Obj | None = None
        problem: tuple[str, str] | None = None
        if tp.has_intent(isvc):
            try:
                declared = [p.component for p in plans]
                translation = tp.translate(translator, isvc, declared, config.cluster_domain)
                desired = translation.policy
            except tp.TranslationError as exc:
                error = str(exc)
                log.warning("Traffic intent cannot be translated", translator=translator, error=error)
        elif gateway:
            if translator == tp.ENVOY:
                headers = ingress_settings.resolve(isvc, config.ingress).consistent_hash_headers
                desired = tp.default_policy(isvc, headers)
            else:
                problem = (DEFAULT_POLICY_UNAVAILABLE, DEFAULT_POLICY_UNAVAILABLE_MESSAGE)
        acceptance = tp.Acceptance(tp.PENDING)
        res = self.facts.policy_resource
        if res is not None:
            name, namespace = isvc["metadata"]["name"], isvc["metadata"]["namespace"]
            cached = self._reader.get_or_none(res, name, namespace)
            if desired is None or desired["kind"] != res.kind:
                if cached is not None and _controlled_by(cached, isvc):
                    await self._delete(res, cached)
            else:
                if cached is not None and not _controlled_by(cached, isvc):
                    message = tp.conflict_message(desired, cached)
                    self._recorder.event(isvc, "Warning", tp.RECONCILE_ERROR_EVENT, message)
                    raise RetryError(message)
                try:
                    wrote = await converge.converge(self._write(), desired, cached,
                                                    applies=self._applies)
                except errors.ApiError as exc:
                    message = f"failed to apply {res.kind} {namespace}/{name}: {exc}"
                    self._recorder.event(isvc, "Warning", tp.RECONCILE_ERROR_EVENT, message)
                    raise RetryError(message) from exc
                if not wrote:
                    acceptance = tp.observe(translator, cached)
        return tp.status(isvc, translator, translation, acceptance, now, error), problem

    # -- writes ------------------------------------------------------------------------------------

    def _write(self) -> converge.Writer:
        assert self._writer is not None, "reconcile() sets the writer"
        return self._writer

    async def _converge(self, desired: Obj, what: str) -> bool:
        meta = desired["metadata"]
        cached = self._reader.get_or_none(converge.resource_of(desired), meta["name"], meta["namespace"])
        try:
            return await converge.converge(self._write(), desired, cached, applies=self._applies)
        except errors.ApiError as exc:
            message = f"failed to apply {what} {meta['name']}: {exc}"
            log.error("fails to reconcile ingress", error=message)
            raise RetryError(message) from exc

    async def _delete_owned(self, isvc: Obj, res: Resource, name: str) -> None:
        cached = self._reader.get_or_none(res, name, isvc["metadata"]["namespace"])
        if cached is not None and _controlled_by(cached, isvc):
            await self._delete(res, cached)

    async def _delete(self, res: Resource, obj: Mapping[str, Any]) -> None:
        await converge.delete(self._write(), res, obj, self._applies)


def _controlled_by(child: Mapping[str, Any], isvc: Mapping[str, Any]) -> bool:
    uid = isvc["metadata"].get("uid")
    return any(ref.get("uid") == uid and ref.get("controller")
               for ref in (child.get("metadata") or {}).get("ownerReferences") or [])
