"""What the metadata controller does for one `pvc://` model: a pure planner over cached objects.

States (the model's `status.state` and the reason on its `Ready` and `SourceReachable` conditions), as
serve-models-from-pvc.md lists them, and what moves a model between them:

    Failed     PVCInvalid                  the URI is malformed or has the wrong form for the kind (an edit)
    Failed     PVCNotFound                 no claim (its creation wakes the model)
    In_Transit PVCNotBound                 the claim is not Bound (its binding wakes the model)
    Failed     PVCConfigMissing            no ome-agent image configured (a restart with one)
    In_Transit PVCMetadataExtracting       the Job is created, running, or done without a result yet
    Ready      PVCMetadataReady            the result says Ready: empty spec fields are filled from it
    Failed     PVCMetadataExtractionFailed the result says Failed, or the Job failed without writing one

The result (the agent's ConfigMap entry) decides once it exists, whatever the Job's state: the Job only
matters while there is no result. A Job of the model under another name belongs to an earlier URI: it is
deleted, and so is the result, which described the old sub-path. A model that is gone or being deleted
gets its Jobs and result deleted. Every plan is a pure function of its inputs, so a model whose objects
already match writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.config.ome_agent import OmeAgentConfig
from ome.controllers.modelmetadata import job as jobs
from ome.models import status as model_status
from ome.models import storage
from ome.models.entries import Entry

Obj = dict[str, Any]

IN_TRANSIT: Final = model_status.IN_TRANSIT
READY: Final = model_status.READY
FAILED: Final = model_status.FAILED
SOURCE_REACHABLE: Final = "SourceReachable"
CONDITION_READY: Final = "Ready"
PVC_INVALID: Final = "PVCInvalid"
PVC_NOT_FOUND: Final = "PVCNotFound"
PVC_NOT_BOUND: Final = "PVCNotBound"
PVC_CONFIG_MISSING: Final = "PVCConfigMissing"
PVC_METADATA_EXTRACTING: Final = "PVCMetadataExtracting"
PVC_METADATA_READY: Final = "PVCMetadataReady"
PVC_METADATA_EXTRACTION_FAILED: Final = "PVCMetadataExtractionFailed"
PVC_VALIDATED: Final = "PVCValidated"
CLUSTER_URI_NEEDS_NAMESPACE: Final = ("ClusterBaseModel PVC URI must specify a namespace "
                                      "(format: pvc://{namespace}:{pvc-name}/{sub-path})")
NAMESPACED_URI_HAS_NAMESPACE: Final = ("namespaced BaseModel PVC URI must not specify a namespace; "
                                       "the BaseModel's own namespace is used")
REACHABLE: Final = "PVC is reachable"
IMAGE_MISSING: Final = "ome-agent image is not configured (set the omeAgent block in inferenceservice-config)"


@dataclass(frozen=True, slots=True)
class Verdict:
    state: str
    reason: str
    message: str
    reachable: bool
    reachable_reason: str = ""
    reachable_message: str = ""


@dataclass(frozen=True, slots=True)
class Claim:
    """Where the model's weights are: the claim's namespace and name, and the sub-path on it."""

    namespace: str
    name: str
    sub_path: str


@dataclass(frozen=True, slots=True)
class Inputs:
    model: Obj
    claim: Obj | None = None
    """The PVC the URI names, from the cache (None: not found)."""
    jobs: Sequence[Obj] = ()
    """The model's metadata Jobs, found by their labels."""
    result: Obj | None = None
    """The agent's ConfigMap `pvc-metadata-<hash>` in OME's namespace (None: not written yet)."""
    agent: OmeAgentConfig = field(default_factory=OmeAgentConfig)
    ome_namespace: str = "ome"


@dataclass(frozen=True, slots=True)
class Plan:
    verdict: Verdict | None = None
    """None: leave the status alone (the model is gone or being deleted)."""
    create_job: Obj | None = None
    ensure_identity: tuple[Obj, Obj] | None = None
    """The ServiceAccount and RoleBinding the new Job needs, outside OME's own namespace."""
    delete_jobs: tuple[tuple[str, str], ...] = ()
    delete_result: bool = False
    spec_fill: Obj = field(default_factory=dict)


