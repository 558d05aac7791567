"""Render one pod of one Instance from its revision's runner template (pure).

OME's labels and OME_* variables win over the template's: selectors and runtimes depend on them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ome.omenative import instance_names as names
from ome.omenative.revisions import RevisionData, RunnerSpec, owner_reference

Obj = dict[str, Any]

MAIN_CONTAINER: Final = "ome-container"
TPU_RESOURCE: Final = "google.com/tpu"
TPU_PROCESS_PORT: Final = 8476
"""The port JAX/libtpu use for the multi-host handshake, as GKE's TPU webhook sets it."""


@dataclass(frozen=True, slots=True)
class PodIdentity:
    """Where a pod sits: its replica's base name and component, Instance, runner and ordinal."""

    base: str
    component: str
    index: int
    incarnation: int
    runner: str
    ordinal: int
    revision_hash: str
    replicas: int
    topology_key: str | None = None
    peer_env: tuple[tuple[str, str], ...] = ()
    """OME_<PEER>_ENDPOINT and OME_<PEER>_REVISION_ENDPOINT of a grouped service (coordination_pairing)."""

    @property
    def name(self) -> str:
        return names.pod_name(self.base, self.component, self.index, self.runner, self.ordinal)


def instance_pods(replica: Mapping[str, Any], data: RevisionData, ident: PodIdentity) -> list[Obj]:
    """Every pod of one Instance (`ident.runner`/`ordinal` are ignored)."""
    pods = []
    for runner in data.runners:
        for ordinal in range(runner.size):
            one = PodIdentity(
                ident.base,
                ident.component,
                ident.index,
                ident.incarnation,
                runner.name,
                ordinal,
                ident.revision_hash,
                ident.replicas,
                ident.topology_key,
                ident.peer_env,
            )
            pods.append(render_pod(replica, data, runner, one))
    return pods


def render_pod(replica: Mapping[str, Any], data: RevisionData, runner: RunnerSpec, ident: PodIdentity) -> Obj:
    template = runner.template
    meta = template.get("metadata") or {}
    spec: Obj = copy.deepcopy(template.get("spec") or {})
    spec["hostname"] = ident.name
    spec["subdomain"] = names.headless_service_name(ident.base, ident.component)
    gates = list(spec.get("readinessGates") or [])
    if not any(g.get("conditionType") == names.SERVING_GATE for g in gates):
        gates.append({"conditionType": names.SERVING_GATE})
    spec["readinessGates"] = gates
    _backfill_container_names(spec)
    _inject_env(spec, data, ident)
    if ident.topology_key and ident.runner == "worker" and data.multi_pod:
        _add_leader_affinity(spec, ident)
    pod_meta: Obj = {
        "name": ident.name,
        "namespace": replica["metadata"]["namespace"],
        "labels": {**(meta.get("labels") or {}), **pod_labels(data, ident)},
        "ownerReferences": [owner_reference(replica)],
    }
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def pod_labels(data: RevisionData, ident: PodIdentity) -> dict[str, str]:
    """The ten documented labels (the pairing protocol and pod group only when they apply)."""
    labels = {
        **names.selector_labels(ident.base, ident.component),
        names.INSTANCE_INDEX_LABEL: str(ident.index),
        names.INCARNATION_LABEL: str(ident.incarnation),
        names.RUNNER_LABEL: ident.runner,
        names.POD_ORDINAL_LABEL: str(ident.ordinal),
        names.REVISION_HASH_LABEL: ident.revision_hash,
    }
    if data.pairing_protocol:
        labels[names.PAIRING_PROTOCOL_LABEL] = data.pairing_protocol
    if data.multi_pod:
        labels[names.POD_GROUP_LABEL] = names.pod_group_name(ident.base, ident.component, ident.index)
    return labels


