"""Build each declared component of an InferenceService: merged spec, mode, pod specs, labels.

Input is the InferenceService, its resolved runtime and model (both optional) and the controller config;
output is one `ComponentPlan` per declared component, in reconcile order. Only declared components exist:
a runtime's routerConfig adds no router. Renderers (rawdeployment.py, omenative.py, multinode.py) turn a
plan into objects.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.models import labels as model_labels
from ome.models import storage as storage_uris
from ome.resolution import accelerators as accelerator_classes
from ome.resolution import fine_tuned as fine_tuned_weights
from ome.resolution import modes, naming, pod_defaults, workload_metadata
from ome.resolution.fine_tuned import FineTuned
from ome.resolution.merge import MAIN_CONTAINER, apply_runner, merge_component, strategic_merge, upsert_env

Obj = dict[str, Any]

RUNTIME_CONFIG_KEYS: Final = {"engine": "engineConfig", "decoder": "decoderConfig", "router": "routerConfig"}
# Component fields that are not pod fields: they configure the workload, not the pod template.
COMPONENT_ONLY_FIELDS: Final = frozenset(
    {
        "minReplicas", "maxReplicas", "timeoutSeconds", "labels", "annotations", "servicePortAppProtocols",
        "minAvailable", "maxUnavailable", "deploymentStrategy", "lifecycle", "autoscaler",
        "autoscalerPolicyRef", "runner", "leader", "worker", "config", "topologyKey", "topologySpread",
        "topologySpreadKey", "acceleratorOverride", "size", "kedaConfig", "scaleTarget", "scaleMetric",
    }
)  # fmt: skip
MODEL_PATH_ENV: Final = "MODEL_PATH"
OVERLAY_ROOT: Final = "/opt/ml/model-overlays"
PVC_MOUNT_PATH: Final = "/opt/ml/model"
"""Where serving pods mount a `pvc://` model's sub-path (serve-models-from-pvc page)."""


@dataclass(frozen=True, slots=True)
class ModelSource:
    """A model the serving pods mount: the primary model or an overlay, on the node or on a claim."""

    kind: str
    name: str
    namespace: str | None
    path: str | None
    """Where the pods see the weights: spec.storage.path on the node, or PVC_MOUNT_PATH for a claim;
    None when there is nothing to mount."""
    claim: str | None = None
    """The PersistentVolumeClaim of a `pvc://` model: mounted, and no node is selected for it."""
    sub_path: str | None = None
    """The claim's directory that holds the model (the URI's path), mounted as the volume's subPath."""

    @classmethod
    def from_object(cls, kind: str, obj: Mapping[str, Any]) -> ModelSource:
        meta = obj.get("metadata") or {}
        storage = (obj.get("spec") or {}).get("storage") or {}
        namespace = meta.get("namespace") if kind == "BaseModel" else None
        name = meta.get("name", "")
        uri = storage.get("storageUri") or ""
        if storage_uris.scheme_of(uri) == "pvc":
            try:
                source = storage_uris.parse(uri)
            except storage_uris.StorageUriError:
                source = None  # the model is Failed (PVCInvalid) and the webhook denies its services
            if isinstance(source, storage_uris.PvcSource):
                return cls(kind, name, namespace, PVC_MOUNT_PATH, source.claim, source.sub_path)
        return cls(kind, name, namespace, storage.get("path"))


@dataclass(frozen=True, slots=True)
class ComponentPlan:
    """Everything a renderer needs for one component."""

    isvc: str
    namespace: str
    component: str
    decision: modes.ModeDecision
    merged: Obj
    """The runtime's config for the component merged with the InferenceService's."""
    pod_spec: Obj
    """The pod spec of a single-pod replica (or of the leader when there is no `leader` block)."""
    leader_pod_spec: Obj | None
    worker_pod_spec: Obj | None
    worker_size: int
    labels: dict[str, str]
    annotations: dict[str, str]
    runtime_name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return self.decision.mode

    @property
    def name(self) -> str:
        return naming.component_name(self.isvc, self.component)

    @property
    def multi_pod(self) -> bool:
        return self.leader_pod_spec is not None


