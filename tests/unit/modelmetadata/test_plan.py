"""The pvc:// metadata planner against guides/deploy-models/serve-models-from-pvc.md (v1.3).

Each test quotes the page's promise it checks.
"""

from __future__ import annotations

import json
from typing import Any

from ome.config.inferenceservice_config import parse
from ome.config.ome_agent import OmeAgentConfig
from ome.controllers.modelmetadata import job as jobs
from ome.controllers.modelmetadata import plan as planner

Obj = dict[str, Any]
URI = "pvc://model-storage/llama-3-2-1b-instruct"
LLAMA = {"modelType": "llama", "modelArchitecture": "LlamaForCausalLM",
         "modelFormat": {"name": "safetensors", "version": "1.0.0"},
         "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"}}


def base_model(uri: str = URI, **spec: Any) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "BaseModel",
            "metadata": {"name": "llama-3-2-1b-instruct", "namespace": "llama-demo", "uid": "u1",
                         "generation": 1},
            "spec": {"storage": {"storageUri": uri}, **spec}}


def cluster_model(uri: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel",
            "metadata": {"name": "llama-3-2-1b-instruct", "uid": "u2", "generation": 1},
            "spec": {"storage": {"storageUri": uri}}}


def bound(phase: str = "Bound") -> Obj:
    return {"metadata": {"name": "model-storage", "namespace": "llama-demo"}, "status": {"phase": phase}}


def result(model: Obj, status: str, *, config: Obj | None = None, error: str = "") -> Obj:
    meta = model["metadata"]
    entry: Obj = {"name": meta["name"], "status": status}
    if config:
        entry["config"] = config
    return {"metadata": {"name": jobs.result_configmap_name(meta["name"], meta.get("namespace")),
                         "namespace": "ome", "annotations": {jobs.LAST_ERROR_ANNOTATION: error} if error else {}},
            "data": {jobs.result_key(meta["name"], meta.get("namespace")): json.dumps(entry)}}


def existing_job(model: Obj, *, failed: str = "") -> Obj:
    job = planner.plan(planner.Inputs(model, bound(), ome_namespace="ome")).create_job
    assert job is not None
    if failed:
        job["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                         "message": failed}]}
    return job


def test_job_name_is_the_documented_one() -> None:
    """`job.batch "llama-3-2-1b-instruct-metadata-26cec0b4" deleted` for pvc://model-storage/llama-3-2-1b-instruct."""
    assert jobs.job_name("llama-3-2-1b-instruct", URI) == "llama-3-2-1b-instruct-metadata-26cec0b4"
    assert len(jobs.job_name("m" * 80, URI)) == 63


def test_a_bound_claim_gets_the_metadata_job_and_in_transit() -> None:
    """`In_Transit` `PVCMetadataExtracting`: "The metadata Job is running, or waiting for its pod to start."
    The Job runs as `ome-model-metadata`, labelled `models.ome/model-name`, mounting the sub-path."""
    step = planner.plan(planner.Inputs(base_model(), bound(), ome_namespace="ome"))
    assert step.verdict is not None
    assert (step.verdict.state, step.verdict.reason) == ("In_Transit", "PVCMetadataExtracting")
    job = step.create_job
    assert job is not None
    assert job["metadata"]["namespace"] == "llama-demo"
    assert job["metadata"]["labels"] == {"models.ome/model-name": "llama-3-2-1b-instruct",
                                         "models.ome/model-scope": "namespaced"}
    assert job["spec"]["backoffLimit"] == 2 and job["spec"]["ttlSecondsAfterFinished"] == 3600
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "ome-model-metadata"
    assert pod["securityContext"]["runAsUser"] == 65532  # "The metadata Job runs as user 65532"
    assert pod["volumes"] == [{"name": "model", "persistentVolumeClaim": {"claimName": "model-storage",
                                                                          "readOnly": True}}]
    [container] = pod["containers"]
    assert container["volumeMounts"][0]["subPath"] == "llama-3-2-1b-instruct"
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"},
                                      "limits": {"cpu": "500m", "memory": "512Mi"}}
    assert container["args"][:2] == ["model-metadata", "--config"]
    assert "--basemodel-namespace" in container["args"]
    # A BaseModel's Job is in OME's namespace here: no ServiceAccount or RoleBinding to create.
    assert planner.plan(planner.Inputs(base_model(), bound(), ome_namespace="llama-demo")).ensure_identity is None


