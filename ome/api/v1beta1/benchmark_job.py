"""BenchmarkJob: a genai-bench run against an InferenceService or a URL."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    AGE,
    AffinityDict,
    CRDInfo,
    EnvFromSourceDict,
    EnvVarDict,
    KubeObject,
    OMEModel,
    PrinterColumn,
    ResourceRequirementsDict,
    StrMap,
    Time,
    TolerationDict,
    VolumeDict,
    VolumeMountDict,
    f,
)
from ome.api.v1beta1.base_model import StorageSpec

BenchmarkTask = Literal["text-to-text", "image-to-text", "text-to-embeddings", "image-to-embeddings"]
BenchmarkState = Literal["Pending", "Running", "Completed", "Failed"]


class HuggingFaceSecretReference(OMEModel):
    name: str = f("name", required=True)


class InferenceServiceReference(OMEModel):
    name: str = f("name", required=True)
    namespace: str = f("namespace", required=True)


class Endpoint(OMEModel):
    url: str = f("url", required=True, pattern="^(http|https)://")
    api_format: Literal["openai", "oci-cohere", "cohere"] = f("apiFormat", required=True)
    model_name: str | None = f("modelName")


class EndpointSpec(OMEModel):
    inference_service: InferenceServiceReference | None = f("inferenceService")
    endpoint: Endpoint | None = f("endpoint")


class ServiceMetadata(OMEModel):
    engine: Literal["vLLM", "SGLang", "TGI"] = f("engine", required=True)
    version: str = f("version", required=True)
    gpu_type: Literal["H100", "A100", "MI300", "A10"] = f("gpuType", required=True)
    gpu_count: int = f("gpuCount", required=True)


class PodOverride(OMEModel):
    image: str | None = f("image")
    env: list[EnvVarDict] | None = f("env", list_type="map", list_map_keys=("name",))
    env_from: list[EnvFromSourceDict] | None = f("envFrom", list_type="atomic")
    volume_mounts: list[VolumeMountDict] | None = f("volumeMounts", list_type="map", list_map_keys=("name",))
    resources: ResourceRequirementsDict | None = f("resources")
    tolerations: list[TolerationDict] | None = f("tolerations", list_type="atomic")
    node_selector: StrMap | None = f("nodeSelector", map_type="atomic")
    affinity: AffinityDict | None = f("affinity")
    volumes: list[VolumeDict] | None = f("volumes", list_type="atomic")


class BenchmarkJobSpec(OMEModel):
    hugging_face_secret_reference: HuggingFaceSecretReference | None = f("huggingFaceSecretReference")
    endpoint: EndpointSpec = f("endpoint", required=True)
    service_metadata: ServiceMetadata | None = f("serviceMetadata")
    task: BenchmarkTask = f("task", required=True)
    traffic_scenarios: list[str] | None = f("trafficScenarios", list_type="set")
    num_concurrency: list[int] | None = f("numConcurrency", list_type="set")
    max_time_per_iteration: int = f("maxTimePerIteration", required=True)
    max_requests_per_iteration: int = f("maxRequestsPerIteration", required=True)
    additional_request_params: StrMap | None = f("additionalRequestParams")
    dataset: StorageSpec | None = f("dataset")
    output_location: StorageSpec = f("outputLocation", required=True)
    result_folder_name: str | None = f("resultFolderName")
    pod_override: PodOverride | None = f("podOverride")


class BenchmarkJobStatus(OMEModel):
    state: BenchmarkState = f("state", required=True)
    start_time: Time | None = f("startTime")
    completion_time: Time | None = f("completionTime")
    last_reconcile_time: Time | None = f("lastReconcileTime")
    failure_message: str | None = f("failureMessage")
    details: str | None = f("details")


class BenchmarkJob(KubeObject):
    crd = CRDInfo(
        kind="BenchmarkJob",
        plural="benchmarkjobs",
        singular="benchmarkjob",
        printer_columns=(AGE, PrinterColumn("Status", "string", ".status.state")),
    )

    spec: BenchmarkJobSpec | None = f("spec")
    status: BenchmarkJobStatus | None = f("status")