def declared_components(isvc: Mapping[str, Any]) -> list[str]:
    spec = isvc.get("spec") or {}
    return [c for c in modes.COMPONENTS if spec.get(c) is not None]


def build_plans(
    isvc: Mapping[str, Any],
    runtime: Mapping[str, Any] | None,
    model: ModelSource | None,
    config: InferenceServiceConfig,
    *,
    overlays: Sequence[ModelSource] = (),
    runtime_name: str | None = None,
    fine_tuned: FineTuned | None = None,
    accelerators: Mapping[str, Mapping[str, Any]] | None = None,
    model_facts: workload_metadata.ModelFacts | None = None,
) -> list[ComponentPlan]:
    """One plan per declared component, engine then decoder then router.

    `accelerators` maps a component to its AcceleratorClass (accelerators.select_all); none: no class.
    `model_facts` feed the base-model labels and annotations (ModelFacts.from_object of the model);
    without them a model contributes only its name.
    """
    spec = isvc.get("spec") or {}
    runtime_spec = (runtime or {}).get("spec") or {}
    return [
        build_plan(
            isvc,
            component,
            merge_component(runtime_spec.get(RUNTIME_CONFIG_KEYS[component]), spec[component]),
            model,
            config,
            overlays=overlays,
            runtime_name=runtime_name,
            fine_tuned=fine_tuned,
            accelerator=(accelerators or {}).get(component),
            accelerator_settings=_accelerator_settings(
                isvc, runtime_spec, (accelerators or {}).get(component), model_facts
            ),
            model_facts=model_facts,
        )
        for component in declared_components(isvc)
    ]


def build_plan(
    isvc: Mapping[str, Any],
    component: str,
    merged: Obj,
    model: ModelSource | None,
    config: InferenceServiceConfig,
    *,
    overlays: Sequence[ModelSource] = (),
    runtime_name: str | None = None,
    fine_tuned: FineTuned | None = None,
    accelerator: Mapping[str, Any] | None = None,
    accelerator_settings: Mapping[str, Any] | None = None,
    model_facts: workload_metadata.ModelFacts | None = None,
) -> ComponentPlan:
    """Raises FineTunedError when fine-tuned weights are named but the config cannot serve them.

    `accelerator` is the component's AcceleratorClass (engine and decoder only), applied to every pod.
    Every pod's `ome-container` gets the default readiness probe unless it has one; router pods run
    under the router's own ServiceAccount (router_rbac.py).
    """
    meta = isvc.get("metadata") or {}
    decision = modes.resolve(component, merged, (isvc.get("spec") or {}).get("deploymentMode"))
    grace = config.deploy.termination_grace_period_seconds
    serves_model = component != "router"
    base = _pod_spec(merged, merged.get("runner"), grace)
    if component == "router":
        _add_router_config(base, merged)
    leader, worker, size = _leader_worker(merged, grace)
    pod_specs = [s for s in (base, leader, worker) if s is not None]
    tuned = fine_tuned if serves_model else None
    if model_facts is None and model is not None:
        model_facts = workload_metadata.ModelFacts(model.name)
    labels = workload_metadata.workload_labels(
        isvc, component, merged.get("labels"), runtime_name, model_facts, fine_tuned_serving=tuned is not None
    )
    annotations = workload_metadata.workload_annotations(
        isvc, merged.get("annotations"), runtime_name, model_facts
    )
    if serves_model:
        # Merged fine-tuned weights need no base-model files: no mount, no MODEL_PATH, no node selector.
        base_model = None if tuned is not None and tuned.merged else model
        for pod_spec, block in ((base, None), (leader, "leader"), (worker, "worker")):
            if pod_spec is not None:
                has_runner = _runner_of(merged, block) is not None
                inject_models(pod_spec, base_model, overlays, model_path_env=tuned is None, runner=has_runner)
    if tuned is not None:
        entry = fine_tuned_weights.check_config(config.fine_tuned_adapter)
        for pod_spec in pod_specs:
            fine_tuned_weights.inject(pod_spec, main_container(pod_spec), tuned, entry)
        labels.update(fine_tuned_weights.pod_labels(tuned))
        annotations.update(fine_tuned_weights.pod_annotations(tuned))
    if serves_model and accelerator is not None:
        own = (isvc.get("spec") or {}).get(component) or {}
        node_selector = tuned is None or not tuned.merged
        targets: list[tuple[Obj | None, str | None]] = [(base, None), (leader, "leader"), (worker, "worker")]
        for target, block in targets:
            if target is not None:
                _apply_accelerator(
                    target,
                    merged,
                    own,
                    block,
                    accelerator,
                    node_selector=node_selector,
                    settings=accelerator_settings,
                )
    for pod_spec in pod_specs:
        pod_defaults.add_readiness_probe(pod_spec)
        if component == "router":  # as the Go manager does, whatever the spec names
            pod_spec["serviceAccountName"] = naming.component_name(meta["name"], "router")
    return ComponentPlan(
        isvc=meta["name"],
        namespace=meta.get("namespace", ""),
        component=component,
        decision=decision,
        merged=merged,
        pod_spec=base,
        leader_pod_spec=leader,
        worker_pod_spec=worker,
        worker_size=size,
        labels=labels,
        annotations=annotations,
        runtime_name=runtime_name,
    )


