"""Runtime revisions and pinning (pure): names, the ControllerRevision body, and the pin decision.

A revision is an immutable snapshot of a runtime's spec, kept as a ControllerRevision in OME's namespace
(the config namespace). Its name depends on spec.runtime.kind: `cr-<runtime>-<hash>` for a
ClusterServingRuntime (the default), `r-<namespace>-<runtime>-<hash>` for a ServingRuntime, with the first
8 hex digits of the sha256 of the spec's canonical JSON as the hash. Labels `ome.io/runtime-of`,
`ome.io/runtime-of-kind`, `ome.io/runtime-of-namespace` and `ome.io/revision-hash` describe the source; a
revision with the same runtime-of and revision-hash labels is reused, so services pinned to the same spec
share one.

`decide` is the runtime-revisions page as a function. Only a service naming spec.runtime.name pins, and it
pins when spec.runtime.autoSync is false or spec.runtime.revision is set:

| situation                                            | renders from | RuntimeDrifted              |
|------------------------------------------------------|--------------|-----------------------------|
| not pinning                                          | live         | last value kept             |
| revision set, missing                                | (paused)     | RevisionMissing             |
| revision set, of another runtime                     | (paused)     | RuntimeMismatch             |
| revision set, found                                  | revision     | SourceRuntimeMissing / none |
| first pin, runtime missing                           | (paused)     | RuntimePinError event       |
| first pin                                            | live         | none (revision created)     |
| pinned revision missing                              | (paused)     | RevisionMissing             |
| runtime missing                                      | revision     | SourceRuntimeMissing        |
| live spec equals the pinned one                      | revision     | none                        |
| live differs, new ome.io/runtime-sync token          | live         | none (pin advanced)         |
| live differs                                         | (paused)     | RevisionMismatch            |

The first three reasons pause updates: the reconciler leaves the serving workload as it is. A service
that stops pinning keeps status.pinnedRevisionName, status.lastRuntimeSyncToken and RuntimeDrifted as
they were, so pinning again resumes from that revision. The sync token is spent once per new value, and
not while spec.runtime.revision is set; a token set while the live spec still equals the pinned one waits.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import orjson

Obj = dict[str, Any]

SERVING_RUNTIME: Final = "ServingRuntime"
CLUSTER_SERVING_RUNTIME: Final = "ClusterServingRuntime"

RUNTIME_OF_LABEL: Final = "ome.io/runtime-of"
RUNTIME_OF_KIND_LABEL: Final = "ome.io/runtime-of-kind"
RUNTIME_OF_NAMESPACE_LABEL: Final = "ome.io/runtime-of-namespace"
REVISION_HASH_LABEL: Final = "ome.io/revision-hash"
CREATED_BY_ANNOTATION: Final = "ome.io/created-by"
CREATED_BY: Final = "ome-controller"
GC_ELIGIBLE_SINCE_ANNOTATION: Final = "ome.io/gc-eligible-since"
SYNC_ANNOTATION: Final = "ome.io/runtime-sync"

PINNED_FIELD: Final = "pinnedRevisionName"
TOKEN_FIELD: Final = "lastRuntimeSyncToken"
STATUS_FIELDS: Final = (PINNED_FIELD, TOKEN_FIELD)

RUNTIME_DRIFTED: Final = "RuntimeDrifted"
REVISION_MISMATCH: Final = "RevisionMismatch"
REVISION_MISSING: Final = "RevisionMissing"
RUNTIME_MISMATCH: Final = "RuntimeMismatch"
SOURCE_RUNTIME_MISSING: Final = "SourceRuntimeMissing"
PAUSING_REASONS: Final = frozenset({REVISION_MISMATCH, REVISION_MISSING, RUNTIME_MISMATCH})
PIN_ERROR: Final = "RuntimePinError"

HASH_LENGTH: Final = 8
_HEX = re.compile(r"^[0-9a-f]{8}$")


# -- names and bodies -----------------------------------------------------------------------------------


def spec_hash(spec: Mapping[str, Any] | None) -> str:
    """The first 8 hex digits of sha256 over the spec's canonical JSON (sorted keys, no spaces)."""
    canonical = orjson.dumps(spec or {}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:HASH_LENGTH]