def test_outside_omes_namespace_the_service_account_and_role_binding_come_first() -> None:
    """"OME creates it in the claim's namespace if it's missing" and keeps "the RoleBinding
    `ome-model-metadata-llama-demo` in `ome`" (label `models.ome/metadata-source-namespace=llama-demo`)."""
    step = planner.plan(planner.Inputs(base_model(), bound(), ome_namespace="ome"))
    assert step.ensure_identity is not None
    account, binding = step.ensure_identity
    assert (account["metadata"]["name"], account["metadata"]["namespace"]) == ("ome-model-metadata", "llama-demo")
    assert (binding["metadata"]["name"], binding["metadata"]["namespace"]) == ("ome-model-metadata-llama-demo", "ome")
    assert binding["metadata"]["labels"] == {"models.ome/metadata-source-namespace": "llama-demo"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ome-model-metadata",
                                    "namespace": "llama-demo"}]


def test_a_cluster_base_model_runs_its_job_in_the_claims_namespace() -> None:
    """"Either way, the metadata Job runs in the claim's namespace." """
    model = cluster_model("pvc://llama-demo:model-storage/llama-3-2-1b-instruct")
    step = planner.plan(planner.Inputs(model, bound(), ome_namespace="ome"))
    assert step.create_job is not None
    assert step.create_job["metadata"]["namespace"] == "llama-demo"
    assert step.create_job["metadata"]["labels"]["models.ome/model-scope"] == "cluster"
    assert "--cluster-scoped" in step.create_job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert step.create_job["metadata"]["ownerReferences"][0]["kind"] == "ClusterBaseModel"


def test_claim_problems_have_the_documented_reasons() -> None:
    """"Failed PVCNotFound PVC llama-demo/model-storage not found"; `In_Transit` `PVCNotBound`: "The claim
    isn't Bound yet."; `Failed` `PVCInvalid`: "The URI is malformed, or has the wrong form for the kind." """
    missing = planner.plan(planner.Inputs(base_model(), None)).verdict
    assert missing is not None
    assert (missing.state, missing.reason, missing.message) == ("Failed", "PVCNotFound",
                                                                "PVC llama-demo/model-storage not found")
    pending = planner.plan(planner.Inputs(base_model(), bound("Pending"))).verdict
    assert pending is not None and (pending.state, pending.reason) == ("In_Transit", "PVCNotBound")
    bad = planner.plan(planner.Inputs(base_model("pvc://model-storage"), None)).verdict
    assert bad is not None and (bad.state, bad.reason) == ("Failed", "PVCInvalid")
    assert bad.message == ('invalid PVC storage URI "pvc://model-storage": invalid PVC storage URI format: '
                           "missing subpath")
    wrong = planner.plan(planner.Inputs(cluster_model(URI), None)).verdict
    assert wrong is not None and wrong.reason == "PVCInvalid"
    assert wrong.message.startswith("ClusterBaseModel PVC URI must specify a namespace (format: "
                                    "pvc://{namespace}:{pvc-name}/{sub-path})")
    assert planner.plan(planner.Inputs(base_model(), bound("Pending"))).create_job is None


def test_no_image_is_pvc_config_missing() -> None:
    """`Failed` `PVCConfigMissing`: "The ome-agent image is unset ... The message says which." """
    agent = parse({"omeAgent": json.dumps({"image": ""})}).ome_agent
    step = planner.plan(planner.Inputs(base_model(), bound(), agent=agent))
    assert step.verdict is not None
    assert (step.verdict.state, step.verdict.reason) == ("Failed", "PVCConfigMissing")
    assert "ome-agent image" in step.verdict.message and step.create_job is None


def test_the_result_fills_empty_spec_fields_and_makes_the_model_ready() -> None:
    """"OME fills in the model's empty metadata fields and sets the state to Ready" ... "and keeps any that
    you set." """
    model = base_model(modelFormat={"name": "gguf"})
    step = planner.plan(planner.Inputs(model, bound(), [existing_job(model)], result(model, "Ready", config=LLAMA)))
    assert step.verdict is not None and (step.verdict.state, step.verdict.reason) == ("Ready", "PVCMetadataReady")
    assert step.spec_fill["modelArchitecture"] == "LlamaForCausalLM"
    assert step.spec_fill["modelFramework"] == {"name": "transformers", "version": "4.45.0.dev0"}
    assert step.spec_fill["modelFormat"] == {"version": "1.0.0"}  # the name the user set stays
    assert step.create_job is None and not step.delete_jobs


