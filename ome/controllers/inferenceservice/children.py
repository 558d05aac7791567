"""The children of an InferenceService: read from the shared cache, converged, and deleted once removed.

Reads come only from the cache. Writes are server-side applies that happen only when a desired object
changed or a field OME sets drifted out of band (converge.py), with the reconciler's own applies
(framework/own_applies.py) and the informers' progress; a create runs beside the pass
(framework/write_behind.py) unless asked inline. A child is deleted only when it is ours (an owner
reference to the service) and its component is no longer declared. The writer comes with each write (the
reconciler's, which tests may wrap to count writes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final, Protocol

from ome.api import resources
from ome.api.resources import Resource
from ome.controllers.inferenceservice import converge, pod_index, runtime_pinning
from ome.controllers.inferenceservice.converge import Writer  # by name: the method `converge` shadows it
from ome.framework.own_applies import OwnApplies
from ome.framework.post_creates import PostCreates
from ome.framework.reconcile import Request
from ome.framework.store import OWNER_INDEX
from ome.framework.write_behind import WriteBehind
from ome.resolution import modes, naming
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

CHILD_RESOURCES: Final = (
    resources.DEPLOYMENTS,
    resources.INGRESSES,
    resources.SERVICES,
    # HPAs, ScaledObjects and PDBs belong to the autoscaler controller (ome/controllers/autoscaler).
    resources.INFERENCE_REPLICAS,
    # The router's own identity (resolution/router_rbac.py).
    resources.SERVICE_ACCOUNTS,
    resources.ROLES,
    resources.ROLE_BINDINGS,
)
_WORKLOAD_RESOURCES: Final = {
    modes.RAW_DEPLOYMENT: resources.DEPLOYMENTS,
    modes.OMENATIVE: resources.INFERENCE_REPLICAS,
    modes.MULTINODE: resources.LEADER_WORKER_SETS,
}

PASS_OWNER: ContextVar[Request | None] = ContextVar("isvc_pass_owner", default=None)
"""The service this pass reconciles (set by the reconciler): requeued should a create it started beside it
fail."""


class Reader(runtime_pinning.Lister, Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...


class Children:
    """A service's children as the cache holds them, and the writes that converge or delete them."""

    def __init__(
        self, reader: Reader, *, kinds: Sequence[Resource], applies: OwnApplies,
        behind: WriteBehind | None, posts: PostCreates | None,
    ) -> None:
        self._reader = reader
        self._kinds = tuple(kinds)
        self._applies = applies
        self._behind = behind
        # Children are created by POST and their fields moved to the apply entry before a first apply.
        self._posts = posts

    # -- cache reads -------------------------------------------------------------------------------

    def cached(self, obj: Mapping[str, Any]) -> Obj | None:
        meta = obj["metadata"]
        return self._reader.get_or_none(converge.resource_of(obj), meta["name"], meta.get("namespace"))

    def workloads(self, isvc: Obj, plans: Sequence[ComponentPlan]) -> dict[str, Obj | None]:
        namespace = isvc["metadata"]["namespace"]
        found: dict[str, Obj | None] = {}
        for plan in plans:
            name = naming.lws_name(plan.isvc, plan.component) if plan.mode == modes.MULTINODE else plan.name
            found[plan.component] = self._reader.get_or_none(_WORKLOAD_RESOURCES[plan.mode], name, namespace)
        return found

    def pods(self, isvc: Obj, component: str) -> list[Obj]:
        meta = isvc["metadata"]
        selector = naming.selector_labels(meta["name"], component)
        service = (pod_index.INDEX, pod_index.key(meta["namespace"], meta["name"]))  # not the namespace's
        return self._reader.list(resources.PODS, meta["namespace"], label_selector=selector, index=service)

    # -- writes ------------------------------------------------------------------------------------

    def creates_pending(self, isvc: Obj) -> bool:
        """Whether a create of this service's objects runs beside the pass (framework/write_behind.py)."""
        meta = isvc["metadata"]
        return self._behind is not None and self._behind.pending_for(Request(meta["namespace"], meta["name"]))

    async def converge(
        self, writer: Writer, desired: Obj, cached: Mapping[str, Any] | None, *,
        create_only: Mapping[str, Mapping[str, Any]] | None = None, inline: bool = False,
    ) -> bool:
        """converge.converge with the reconciler's own applies and the informers' progress; a create
        runs beside the pass (framework/write_behind.py) unless `inline` or no write-behind is set."""
        behind = None if inline else self._behind
        # `reader`: an absent child is read again as the write is decided (a create that ended, or was
        # shown, while this pass ran must be seen).
        return await converge.converge(writer, desired, cached, create_only=create_only,
                                       applies=self._applies, behind=behind, owner=PASS_OWNER.get(),
                                       posts=self._posts, reader=self._reader)

    async def delete(self, writer: Writer, res: Resource, obj: Mapping[str, Any]) -> None:
        await converge.delete(writer, res, obj, self._applies)

    async def delete_removed(self, writer: Writer, isvc: Obj, declared: set[str]) -> None:
        """Delete children of components the spec no longer declares (a mode change keeps the old ones)."""
        keep = declared | {naming.EXTERNAL_SERVICE_COMPONENT}
        selector = {naming.ISVC_LABEL: isvc["metadata"]["name"]}
        # Through the owner index: a label scan reads every child of the namespace, on every reconcile.
        owned = (OWNER_INDEX, str(isvc["metadata"].get("uid") or ""))
        for res in self._kinds:
            for child in self._reader.list(res, isvc["metadata"]["namespace"], label_selector=selector,
                                           index=owned):
                component = (child["metadata"].get("labels") or {}).get(naming.COMPONENT_LABEL)
                if component not in keep and owned_by(child, isvc):
                    await self.delete(writer, res, child)


def owned_by(child: Mapping[str, Any], isvc: Mapping[str, Any]) -> bool:
    uid = isvc["metadata"].get("uid")
    return any(ref.get("uid") == uid for ref in child["metadata"].get("ownerReferences") or [])