def source_kind(isvc: Mapping[str, Any]) -> str:
    """ServingRuntime only when spec.runtime.kind says so; ClusterServingRuntime is the CRD default."""
    kind = _dict(_dict(isvc.get("spec")).get("runtime")).get("kind")
    return SERVING_RUNTIME if kind == SERVING_RUNTIME else CLUSTER_SERVING_RUNTIME


def source_namespace(isvc: Mapping[str, Any]) -> str:
    """The ServingRuntime's namespace (the service's own), or "" for a ClusterServingRuntime."""
    if source_kind(isvc) != SERVING_RUNTIME:
        return ""
    return str(_dict(isvc.get("metadata")).get("namespace") or "")


def name_prefix(kind: str, namespace: str, runtime: str) -> str:
    if kind == SERVING_RUNTIME:
        return f"r-{namespace}-{runtime}-"
    return f"cr-{runtime}-"


def revision_name(kind: str, namespace: str, runtime: str, short_hash: str) -> str:
    return name_prefix(kind, namespace, runtime) + short_hash


def matches_runtime(name: str, kind: str, namespace: str, runtime: str) -> bool:
    """Whether `name` has the form of a revision of this runtime: its prefix and 8 lowercase hex."""
    prefix = name_prefix(kind, namespace, runtime)
    return name.startswith(prefix) and bool(_HEX.match(name[len(prefix) :]))


def expected_form(kind: str, namespace: str, runtime: str) -> str:
    return name_prefix(kind, namespace, runtime) + "<8 lowercase hex chars>"


def revision_body(
    *, kind: str, namespace: str, runtime: str, spec: Mapping[str, Any], config_namespace: str, number: int
) -> Obj:
    """The ControllerRevision holding `spec`, in OME's namespace."""
    short = spec_hash(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(kind, namespace, runtime, short),
            "namespace": config_namespace,
            "labels": {
                RUNTIME_OF_LABEL: runtime,
                RUNTIME_OF_KIND_LABEL: kind,
                RUNTIME_OF_NAMESPACE_LABEL: namespace,
                REVISION_HASH_LABEL: short,
            },
            "annotations": {CREATED_BY_ANNOTATION: CREATED_BY},
        },
        "data": orjson.loads(orjson.dumps(spec)),
        "revision": number,
    }


def revision_spec(revision: Mapping[str, Any]) -> Obj:
    """The runtime spec a revision holds."""
    return _dict(revision.get("data"))


# -- the decision -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Drift:
    """RuntimeDrifted=True with this reason and message."""

    reason: str
    message: str

    @property
    def pauses(self) -> bool:
        return self.reason in PAUSING_REASONS


@dataclass(frozen=True, kw_only=True)
class Decision:
    pinning: bool
    """The service pins its runtime (it names one, with autoSync false or a revision)."""
    spec: Obj | None
    """The runtime spec to render from; None with `pinning` means render nothing (paused or pin error)."""
    from_revision: str | None = None
    """The revision `spec` comes from; None when it is the live spec."""
    status: dict[str, str] = field(default_factory=dict)
    """pinnedRevisionName and lastRuntimeSyncToken to write (only those that have a value)."""
    drift: Drift | None = None
    """The RuntimeDrifted condition to report; None removes it."""
    paused: bool = False
    """Leave the serving workload as it is."""
    create: Obj | None = None
    """A ControllerRevision to create (AlreadyExists is fine)."""
    pin_error: str | None = None
    """The service cannot pin at all: the RuntimePinError event's message; the workload is left alone."""


def pins(isvc: Mapping[str, Any]) -> bool:
    ref = _dict(_dict(isvc.get("spec")).get("runtime"))
    if not _text(ref.get("name")):
        return False
    return ref.get("autoSync") is False or bool(_text(ref.get("revision")))


