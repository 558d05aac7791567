"""The metadata Job of a `pvc://` model, and the objects around it: pure builders, no I/O.

Names and labels are v1.3's (serve-models-from-pvc.md): the Job `{model}-metadata-<hash>` (the hash is the
first 8 hex digits of the SHA-256 of the storage URI, so a new URI gets a new Job), labelled
`models.ome/model-name` and `models.ome/model-scope` (`namespaced` / `cluster`), running in the claim's
namespace as the ServiceAccount `ome-model-metadata`. The agent in the Job mounts the claim's sub-path at
`/model` and writes its findings into the per-model ConfigMap `pvc-metadata-<hash>` in OME's namespace
(label `models.ome/pvc-status`), which the controller reads back. Outside OME's namespace the controller
first creates the ServiceAccount there and the RoleBinding `ome-model-metadata-<namespace>` in OME's
namespace (label `models.ome/metadata-source-namespace`), which binds the ClusterRole of the same name so
the agent may write that ConfigMap.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from ome.config.ome_agent import MetadataJobConfig
from ome.models import labels

Obj = dict[str, Any]

MODEL_NAME_LABEL: Final = "models.ome/model-name"
MODEL_SCOPE_LABEL: Final = "models.ome/model-scope"
PVC_STATUS_LABEL: Final = "models.ome/pvc-status"
LAST_ERROR_ANNOTATION: Final = "models.ome/pvc-metadata-last-error"
SOURCE_NAMESPACE_LABEL: Final = "models.ome/metadata-source-namespace"
SCOPE_NAMESPACED: Final = "namespaced"
SCOPE_CLUSTER: Final = "cluster"
MOUNT_PATH: Final = "/model"
VOLUME: Final = "model"
CONTAINER: Final = "model-metadata"
AGENT_CONFIG_PATH: Final = "/ome-agent.yaml"
NON_ROOT_UID: Final = 65532
_HASH_LEN: Final = 8
_MAX_NAME: Final = 63


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LEN]


def scope_of(cluster_scoped: bool) -> str:
    return SCOPE_CLUSTER if cluster_scoped else SCOPE_NAMESPACED


def job_name(model_name: str, storage_uri: str) -> str:
    """`{model}-metadata-<hash of the URI>`, the model part cut so the whole fits 63 characters."""
    suffix = "-metadata-" + _short_hash(storage_uri)
    keep = _MAX_NAME - len(suffix)
    head = model_name[:keep]
    return (head or "metadata") + suffix


def result_configmap_name(model_name: str, model_namespace: str | None) -> str:
    """`pvc-metadata-<hash>`: of the name for a ClusterBaseModel, of `namespace/name` for a BaseModel."""
    source = f"{model_namespace}/{model_name}" if model_namespace else model_name
    return "pvc-metadata-" + _short_hash(source)


def result_key(model_name: str, model_namespace: str | None) -> str:
    """The model's entry in the result ConfigMap, keyed as in a node's status ConfigMap."""
    kind = "BaseModel" if model_namespace else "ClusterBaseModel"
    return labels.configmap_key(kind, model_name, model_namespace)


def label_value(name: str) -> str:
    # A model name may be longer than a label value may be; the cut keeps it a valid value.
    return name[:_MAX_NAME].rstrip("-_.") or "model"


def job_labels(model_name: str, cluster_scoped: bool) -> dict[str, str]:
    return {MODEL_NAME_LABEL: label_value(model_name), MODEL_SCOPE_LABEL: scope_of(cluster_scoped)}


def _resources(cfg: MetadataJobConfig) -> Obj:
    requests = {k: v for k, v in (("cpu", cfg.cpu_request), ("memory", cfg.memory_request)) if v}
    limits = {k: v for k, v in (("cpu", cfg.cpu_limit), ("memory", cfg.memory_limit)) if v}
    out: Obj = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def build_job(model: Obj, *, claim: str, sub_path: str, job_namespace: str, image: str,
              cfg: MetadataJobConfig, ome_namespace: str) -> Obj:
    """The Job that runs `ome-agent model-metadata` against the claim's sub-path, owned by the model."""
    meta = model["metadata"]
    cluster_scoped = not meta.get("namespace")
    uri = ((model.get("spec") or {}).get("storage") or {}).get("storageUri") or ""
    args = ["model-metadata", "--config", AGENT_CONFIG_PATH, "--model-path", MOUNT_PATH,
            "--basemodel-name", meta["name"]]
    args += ["--cluster-scoped"] if cluster_scoped else ["--basemodel-namespace", meta["namespace"]]
    job_meta_labels = job_labels(meta["name"], cluster_scoped)
    pod_spec: Obj = {
        "serviceAccountName": cfg.service_account,
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "runAsGroup": NON_ROOT_UID,
                            "fsGroup": NON_ROOT_UID, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumes": [{"name": VOLUME, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}],
        "containers": [{
            "name": CONTAINER, "image": image, "args": args,
            # The agent writes its ConfigMap into this namespace: OME's, wherever it is installed.
            "env": [{"name": "POD_NAMESPACE", "value": ome_namespace}],
            "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT_PATH, "subPath": sub_path,
                              "readOnly": True}],
            "resources": _resources(cfg),
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                                "seccompProfile": {"type": "RuntimeDefault"}},
        }],
    }
    if cfg.node_selector:
        pod_spec["nodeSelector"] = dict(cfg.node_selector)
    if cfg.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in cfg.tolerations]
    if cfg.affinity:
        pod_spec["affinity"] = dict(cfg.affinity)
    if cfg.priority_class_name:
        pod_spec["priorityClassName"] = cfg.priority_class_name
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": job_name(meta["name"], uri), "namespace": job_namespace,
                     "labels": job_meta_labels, "ownerReferences": [owner_reference(model)]},
        "spec": {"backoffLimit": cfg.effective_backoff_limit,
                 "ttlSecondsAfterFinished": cfg.effective_ttl,
                 "template": {"metadata": {"labels": dict(job_meta_labels)}, "spec": pod_spec}},
    }


def owner_reference(model: Obj) -> Obj:
    # A ClusterBaseModel may own objects in any namespace; a BaseModel's Job is in its own namespace.
    meta = model["metadata"]
    return {"apiVersion": model.get("apiVersion") or "ome.io/v1beta1", "kind": model["kind"],
            "name": meta["name"], "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}


def service_account(namespace: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}


def role_binding(job_namespace: str, service_account_name: str, ome_namespace: str) -> Obj:
    """In OME's namespace: lets the agent running in `job_namespace` write its result ConfigMap there."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": f"{service_account_name}-{job_namespace}", "namespace": ome_namespace,
                     "labels": {SOURCE_NAMESPACE_LABEL: job_namespace}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": service_account_name},
        "subjects": [{"kind": "ServiceAccount", "name": service_account_name, "namespace": job_namespace}],
    }


__all__ = ["LAST_ERROR_ANNOTATION", "MODEL_NAME_LABEL", "MODEL_SCOPE_LABEL", "PVC_STATUS_LABEL",
           "SOURCE_NAMESPACE_LABEL", "build_job", "job_labels", "job_name", "result_configmap_name",
           "result_key", "role_binding", "service_account"]