def claim_of(model: Obj) -> Claim | str:
    """The claim a `pvc://` URI names, or the documented message of why the URI is invalid."""
    uri = storage.storage_of(model).get("storageUri") or ""
    own_ns = model["metadata"].get("namespace") or ""
    try:
        source = storage.parse(uri)
    except storage.StorageUriError as exc:
        problem = str(exc).rpartition(": ")[2]
        return f"invalid PVC storage URI {json.dumps(uri)}: invalid PVC storage URI format: {problem}"
    if not isinstance(source, storage.PvcSource):
        return f"not a PVC storage URI: {json.dumps(uri)}"
    if not own_ns and not source.namespace:
        return CLUSTER_URI_NEEDS_NAMESPACE
    if own_ns and source.namespace:
        return NAMESPACED_URI_HAS_NAMESPACE
    return Claim(source.namespace or own_ns, source.claim, source.sub_path)


def _failed(reason: str, message: str) -> Verdict:
    return Verdict(FAILED, reason, message, False, reason, message)


def _in_transit(reason: str, message: str) -> Verdict:
    return Verdict(IN_TRANSIT, reason, message, True, reason, message)


def _extraction_failed(message: str) -> Verdict:
    # The claim worked (SourceReachable stays True); reading the model from it did not.
    return Verdict(FAILED, PVC_METADATA_EXTRACTION_FAILED, message, True, PVC_VALIDATED, REACHABLE)


def _job_failure(job: Obj | None) -> str | None:
    """The message of a Job that gave up (its Failed condition), or None while it may still succeed."""
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Failed" and cond.get("status") == "True":
            reason, message = cond.get("reason") or "", cond.get("message") or ""
            text = f"{reason}: {message}" if reason else message
            return text or "metadata extraction Job exhausted its retry budget"
    return None


def _from_result(inputs: Inputs, cm_name: str, job: Obj | None, job_ref: str) -> tuple[Verdict, Obj]:
    meta = inputs.model["metadata"]
    if inputs.result is None:
        failure = _job_failure(job)
        if failure is not None:
            return _extraction_failed(failure), {}
        return _in_transit(PVC_METADATA_EXTRACTING, f"metadata extraction Job {job_ref} created"), {}
    key = jobs.result_key(meta["name"], meta.get("namespace"))
    raw = (inputs.result.get("data") or {}).get(key)
    if raw is None:
        return _in_transit(PVC_METADATA_EXTRACTING,
                           f"PVC metadata ConfigMap {cm_name} lacks entry {json.dumps(key)} yet"), {}
    entry = Entry.loads(raw)
    if entry is None:
        return _in_transit(PVC_METADATA_EXTRACTING,
                           f"PVC metadata ConfigMap {cm_name} entry is not valid JSON"), {}
    if entry.status == READY:
        fill = _fill(inputs.model, entry)
        message = f"PVC metadata extraction succeeded; ConfigMap {cm_name} applied"
        return Verdict(READY, PVC_METADATA_READY, message, True, PVC_VALIDATED, REACHABLE), fill
    if entry.status == FAILED:
        annotations = inputs.result["metadata"].get("annotations") or {}
        message = (annotations.get(jobs.LAST_ERROR_ANNOTATION)
                   or "agent reported Failed without an error message")
        return _extraction_failed(message), {}
    progress = f"PVC metadata extraction in progress (ConfigMap status={json.dumps(entry.status)})"
    return _in_transit(PVC_METADATA_EXTRACTING, progress), {}


def _fill(model: Obj, entry: Entry) -> Obj:
    # `ome.oracle.com/skip-config-parsing` is the model agent's: "OME ignores it for a model on a PVC".
    return model_status.spec_fill(model.get("spec") or {}, entry.config) if entry.config else {}


def _ref(job: Obj) -> tuple[str, str]:
    return (job["metadata"]["namespace"], job["metadata"]["name"])


def cleanup(found_jobs: Sequence[Obj], result: Obj | None) -> Plan:
    """The model is gone or being deleted: its Jobs and its result go with it."""
    live = tuple(_ref(j) for j in found_jobs if not j["metadata"].get("deletionTimestamp"))
    return Plan(delete_jobs=live, delete_result=result is not None)