def decide(
    isvc: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    revisions: Sequence[Mapping[str, Any]],
    *,
    config_namespace: str,
    live_problem: str = "",
) -> Decision:
    """Which runtime spec the service renders from, and what its status says about the pin.

    `live` is the live runtime object (None when it is missing or unusable, `live_problem` says why);
    `revisions` are the runtime revisions in `config_namespace`.
    """
    if not pins(isvc):
        return carried(isvc, live)
    kept = carried(isvc).status
    ref = _dict(_dict(isvc.get("spec")).get("runtime"))
    runtime = str(ref["name"])
    by_name = {_name(r): r for r in revisions}
    explicit = _text(ref.get("revision"))
    if explicit:
        return _explicit(explicit, runtime, by_name.get(explicit), live, kept, config_namespace, live_problem)
    pinned = kept.get(PINNED_FIELD)
    token = _text(_dict(_dict(isvc.get("metadata")).get("annotations")).get(SYNC_ANNOTATION))
    if not pinned:
        if live is None:
            error = _pin_error(runtime, live_problem)
            return Decision(pinning=True, spec=None, status=kept, paused=True, pin_error=error)
        # The token present at the first pin counts as spent: only a later value rolls forward.
        status = {**kept, TOKEN_FIELD: token} if token else kept
        return _pin_live(isvc, runtime, live, revisions, status, config_namespace)
    revision = by_name.get(pinned)
    if revision is None:
        drift = Drift(REVISION_MISSING, f"pinned revision {pinned} missing from {config_namespace}")
        return Decision(pinning=True, spec=None, status=kept, drift=drift, paused=True)
    if live is None:
        drift = Drift(SOURCE_RUNTIME_MISSING, _source_missing(runtime, pinned, live_problem))
        spec = revision_spec(revision)
        return Decision(pinning=True, spec=spec, from_revision=pinned, status=kept, drift=drift)
    if spec_hash(_dict(live.get("spec"))) == spec_hash(revision_spec(revision)):
        return Decision(pinning=True, spec=revision_spec(revision), from_revision=pinned, status=kept)
    if token and token != kept.get(TOKEN_FIELD):
        return _pin_live(isvc, runtime, live, revisions, {**kept, TOKEN_FIELD: token}, config_namespace)
    drift = Drift(
        REVISION_MISMATCH, f"pinned {pinned}, live spec differs; bump {SYNC_ANNOTATION} annotation to advance"
    )
    return Decision(pinning=True, spec=None, status=kept, drift=drift, paused=True)


def _explicit(
    name: str,
    runtime: str,
    revision: Mapping[str, Any] | None,
    live: Mapping[str, Any] | None,
    kept: dict[str, str],
    config_namespace: str,
    live_problem: str,
) -> Decision:
    """spec.runtime.revision wins over everything; the sync token waits until it is removed."""
    if revision is None:
        drift = Drift(REVISION_MISSING, f"explicit pin {name} not found in namespace {config_namespace}")
        return Decision(pinning=True, spec=None, status=kept, drift=drift, paused=True)
    owner = _labels(revision).get(RUNTIME_OF_LABEL, "")
    if owner != runtime:
        message = (
            f'revision {name} belongs to runtime "{owner}" but the InferenceService references "{runtime}"'
        )
        drift = Drift(RUNTIME_MISMATCH, message)
        return Decision(pinning=True, spec=None, status=kept, drift=drift, paused=True)
    status = {**kept, PINNED_FIELD: name}
    missing = Drift(SOURCE_RUNTIME_MISSING, _source_missing(runtime, name, live_problem))
    spec = revision_spec(revision)
    if live is None:
        return Decision(pinning=True, spec=spec, from_revision=name, status=status, drift=missing)
    return Decision(pinning=True, spec=spec, from_revision=name, status=status)


def _pin_live(
    isvc: Mapping[str, Any],
    runtime: str,
    live: Mapping[str, Any],
    revisions: Sequence[Mapping[str, Any]],
    status: dict[str, str],
    config_namespace: str,
) -> Decision:
    """Pin to a revision of the live spec: an existing one with the same runtime and hash, or a new one."""
    spec = _dict(live.get("spec"))
    short = spec_hash(spec)
    existing = next(
        (
            r
            for r in sorted(revisions, key=_name)
            if _labels(r).get(RUNTIME_OF_LABEL) == runtime and _labels(r).get(REVISION_HASH_LABEL) == short
        ),
        None,
    )
    create = None
    if existing is not None:
        name = _name(existing)
    else:
        create = revision_body(
            kind=source_kind(isvc),
            namespace=source_namespace(isvc),
            runtime=runtime,
            spec=spec,
            config_namespace=config_namespace,
            number=next_number(revisions, runtime),
        )
        name = create["metadata"]["name"]
    return Decision(pinning=True, spec=spec, status={**status, PINNED_FIELD: name}, create=create)