def test_a_failed_result_or_job_is_pvc_metadata_extraction_failed_with_its_error() -> None:
    """`Failed` `PVCMetadataExtractionFailed`: "The Job failed. The message has its error." """
    model = base_model()
    error = "no model_index.json or config.json found in /model"
    step = planner.plan(planner.Inputs(model, bound(), [existing_job(model)], result(model, "Failed", error=error)))
    assert step.verdict is not None
    assert (step.verdict.state, step.verdict.reason, step.verdict.message) == (
        "Failed", "PVCMetadataExtractionFailed", error)
    # The pod was killed before writing anything: the Job's own failure is the message.
    step = planner.plan(planner.Inputs(model, bound(), [existing_job(model, failed="Job has reached the "
                                                                       "specified backoff limit")]))
    assert step.verdict is not None and step.verdict.reason == "PVCMetadataExtractionFailed"
    assert step.verdict.message == "BackoffLimitExceeded: Job has reached the specified backoff limit"


def test_a_running_job_without_result_stays_in_transit_without_a_new_job() -> None:
    model = base_model()
    step = planner.plan(planner.Inputs(model, bound(), [existing_job(model)]))
    assert step.verdict is not None and step.verdict.reason == "PVCMetadataExtracting"
    assert step.create_job is None and step.ensure_identity is None


def test_a_deleted_job_is_created_again() -> None:
    """"For other fixes, delete the Job, and OME creates a new one" ... "The old failure can show until the
    new Job finishes." """
    model = base_model()
    step = planner.plan(planner.Inputs(model, bound(), [], result(model, "Failed", error="permission denied")))
    assert step.create_job is not None and not step.delete_result
    after = planner.plan(planner.Inputs(model, bound(), [step.create_job],
                                        result(model, "Failed", error="permission denied")))
    assert after.verdict is not None and after.verdict.reason == "PVCMetadataExtractionFailed"


def test_a_new_sub_path_replaces_the_job_and_its_result() -> None:
    """"When the fix is a new sub-path in the URI, OME starts a new Job on its own." """
    old = base_model("pvc://model-storage/wrong-dir")
    old_job = existing_job(old)
    model = base_model()
    step = planner.plan(planner.Inputs(model, bound(), [old_job], result(model, "Failed", error="x")))
    assert step.delete_jobs == (("llama-demo", old_job["metadata"]["name"]),)
    assert step.delete_result and step.create_job is None
    step = planner.plan(planner.Inputs(model, bound(), [], None))
    assert step.create_job is not None
    assert step.create_job["metadata"]["name"] == "llama-3-2-1b-instruct-metadata-26cec0b4"


def test_deleting_the_model_deletes_its_metadata_jobs() -> None:
    """"Deleting the model deletes its metadata Jobs." """
    model = base_model()
    job = existing_job(model)
    model["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    step = planner.plan(planner.Inputs(model, bound(), [job], result(model, "Ready")))
    assert step.verdict is None and step.delete_jobs == (("llama-demo", job["metadata"]["name"]),)
    assert step.delete_result


def test_metadata_job_values_follow_the_chart_table() -> None:
    """"A `0` for `backoffLimit` or `ttlSecondsAfterFinished` means the default, and an empty resource value
    sets no request or limit." """
    agent = parse({"omeAgent": json.dumps({"image": "reg/ome-agent:v1", "metadataJob": {
        "backoffLimit": 0, "ttlSecondsAfterFinished": 0, "cpuLimit": "", "memoryLimit": "",
        "nodeSelector": {"nvidia.com/gpu.present": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "priorityClassName": "high"}})}).ome_agent
    assert isinstance(agent, OmeAgentConfig)
    job = planner.plan(planner.Inputs(base_model(), bound(), agent=agent)).create_job
    assert job is not None
    assert (job["spec"]["backoffLimit"], job["spec"]["ttlSecondsAfterFinished"]) == (2, 3600)
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "reg/ome-agent:v1"
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"}}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu" and pod["priorityClassName"] == "high"


def test_status_keeps_transition_times_and_differs_only_on_change() -> None:
    model = base_model()
    verdict = planner.plan(planner.Inputs(model, bound("Pending"))).verdict
    assert verdict is not None
    first = planner.desired_status(model, verdict, "2026-01-01T00:00:00Z")
    assert [c["type"] for c in first["conditions"]] == ["SourceReachable", "Ready"]
    model["status"] = first
    again = planner.desired_status(model, verdict, "2026-01-01T00:05:00Z")
    assert again == first and not planner.status_differs(model, again)


def test_skip_config_parsing_is_ignored_for_a_pvc_model() -> None:
    """`ome.oracle.com/skip-config-parsing`: "OME ignores it for a model on a PVC." (labels-and-annotations.md)"""
    model = base_model()
    model["metadata"]["annotations"] = {"ome.oracle.com/skip-config-parsing": "true"}
    step = planner.plan(planner.Inputs(model, bound(), [existing_job(model)], result(model, "Ready", config=LLAMA)))
    assert step.spec_fill["modelArchitecture"] == "LlamaForCausalLM"