def _apply_accelerator(
    pod_spec: Obj,
    merged: Mapping[str, Any],
    own: Mapping[str, Any],
    block: str | None,
    accelerator: Mapping[str, Any],
    *,
    node_selector: bool,
    settings: Mapping[str, Any] | None = None,
) -> None:
    """The class on one pod; what the InferenceService sets itself (component, then leader/worker) wins."""
    own_block = (own.get(block) or {}) if block is not None else {}
    merged_block = (merged.get(block) or {}) if block is not None else {}
    runner = merged_block.get("runner") or merged.get("runner")
    own_runner = own_block.get("runner") or own.get("runner") or {}
    accelerator_classes.apply(
        pod_spec,
        main_container(pod_spec, runner),
        accelerator,
        own_node_selector={**(own.get("nodeSelector") or {}), **(own_block.get("nodeSelector") or {})},
        own_affinity=bool(own.get("affinity") or own_block.get("affinity")),
        own_resources=bool(own_runner.get("resources")),
        node_selector=node_selector,
        settings=settings,
    )


def _accelerator_settings(
    isvc: Mapping[str, Any],
    runtime_spec: Mapping[str, Any],
    accelerator: Mapping[str, Any] | None,
    facts: workload_metadata.ModelFacts | None,
) -> Mapping[str, Any] | None:
    """The runtime's acceleratorConfig for the component's class; OME chose the runtime when none is named."""
    if accelerator is None:
        return None
    named = ((isvc.get("spec") or {}).get("runtime") or {}).get("name")
    return accelerator_classes.runtime_settings(
        runtime_spec,
        str((accelerator.get("metadata") or {}).get("name") or ""),
        model_format=facts.format if facts is not None else "",
        auto_selected=not named,
    )


def pod_fields(spec: Mapping[str, Any]) -> Obj:
    """The pod-spec part of a component (or of its leader/worker block)."""
    return {k: copy.deepcopy(v) for k, v in spec.items() if k not in COMPONENT_ONLY_FIELDS and v is not None}


def _pod_spec(spec: Mapping[str, Any], runner: Mapping[str, Any] | None, grace: int | None) -> Obj:
    pod = apply_runner(pod_fields(spec), runner)
    if grace is not None and pod.get("terminationGracePeriodSeconds") is None:
        pod["terminationGracePeriodSeconds"] = grace
    return pod


def _leader_worker(merged: Obj, grace: int | None) -> tuple[Obj | None, Obj | None, int]:
    """Leader and worker pod specs: each block's pod fields over the component's, with its own runner."""
    leader_block, worker_block = merged.get("leader"), merged.get("worker")
    if leader_block is None and worker_block is None:
        return None, None, 0
    base = pod_fields(merged)
    leader_block = leader_block or {}
    leader_runner = leader_block.get("runner") or merged.get("runner")
    leader = _pod_spec(strategic_merge(base, pod_fields(leader_block)), leader_runner, grace)
    worker_block = worker_block or {}
    worker_runner = worker_block.get("runner") or merged.get("runner")
    worker = _pod_spec(strategic_merge(base, pod_fields(worker_block)), worker_runner, grace)
    return leader, worker, int(worker_block.get("size") or 1)