def carried(isvc: Mapping[str, Any], live: Mapping[str, Any] | None = None) -> Decision:
    """Not pinning: render from the live runtime; the pin fields and RuntimeDrifted keep their last values."""
    old = _dict(isvc.get("status"))
    kept = {k: old[k] for k in STATUS_FIELDS if isinstance(old.get(k), str) and old[k]}
    live_spec = _dict(live.get("spec")) if live is not None else None
    return Decision(pinning=False, spec=live_spec, status=kept, drift=last_drift(isvc))


def next_number(revisions: Iterable[Mapping[str, Any]], runtime: str) -> int:
    """One more than the highest revision number among the runtime's revisions."""
    numbers = [r.get("revision") for r in revisions if _labels(r).get(RUNTIME_OF_LABEL) == runtime]
    return max((n for n in numbers if isinstance(n, int)), default=0) + 1


def last_drift(isvc: Mapping[str, Any]) -> Drift | None:
    """The RuntimeDrifted condition as it stands (True), kept while the service does not pin."""
    for cond in _dict(isvc.get("status")).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == RUNTIME_DRIFTED and cond.get("status") == "True":
            return Drift(str(cond.get("reason") or ""), str(cond.get("message") or ""))
    return None


def _pin_error(runtime: str, problem: str) -> str:
    return f"cannot pin runtime {runtime}: {problem or 'runtime not found'}"


def _source_missing(runtime: str, revision: str, problem: str) -> str:
    detail = problem or f"runtime {runtime} not found"
    return f"{detail}; serving pinned revision {revision}"


# -- garbage collection -------------------------------------------------------------------------------------


KEEP: Final = "keep"
MARK: Final = "mark"
WAIT: Final = "wait"
DELETE: Final = "delete"


@dataclass(frozen=True, slots=True)
class GCAction:
    revision: Obj
    action: str
    """keep, mark (set ome.io/gc-eligible-since), wait, or delete."""
    marked: bool
    """The revision carries ome.io/gc-eligible-since (a kept one has it removed)."""


def referenced_revisions(isvcs: Iterable[Mapping[str, Any]]) -> set[str]:
    """Revision names any service uses: spec.runtime.revision or status.pinnedRevisionName."""
    names: set[str] = set()
    for isvc in isvcs:
        for value in (
            _dict(_dict(isvc.get("spec")).get("runtime")).get("revision"),
            _dict(isvc.get("status")).get(PINNED_FIELD),
        ):
            if _text(value):
                names.add(str(value))
    return names


def gc_plan(
    revisions: Iterable[Obj],
    referenced: set[str],
    now: datetime,
    *,
    retention: int = 10,
    grace: timedelta = timedelta(hours=24),
) -> list[GCAction]:
    """Per runtime name, keep the `retention` newest and every referenced revision; mark the rest, and
    delete a marked one once `grace` has passed since it was marked. Only OME's own revisions count."""
    groups: dict[str, list[Obj]] = {}
    for rev in revisions:
        if _dict(_dict(rev.get("metadata")).get("annotations")).get(CREATED_BY_ANNOTATION) != CREATED_BY:
            continue
        groups.setdefault(_labels(rev).get(RUNTIME_OF_LABEL, ""), []).append(rev)
    plan: list[GCAction] = []
    for group in groups.values():
        group.sort(key=lambda r: (str(_dict(r.get("metadata")).get("creationTimestamp") or ""), _name(r)))
        group.reverse()  # newest first
        for position, rev in enumerate(group):
            since = _dict(_dict(rev.get("metadata")).get("annotations")).get(GC_ELIGIBLE_SINCE_ANNOTATION)
            marked = since is not None
            if position < retention or _name(rev) in referenced:
                plan.append(GCAction(rev, KEEP, marked))
                continue
            moment = _parse_time(since)
            if moment is None:
                plan.append(GCAction(rev, MARK, marked))
            elif now - moment >= grace:
                plan.append(GCAction(rev, DELETE, marked))
            else:
                plan.append(GCAction(rev, WAIT, marked))
    return plan


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


# -- loose JSON helpers --------------------------------------------------------------------------------------


def _name(obj: Mapping[str, Any]) -> str:
    return str(_dict(obj.get("metadata")).get("name") or "")


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return _dict(_dict(obj.get("metadata")).get("labels"))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
