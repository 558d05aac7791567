"""An InferenceService with spec.replicaRefs: Services in front of the standalone InferenceReplicas it names.

Such a service takes its own path (no model, runtime or workload): per referenced role it reads the
standalone InferenceReplica from the cache, keeps the stable Service `{isvc}-{role}` in front of the
replica's pods, and reports the replica for status to mirror. A replica that is missing or not a
standalone replica of the role's component sets the role's ready condition False with `ReplicaRefMissing`
or `ReplicaRefInvalid` and records a Warning event of the same reason; the replica watch (controller.py)
brings the service back when the replica returns. The referenced replica is never written, adopted or
deleted.
"""

from __future__ import annotations

from typing import Any

import structlog

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import children, converge, external_access, status
from ome.framework.events import EventRecorder
from ome.resolution import naming, replica_refs

Obj = dict[str, Any]

log = structlog.get_logger("ome.controllers.inferenceservice")


class ReplicaFronts:
    """The writer and the config come with each call: the reconciler's writer (which tests may wrap) and
    the config snapshot of its pass."""

    def __init__(
        self, reader: children.Reader, recorder: EventRecorder, owned: children.Children,
        external: external_access.ExternalAccess,
    ) -> None:
        self._reader = reader
        self._recorder = recorder
        self._owned = owned
        self._external = external

    async def reconcile(
        self, writer: converge.Writer, isvc: Obj, config: InferenceServiceConfig
    ) -> status.Observed:
        """Front the standalone replicas spec.replicaRefs names, writing nothing on them; returns what the
        status reports."""
        namespace = isvc["metadata"]["namespace"]
        refs: list[status.RoleRef] = []
        ports: dict[str, int | None] = {}
        for role, name in replica_refs.roles(isvc):
            replica = self._reader.get_or_none(resources.INFERENCE_REPLICAS, name, namespace)
            problem = replica_refs.problem(isvc, role, name, replica)
            refs.append(status.RoleRef(role, name, replica, problem))
            if problem is None and replica is not None:
                ports[role] = await self._front(writer, isvc, role, name, replica)
            elif problem is not None:  # the role's Service is left as it is; nothing is created for it
                log.warning(
                    "Referenced replica unusable", component=role, replica=name, reason=problem.reason
                )
                self._recorder.event(isvc, "Warning", problem.reason, problem.message)
        target = replica_refs.external_target(replica_refs.roles(isvc))
        if target is None:
            port = await self._external.converge_service(writer, isvc, None, config)
        elif (target_port := ports.get(target[0])) is None:
            port = None  # the target serves nothing now: leave the Service `{isvc}` as it is
        else:
            desired = replica_refs.external_service(isvc, target[0], target[1], target_port)
            port = await self._external.converge_service(writer, isvc, desired, config)
        await self._owned.delete_removed(writer, isvc, {ref.component for ref in refs})
        return status.Observed(plans=(), referenced=True, refs=refs, external_port=port)

    async def _front(
        self, writer: converge.Writer, isvc: Obj, role: str, replica_name: str, replica: Obj
    ) -> int | None:
        """Converge the stable Service of one referenced role; returns its port (None: no Service yet)."""
        namespace = isvc["metadata"]["namespace"]
        revision = None
        if not (replica.get("spec") or {}).get("runners") and (rev := replica_refs.revision_name(replica)):
            revision = self._reader.get_or_none(resources.CONTROLLER_REVISIONS, rev, namespace)
        template = replica_refs.serving_template(replica, revision)
        name = naming.service_name(isvc["metadata"]["name"], role)
        cached = self._reader.get_or_none(resources.SERVICES, name, namespace)
        if template is None:  # the named revision is not in the cache yet: keep the ports as they are
            return replica_refs.service_port(cached) if cached is not None else None
        desired = replica_refs.stable_service(isvc, role, replica_name, template)
        await self._owned.converge(writer, desired, cached)
        return replica_refs.service_port(desired)