def ome_env(data: RevisionData, ident: PodIdentity) -> list[Obj]:
    runner_size = next((r.size for r in data.runners if r.name == ident.runner), 1)
    # The runner index is the gang position; a size-1 runner is always position 0, even on ordinal 1.
    runner_index = ident.ordinal if runner_size > 1 else 0
    env = [
        ("OME_INFERENCESERVICE_NAME", ident.base),
        ("OME_COMPONENT", ident.component),
        ("OME_COMPONENT_REPLICAS", str(ident.replicas)),
        ("OME_INSTANCE_INDEX", str(ident.index)),
        ("OME_RUNNER", ident.runner),
        ("OME_RUNNER_SIZE", str(runner_size)),
        ("OME_RUNNER_INDEX", str(runner_index)),
        ("OME_INSTANCE_SUBDOMAIN", names.instance_subdomain(ident.base, ident.component, ident.index)),
    ]
    if data.multi_pod:
        env += [
            ("OME_LEADER_ADDRESS", names.leader_address(ident.base, ident.component, ident.index)),
            ("OME_INSTANCE_POD_RANK", str(pod_rank(data, ident))),
            ("OME_INSTANCE_POD_COUNT", str(data.pod_count)),
        ]
    env += list(ident.peer_env)
    return [{"name": k, "value": v} for k, v in env]


def pod_rank(data: RevisionData, ident: PodIdentity) -> int:
    """Flat rank across the Instance: runners in order (leader first), then the ordinal."""
    offset = 0
    for runner in data.runners:
        if runner.name == ident.runner:
            break
        offset += runner.size
    return offset + ident.ordinal


def tpu_env(data: RevisionData, ident: PodIdentity) -> list[Obj]:
    headless = names.headless_service_name(ident.base, ident.component)
    hosts = [
        f"{names.pod_name(ident.base, ident.component, ident.index, r.name, o)}.{headless}"
        for r in data.runners
        for o in range(r.size)
    ]
    return [
        {"name": "TPU_WORKER_HOSTNAMES", "value": ",".join(hosts)},
        {"name": "TPU_WORKER_ID", "value": str(pod_rank(data, ident))},
        {"name": "TPU_PROCESS_ADDRESSES", "value": ",".join(f"{h}:{TPU_PROCESS_PORT}" for h in hosts)},
        {"name": "TPU_PROCESS_PORT", "value": str(TPU_PROCESS_PORT)},
        {"name": "TPU_NAME", "value": names.instance_subdomain(ident.base, ident.component, ident.index)},
    ]


def requests_resource(spec: Mapping[str, Any], resource: str) -> bool:
    for container in spec.get("containers") or []:
        res = container.get("resources") or {}
        if resource in (res.get("limits") or {}) or resource in (res.get("requests") or {}):
            return True
    return False


def _inject_env(spec: Obj, data: RevisionData, ident: PodIdentity) -> None:
    env = ome_env(data, ident)
    if data.multi_pod and requests_resource(spec, TPU_RESOURCE):
        env += tpu_env(data, ident)
    owned = {e["name"] for e in env}
    # Init containers run before the Instance is formed and get none of these, as documented.
    for container in spec.get("containers") or []:
        kept = [e for e in container.get("env") or [] if e.get("name") not in owned]
        container["env"] = kept + [dict(e) for e in env]


def _backfill_container_names(spec: Obj) -> None:
    # The apiserver rejects unnamed containers; the main container's conventional name fills the gap.
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if not container.get("name"):
                container["name"] = MAIN_CONTAINER


def _add_leader_affinity(spec: Obj, ident: PodIdentity) -> None:
    """Workers follow their leader's topology domain (a user term on the same key wins)."""
    assert ident.topology_key is not None
    pod_affinity = spec.setdefault("affinity", {}).setdefault("podAffinity", {})
    terms = pod_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
    if any(t.get("topologyKey") == ident.topology_key for t in terms):
        return
    leader = {
        names.ISVC_LABEL: ident.base,
        names.COMPONENT_LABEL: ident.component,
        names.INSTANCE_INDEX_LABEL: str(ident.index),
        names.RUNNER_LABEL: "leader",
    }
    terms.append({"topologyKey": ident.topology_key, "labelSelector": {"matchLabels": leader}})