def _runner_of(merged: Mapping[str, Any], block: str | None) -> Any:
    """The runner a pod spec was built with: its leader/worker block's, else the component's."""
    own = (merged.get(block) or {}).get("runner") if block is not None else None
    return own or merged.get("runner")


def _add_router_config(pod_spec: Obj, merged: Mapping[str, Any]) -> None:
    """A router's `config` map becomes env vars of its main container (existing env wins)."""
    settings = merged.get("config") or {}
    if not settings:
        return
    container = main_container(pod_spec, merged.get("runner"))
    for key in sorted(settings):
        upsert_env(container, key, str(settings[key]), overwrite=False)


def main_container(pod_spec: Obj, runner: Mapping[str, Any] | None = None) -> Obj:
    """The runner's container, else `ome-container`, else the first one (created if there is none)."""
    containers: list[Obj] = pod_spec.setdefault("containers", [])
    wanted = (runner or {}).get("name") or MAIN_CONTAINER
    for container in containers:
        if container.get("name") == wanted:
            return container
    if containers:
        return containers[0]
    containers.append({"name": MAIN_CONTAINER})
    return containers[0]


def inject_models(
    pod_spec: Obj,
    model: ModelSource | None,
    overlays: Sequence[ModelSource],
    *,
    model_path_env: bool = True,
    runner: bool = True,
) -> None:
    """MODEL_PATH, the read-only model volume and the model-ready node selector; then the overlays.

    Runtime-only InferenceServices (no model) get none of it. Fine-tuned serving sets its own MODEL_PATH.
    Without a runner (neither the runtime nor the InferenceService names one) the pod gets the volumes
    and node selector but no container gets env or mounts: OME changes only the runner's container.
    A `pvc://` model mounts its claim instead of a host path and selects no node: no node ever carries
    its label, and the claim is reachable from any node the scheduler picks.
    """
    if model is None and not overlays:
        return
    container = main_container(pod_spec) if runner else {}  # runnerless: changes land nowhere
    selector: dict[str, str] = {}
    if model is not None:
        if model.path:
            if model_path_env:
                upsert_env(container, MODEL_PATH_ENV, model.path, overwrite=False)
            _mount_model(pod_spec, container, model_volume_name(model), model, model.path)
        if model.claim is None:
            selector.update(model_labels.ready_selector(model.kind, model.name, model.namespace))
    for overlay in overlays:
        mount_path = f"{OVERLAY_ROOT}/{overlay.name}"
        if overlay.path:
            _mount_model(pod_spec, container, f"overlay-{overlay.name}", overlay, mount_path)
        upsert_env(container, overlay_env(overlay.name), mount_path, overwrite=True)
        if overlay.claim is None:
            selector.update(model_labels.ready_selector(overlay.kind, overlay.name, overlay.namespace))
    if selector:
        pod_spec.setdefault("nodeSelector", {}).update(selector)


def model_volume_name(model: ModelSource) -> str:
    return naming.truncate(model.name)


def overlay_env(name: str) -> str:
    """OVERLAY_<NAME>_MODEL_PATH, the name upper-cased with hyphens turned into underscores."""
    return f"OVERLAY_{name.upper().replace('-', '_').replace('.', '_')}_MODEL_PATH"


def _mount_model(pod_spec: Obj, container: Obj, volume: str, source: ModelSource, mount_path: str) -> None:
    """The model's volume (its claim, else its host path) mounted read-only at mount_path."""
    mount: Obj = {"name": volume, "mountPath": mount_path, "readOnly": True}
    if source.claim is not None:
        claim = {"claimName": source.claim, "readOnly": True}
        declared: Obj = {"name": volume, "persistentVolumeClaim": claim}
        if source.sub_path:
            mount["subPath"] = source.sub_path
    else:
        declared = {"name": volume, "hostPath": {"path": source.path}}
    volumes: list[Obj] = pod_spec.setdefault("volumes", [])
    if not any(v.get("name") == volume for v in volumes):
        volumes.append(declared)
    mounts: list[Obj] = container.setdefault("volumeMounts", [])
    if not any(m.get("mountPath") == mount_path for m in mounts):
        mounts.append(mount)
