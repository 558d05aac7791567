"""InferenceService validation: the documented rejections and warnings, in the order users meet them.

`validate(request, reader)` is the whole rule set; the handler in registry.py only wraps it. Rules that
need no cluster state take the spec and return the first error (or warnings); the rules that look up
models, runtimes and replicas read the shared cache through `reader`, synchronously, never the API.

Order: an update to an object being deleted passes (denying the finalizer removal would wedge it);
then the scaling policy and the spec.replicaRefs block (so a referenced service gets the specific
message, not the model-or-runtime one), the spec's shape, the runtime pin (spec.runtime.revision), and
last the references to models and runtimes, whose resolution yields the auto-selection and "does not
declare support" warnings.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ome.omenative import migration_request
from ome.resolution import models, modes, runtime_inheritance, runtimes
from ome.resolution import runtime_revisions as rr
from ome.webhooks import annotation_validation, autoscaler_admission, canary_validation, replica_refs
from ome.webhooks import inferenceservice_rollout as rollout
from ome.webhooks.basemodel_validation import cluster_pvc_namespace_error as pvc_namespace_error
from ome.webhooks.handler import CREATE, UPDATE, AdmissionRequest, Outcome
from ome.webhooks.loose import as_dict, declared_components, dig, is_int, text
from ome.webhooks.rollout_group_validation import validate as rollout_group_error
from ome.webhooks.rollout_group_validation import warnings as rollout_group_warnings

Obj = dict[str, Any]

NAME_PATTERN: Final = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
_NAME = re.compile(NAME_PATTERN)
AT_LEAST_ONE: Final = "at least one of spec.model or spec.runtime must be set"
INVALID_LEADER_WORKER_PAIRING: Final = "InvalidLeaderWorkerPairing"


Reader = runtimes.Reader


def validate(request: AdmissionRequest, reader: Reader) -> Outcome:
    spec = request.spec
    old_spec = as_dict(request.old.get("spec")) if request.old is not None else None
    if request.operation == UPDATE and dig(request.old, "metadata", "deletionTimestamp"):
        return Outcome()
    if (error := rollout.scaling_policy_error(spec, old_spec)) is not None:
        return Outcome.deny(error)
    if (error := _replica_refs_error(request, reader, spec, old_spec)) is not None:
        return Outcome.deny(error)
    if (error := spec_error(request.name, spec)) is not None:
        return Outcome.deny(error)
    if (error := rollout_group_error(spec, old_spec)) is not None:
        return Outcome.deny(error)
    if (error := autoscaler_admission.isvc_error(request.obj)) is not None:
        return Outcome.deny(error)
    if (error := migration_request.admission_error(request.obj, request.old)) is not None:
        return Outcome.deny(error)
    annotation_error, annotation_warnings = annotation_validation.validate(request.obj)
    if annotation_error is not None:
        return Outcome.deny(annotation_error, annotation_warnings)
    warnings = annotation_warnings + deployment_strategy_warnings(spec) + rollout_group_warnings(spec)
    if (error := references_error(spec)) is not None:
        return Outcome.deny(error, warnings)
    if (error := runtime_pin_error(request.namespace, spec)) is not None:
        return Outcome.deny(error, warnings)
    outcome = resolve_references(reader, request.obj)
    return Outcome(outcome.denial, warnings + outcome.warnings)


def _replica_refs_error(
    request: AdmissionRequest, reader: Reader, spec: Obj, old_spec: Obj | None
) -> str | None:
    if (error := replica_refs.shape_error(spec)) is not None:
        return error
    if old_spec is not None:
        return replica_refs.fixed_error(old_spec, spec)
    if request.operation == CREATE:
        return replica_refs.live_error(reader, request.namespace, request.name, spec)
    return None


# -- the spec's own shape ------------------------------------------------------------------------------


def spec_error(name: str, spec: Obj) -> str | None:
    """Rules that need nothing but the InferenceService; the first failing one wins."""
    if not _NAME.match(name):
        return f"InferenceService name {name!r} is invalid: it must match {NAME_PATTERN}"
    for rule in (
        deployment_mode_error,
        leader_worker_error,
        mode_combination_error,
        replica_bounds_error,
        rollout.lifecycle_error,
        canary_validation.canary_groups_error,
        rollout.rollout_groups_error,
    ):
        if (error := rule(spec)) is not None:
            return error
    return None


def deployment_mode_error(spec: Obj) -> str | None:
    mode = spec.get("deploymentMode")
    if mode is None or (isinstance(mode, str) and mode in modes.SPEC_MODES):
        return None
    return f"spec.deploymentMode {mode!r} is not supported: use OMENative or RawDeployment"


def leader_worker_error(spec: Obj) -> str | None:
    """An engine or decoder has both leader and worker or neither, a positive worker.size, named runners."""
    for name in ("engine", "decoder"):
        component = as_dict(spec.get(name))
        leader, worker = component.get("leader"), component.get("worker")
        if leader is None and worker is None:
            continue
        if worker is None:
            return (
                f"{INVALID_LEADER_WORKER_PAIRING}: spec.{name}.leader is set without spec.{name}.worker; "
                "a multi-pod Instance needs both (LeaderRequiresWorker)"
            )
        if leader is None:
            return (
                f"{INVALID_LEADER_WORKER_PAIRING}: spec.{name}.worker is set without spec.{name}.leader; "
                "a multi-pod Instance needs both (WorkerRequiresLeader)"
            )
        size = as_dict(worker).get("size")
        if size is not None and (not is_int(size) or size <= 0):
            return (
                f"{INVALID_LEADER_WORKER_PAIRING}: spec.{name}.worker.size must be a positive integer; leave "
                "it unset to take the runtime's size, or 1 (WorkerSizeMustBePositive)"
            )
        for role, part in (("leader", leader), ("worker", worker)):
            runner = as_dict(part).get("runner")
            if runner is not None and not text(as_dict(runner).get("name")):
                return f"spec.{name}.{role}.runner.name is required: a runner under {role} needs a name"
    return None


def mode_combination_error(spec: Obj) -> str | None:
    """With an engine and a decoder, when either declares OMENative both must declare the same mode."""
    if spec.get("engine") is None or spec.get("decoder") is None:
        return None
    engine, decoder = rollout.component_mode(spec, "engine"), rollout.component_mode(spec, "decoder")
    if modes.OMENATIVE not in (engine, decoder) or engine == decoder:
        return None
    return (
        f'InvalidDeploymentModeCombination: engine deploymentMode="{engine}" does not match decoder '
        f'deploymentMode="{decoder}"; when either is OMENative, both must use the same value'
    )


def replica_bounds_error(spec: Obj) -> str | None:
    """minReplicas >= 0; an explicit maxReplicas >= 1 (0 means unset) and not below minReplicas. The
    messages are v1.3's: the bound's own text after the component's path (component-autoscaling.md lists
    `must be <= maxReplicas`)."""
    for name, component in declared_components(spec).items():
        low, high = component.get("minReplicas"), component.get("maxReplicas")
        low = low if is_int(low) else None
        high = high if is_int(high) and high != 0 else None
        if low is not None and low < 0:
            return f"spec.{name}.minReplicas must be >= 0"
        if high is not None and high < 1:
            return f"spec.{name}.maxReplicas must be >= 1"
        if low is not None and high is not None and low > high:
            return f"spec.{name}.minReplicas ({low}) must be <= maxReplicas ({high})"
    return None


def deployment_strategy_warnings(spec: Obj) -> list[str]:
    """A deploymentStrategy is honoured only by RawDeployment; warn where the component declares OMENative."""
    warnings = []
    for name, component in declared_components(spec).items():
        mode = rollout.component_mode(spec, name)
        if component.get("deploymentStrategy") is not None and mode == modes.OMENATIVE:
            warnings.append(
                f'{name}.deploymentStrategy is set but deploymentMode is "{mode}"; '
                "deploymentStrategy applies only to RawDeployment and is ignored here — "
                f"use {name}.lifecycle.updateStrategy.rollingUpdate for rollout pacing"
            )
    return warnings


# -- references to models and runtimes ----------------------------------------------------------------


def references_error(spec: Obj) -> str | None:
    """At least one of spec.model or spec.runtime, unless the service fronts referenced replicas."""
    if text(dig(spec, "model", "name")) or text(dig(spec, "runtime", "name")):
        return None
    if replica_refs.referenced(spec, "engine"):
        return None
    return AT_LEAST_ONE


def runtime_pin_error(namespace: str, spec: Obj) -> str | None:
    """spec.runtime.revision needs autoSync false and a name of the form the runtime's revisions have;
    whether the revision exists is left to the controller (RevisionMissing)."""
    ref = as_dict(spec.get("runtime"))
    revision = text(ref.get("revision"))
    if not revision:
        return None
    if ref.get("autoSync") is not False:
        return (
            "spec.runtime.revision requires spec.runtime.autoSync=false; AutoSync=true would silently "
            "ignore the pin"
        )
    pinned = {"metadata": {"namespace": namespace}, "spec": spec}
    kind, source_ns, runtime = rr.source_kind(pinned), rr.source_namespace(pinned), text(ref.get("name"))
    if rr.matches_runtime(revision, kind, source_ns, runtime):
        return None
    return (
        f'spec.runtime.revision "{revision}" does not match the expected naming convention for runtime '
        f'"{runtime}" ({kind}); expected the form {rr.expected_form(kind, source_ns, runtime)}'
    )


def resolve_references(reader: Reader, isvc: Obj) -> Outcome:
    """The model must exist; with an engine, the runtime must resolve (named, or auto-selected when the
    engine does not bring its own runner image)."""
    spec = as_dict(isvc.get("spec"))
    try:
        model = models.resolve_model(reader, isvc)
    except models.ModelNotFound as exc:
        return Outcome.deny(exc.message)
    namespace = text(dig(isvc, "metadata", "namespace"))
    if model is not None and (error := pvc_namespace_error(model.obj, namespace)) is not None:
        return Outcome.deny(error)
    if model is not None and model.disabled:
        return Outcome.deny(f"model {model.name} is disabled")
    if not isinstance(spec.get("engine"), dict):
        return Outcome()
    named = text(dig(spec, "runtime", "name"))
    if model is None:
        return _runtime_only(reader, isvc) if named else Outcome()
    if not named and has_full_runner(as_dict(spec.get("engine"))):
        return Outcome()
    try:
        resolved = runtimes.resolve_runtime(reader, isvc, model)
    except models.ResolutionError as exc:
        return Outcome.deny(exc.message)
    return Outcome(warnings=list(resolved.warnings))


def _runtime_only(reader: Reader, isvc: Obj) -> Outcome:
    """Without a model there is nothing to match: only a disabled runtime or a broken inheritance chain is
    rejected here. A missing one is left to the controller, which reports it in RuntimeReady; a pinned one
    renders its snapshot."""
    if dig(isvc, "spec", "runtime", "autoSync") is False:
        return Outcome()
    try:
        runtimes.resolve_runtime(reader, isvc, None)
    except (runtimes.RuntimeDisabled, runtime_inheritance.InheritanceError) as exc:
        return Outcome.deny(exc.message)
    except models.ResolutionError:
        return Outcome()
    return Outcome()


def has_full_runner(engine: Obj) -> bool:
    """The engine brings its own image: runner.image, or both leader.runner.image and worker.runner.image."""
    if text(dig(engine, "runner", "image")):
        return True
    return bool(
        text(dig(engine, "leader", "runner", "image")) and text(dig(engine, "worker", "runner", "image"))
    )