def plan(inputs: Inputs) -> Plan:
    model = inputs.model
    meta = model["metadata"]
    if meta.get("deletionTimestamp"):
        return cleanup(inputs.jobs, inputs.result)
    claim = claim_of(model)
    if isinstance(claim, str):
        return Plan(_failed(PVC_INVALID, claim))
    if inputs.claim is None:
        return Plan(_failed(PVC_NOT_FOUND, f"PVC {claim.namespace}/{claim.name} not found"))
    phase = (inputs.claim.get("status") or {}).get("phase") or "Pending"
    if phase != "Bound":
        message = f"PVC {claim.namespace}/{claim.name} is not Bound (phase: {phase})"
        return Plan(_in_transit(PVC_NOT_BOUND, message))
    if not inputs.agent.image:
        return Plan(_failed(PVC_CONFIG_MISSING, IMAGE_MISSING))
    want = jobs.build_job(model, claim=claim.name, sub_path=claim.sub_path, job_namespace=claim.namespace,
                          image=inputs.agent.image, cfg=inputs.agent.metadata_job,
                          ome_namespace=inputs.ome_namespace)
    want_ref = _ref(want)
    current = next((j for j in inputs.jobs if _ref(j) == want_ref), None)
    stale = tuple(_ref(j) for j in inputs.jobs
                  if _ref(j) != want_ref and not j["metadata"].get("deletionTimestamp"))
    job_ref = f"{want_ref[0]}/{want_ref[1]}"
    cm_name = jobs.result_configmap_name(meta["name"], meta.get("namespace"))
    if stale:
        # Jobs of an earlier URI: their result describes the old sub-path, so it goes too; the new Job
        # is created once they are gone (the next pass), never next to a result it did not write.
        return Plan(_in_transit(PVC_METADATA_EXTRACTING, f"metadata extraction Job {job_ref} created"),
                    delete_jobs=stale, delete_result=inputs.result is not None)
    if current is None:
        identity = None
        if claim.namespace != inputs.ome_namespace:
            account = inputs.agent.metadata_job.service_account
            identity = (jobs.service_account(claim.namespace, account),
                        jobs.role_binding(claim.namespace, account, inputs.ome_namespace))
        # As in v1.3, a new Job (the old one deleted, or removed after its TTL) means In_Transit for a
        # moment: the next pass reads the result again, the previous run's until the new one overwrites it.
        return Plan(_in_transit(PVC_METADATA_EXTRACTING, f"metadata extraction Job {job_ref} created"),
                    create_job=want, ensure_identity=identity)
    verdict, fill = _from_result(inputs, cm_name, current, job_ref)
    return Plan(verdict, spec_fill=fill)


def desired_status(model: Obj, verdict: Verdict, now: str) -> Obj:
    """state plus the SourceReachable and Ready conditions; a condition's time moves only on a flip."""
    current = {c.get("type"): c for c in (model.get("status") or {}).get("conditions") or []}
    generation = model["metadata"].get("generation", 0)

    def condition(kind: str, true: bool, reason: str, message: str) -> Obj:
        value = "True" if true else "False"
        old = current.get(kind)
        moved = old is None or old.get("status") != value
        return {"type": kind, "status": value, "reason": reason, "message": message or reason,
                "lastTransitionTime": now if moved else old["lastTransitionTime"],  # type: ignore[index]
                "observedGeneration": generation}

    conditions = [condition(SOURCE_REACHABLE, verdict.reachable, verdict.reachable_reason or verdict.reason,
                            verdict.reachable_message or verdict.message),
                  condition(CONDITION_READY, verdict.state == READY, verdict.reason, verdict.message)]
    return {"state": verdict.state, "nodesReady": [], "nodesFailed": [], "conditions": conditions,
            "observedGeneration": generation}


def status_differs(model: Obj, desired: Obj) -> bool:
    return model_status.status_differs(model, desired, (SOURCE_REACHABLE, CONDITION_READY))


__all__ = ["Claim", "Inputs", "Plan", "Verdict", "claim_of", "cleanup", "desired_status", "plan",
           "status_differs"]
