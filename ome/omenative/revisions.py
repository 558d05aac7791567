"""ControllerRevisions: one per version of the runners' pod templates and the pairing protocol (pure).

The revision stores everything needed to render an Instance's pods, so an Instance keeps rendering
from its own revision (scaling, restarts, repairs) while the spec already names a newer one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ome.omenative import instance_names as names

Obj = dict[str, Any]

HASH_LENGTH: Final = 8
EXCLUDED_KEYS_ANNOTATION: Final = "ome.io/revision-excluded-annotation-keys"
"""On the InferenceReplica: the InferenceService annotations (inherited by the pod templates, not declared
by the component) left out of the revision hash, sorted and comma-separated."""
_RUNNER_ORDER: Final = {"leader": 0, "default": 0, "worker": 1}
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
"""Left out of the hash: moving a workload to another team's queue (accelerator-quota.md) does not roll it;
running pods keep the old queue until the next rollout replaces them."""


@dataclass(frozen=True, slots=True)
class RunnerSpec:
    name: str
    size: int
    template: Obj


@dataclass(frozen=True, slots=True)
class RevisionData:
    """What a revision pins: the runners (leader before worker) and the pairing protocol."""

    runners: tuple[RunnerSpec, ...]
    pairing_protocol: str | None = None
    hash_excluded: frozenset[str] = field(default=frozenset(), compare=False)
    """Template annotation keys the hash leaves out (see EXCLUDED_KEYS_ANNOTATION); not stored."""

    @property
    def pod_count(self) -> int:
        return sum(r.size for r in self.runners)

    @property
    def multi_pod(self) -> bool:
        return any(r.name == "leader" for r in self.runners) or self.pod_count > 1

    def to_json(self) -> Obj:
        data: Obj = {
            "runners": [{"name": r.name, "size": r.size, "template": r.template} for r in self.runners]
        }
        if self.pairing_protocol:
            data["pairingProtocol"] = self.pairing_protocol
        return data


def from_spec(spec: Mapping[str, Any]) -> RevisionData | None:
    """The revision the spec asks for; None when the spec has no runners to render."""
    runners = spec.get("runners") or []
    if not runners:
        return None
    return from_json({"runners": runners, "pairingProtocol": spec.get("pairingProtocol")})


def from_replica(replica: Mapping[str, Any]) -> RevisionData | None:
    """The revision the replica's spec asks for, with the annotation keys its hash leaves out."""
    data = from_spec(replica.get("spec") or {})
    annotations = (replica.get("metadata") or {}).get("annotations") or {}
    keys = frozenset(
        k.strip() for k in str(annotations.get(EXCLUDED_KEYS_ANNOTATION) or "").split(",") if k.strip()
    )
    return replace(data, hash_excluded=keys) if data is not None and keys else data


def from_json(data: Mapping[str, Any]) -> RevisionData:
    parsed = [
        RunnerSpec(str(r["name"]), int(r.get("size") or 1), dict(r.get("template") or {}))
        for r in data.get("runners") or []
    ]
    parsed.sort(key=lambda r: _RUNNER_ORDER.get(r.name, 2))
    return RevisionData(tuple(parsed), data.get("pairingProtocol") or None)


def revision_hash(data: RevisionData, collision_count: int = 0) -> str:
    """Hash over every runner's template and the pairing protocol: a worker-only change still rolls
    the whole Instance, since a leader and its workers must run the same version. After a name
    collision, status.collisionCount salts it, as StatefulSet does (0 leaves the hash as it was)."""
    canonical = json.dumps(_hashed(data), sort_keys=True, separators=(",", ":"))
    if collision_count:
        canonical += f"#{collision_count}"
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]


def _hashed(data: RevisionData) -> Obj:
    """What the hash covers: the stored data less the excluded template annotations and the queue label."""
    stored = data.to_json()
    for runner in stored["runners"]:
        meta = dict(runner["template"].get("metadata") or {})
        annotations = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        if not (QUEUE_LABEL in labels or set(annotations) & data.hash_excluded):
            continue
        _put(meta, "annotations", {k: v for k, v in annotations.items() if k not in data.hash_excluded})
        _put(meta, "labels", {k: v for k, v in labels.items() if k != QUEUE_LABEL})
        runner["template"] = {**runner["template"], "metadata": meta}
    return stored


def _put(meta: Obj, key: str, kept: Mapping[str, Any]) -> None:
    if kept:
        meta[key] = dict(kept)
    else:
        meta.pop(key, None)


def collision_count(replica: Mapping[str, Any]) -> int:
    return int((replica.get("status") or {}).get("collisionCount") or 0)


def is_ours(existing: Mapping[str, Any], replica: Mapping[str, Any], data: RevisionData) -> bool:
    """Whether a ControllerRevision that holds our name is this replica's, with this data: else the
    name collides, and the next hash takes another salt."""
    uid = replica["metadata"]["uid"]
    owners = (existing.get("metadata") or {}).get("ownerReferences") or []
    owned = any(r.get("controller") and r.get("uid") == uid for r in owners)
    stored = replace(from_json(existing.get("data") or {}), hash_excluded=data.hash_excluded)
    return owned and _hashed(stored) == _hashed(data)  # a queue label change is the same revision


def controller_revision(
    replica: Mapping[str, Any], data: RevisionData, number: int, digest: str | None = None
) -> Obj:
    """The ControllerRevision for `data` (`digest`: its revision_hash, when the caller has it)."""
    meta = replica["metadata"]
    spec = replica.get("spec") or {}
    base, component = names.base_name(replica), spec["component"]
    digest = digest or revision_hash(data, collision_count(replica))
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": names.revision_name(base, component, digest),
            "namespace": meta["namespace"],
            "labels": {**names.selector_labels(base, component), names.REVISION_HASH_LABEL: digest,
                       **pairing_label(data)},
            "ownerReferences": [owner_reference(replica)],
        },
        "data": data.to_json(),
        "revision": number,
    }


def pairing_label(data: RevisionData) -> dict[str, str]:
    """`ome.io/pairing-protocol` on what carries a revision with a pairing protocol (none without)."""
    return {names.PAIRING_PROTOCOL_LABEL: data.pairing_protocol} if data.pairing_protocol else {}


def owner_reference(replica: Mapping[str, Any]) -> Obj:
    meta = replica["metadata"]
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def next_number(existing: Iterable[Mapping[str, Any]]) -> int:
    return max((int(r.get("revision") or 0) for r in existing), default=0) + 1


def prunable(existing: Iterable[Mapping[str, Any]], live: set[str], limit: int | None) -> list[str]:
    """Names of non-live revisions beyond the newest `limit`; live revisions are never pruned, and
    with no limit (neither configured nor annotated) none is."""
    if limit is None:
        return []
    old = sorted(
        (r for r in existing if r["metadata"]["name"] not in live),
        key=lambda r: int(r.get("revision") or 0),
        reverse=True,
    )
    return [r["metadata"]["name"] for r in old[limit:]]
