"""The benchmark Job builder, against benchmarks.md ("An InferenceService", "How a benchmark runs") and
benchmark-output-storage.md (the arguments each backend gets)."""

from __future__ import annotations

from typing import Any

import pytest

from ome.controllers.benchmarkjob import builder, output_storage

Obj = dict[str, Any]
LABEL = "models.ome.io/clusterbasemodel.llama-3-2-1b-instruct"


def bench(**spec: Any) -> Obj:
    base: Obj = {"endpoint": {"inferenceService": {"name": "llama-3-2-1b-instruct", "namespace": "llama-demo"}},
                 "task": "text-to-text", "trafficScenarios": ["D(100,100)", "N(480,240)/(300,150)"],
                 "numConcurrency": [1, 4, 16], "maxTimePerIteration": 10, "maxRequestsPerIteration": 200,
                 "outputLocation": {"storageUri": "pvc://benchmark-results/llama-3-2-1b-instruct"}}
    return {"metadata": {"name": "llama-3-2-1b-instruct-bench", "namespace": "llama-demo", "uid": "u1"},
            "spec": base | spec}


def isvc(env: list[Obj] | None = None, url: str = "http://llama-3-2-1b-instruct.llama-demo.svc.cluster.local:8080",
         model: str | None = "llama-3-2-1b-instruct") -> Obj:
    spec: Obj = {"engine": {"runner": {"env": env or []}}}
    if model:
        spec["model"] = {"name": model}
    return {"metadata": {"name": "llama-3-2-1b-instruct", "namespace": "llama-demo"}, "spec": spec,
            "status": {"url": url, "conditions": [{"type": "Ready", "status": "True"}]}}


MODEL: Obj = {"metadata": {"name": "llama-3-2-1b-instruct"},
              "spec": {"storage": {"storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct",
                                   "path": "/raid/models/llama-3-2-1b-instruct"}}}


def engine_pod(args: list[str], env: list[Obj] | None = None) -> Obj:
    return {"spec": {"containers": [{"name": "ome-container", "command": ["vllm", "serve"], "args": args,
                                     "env": env or []}]}}


VLLM_POD = engine_pod(["--model", "$(MODEL_PATH)", "--served-model-name=vllm-model", "--port", "8080"],
                      [{"name": "MODEL_PATH", "value": "/mnt/models"}])


def target(**kwargs: Any) -> builder.Target:
    return builder.isvc_target(kwargs.pop("service", isvc()), kwargs.pop("model", MODEL), LABEL,
                               kwargs.pop("pods", [VLLM_POD]))


def arg(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


def test_the_docs_example_job() -> None:
    job = builder.build_job(bench(podOverride={"image": "ghcr.io/sgl-project/genai-bench:0.1.132"}), target(),
                            builder.PodConfig())
    meta = job["metadata"]
    # "a Job with the BenchmarkJob's name and the label `benchmark: <name>`, in the BenchmarkJob's namespace"
    assert (meta["name"], meta["namespace"], meta["labels"]) == (
        "llama-3-2-1b-instruct-bench", "llama-demo", {"benchmark": "llama-3-2-1b-instruct-bench"})
    assert meta["ownerReferences"][0]["kind"] == "BenchmarkJob" and meta["ownerReferences"][0]["controller"]
    assert job["spec"]["backoffLimit"] == 0  # "runs genai-bench once, and doesn't retry it"
    pod = job["spec"]["template"]["spec"]
    assert job["spec"]["template"]["metadata"]["labels"] == {"benchmark": "llama-3-2-1b-instruct-bench"}
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["image"] == "ghcr.io/sgl-project/genai-bench:0.1.132"
    assert container["command"] == ["genai-bench"]
    args = container["args"]
    assert args[0] == "benchmark"
    assert arg(args, "--api-base") == "http://llama-3-2-1b-instruct.llama-demo.svc.cluster.local:8080"
    assert arg(args, "--api-backend") == "openai"
    assert arg(args, "--api-model-name") == "vllm-model"  # "`vllm-model` in the example"
    assert arg(args, "--api-key") == "sample-key"
    assert arg(args, "--model-tokenizer") == "/raid/models/llama-3-2-1b-instruct"
    assert arg(args, "--task") == "text-to-text"
    assert (arg(args, "--max-time-per-run"), arg(args, "--max-requests-per-run")) == ("10", "200")
    assert [args[i + 1] for i, a in enumerate(args) if a == "--traffic-scenario"] == [
        "D(100,100)", "N(480,240)/(300,150)"]
    assert [args[i + 1] for i, a in enumerate(args) if a == "--num-concurrency"] == ["1", "4", "16"]
    assert arg(args, "--experiment-base-dir") == "/llama-3-2-1b-instruct"
    assert "--upload-results" not in args
    # Tokenizer "mounted read-only from the node", the claim's sub-path at /<sub-path>, MODEL_PATH set.
    assert {"name": "llama-3-2-1b-instruct", "hostPath": {"path": "/raid/models/llama-3-2-1b-instruct"}} in pod["volumes"]
    assert {"name": "benchmark-output-storage",
            "persistentVolumeClaim": {"claimName": "benchmark-results"}} in pod["volumes"]
    assert {"name": "llama-3-2-1b-instruct", "mountPath": "/raid/models/llama-3-2-1b-instruct",
            "readOnly": True} in container["volumeMounts"]
    assert {"name": "benchmark-output-storage", "mountPath": "/llama-3-2-1b-instruct",
            "subPath": "llama-3-2-1b-instruct"} in container["volumeMounts"]
    assert {"name": "MODEL_PATH", "value": "/raid/models/llama-3-2-1b-instruct"} in container["env"]
    # Defaults: 2 CPUs and 2Gi as requests and limits, the nvidia.com/gpu NoSchedule toleration, no GPUs.
    assert container["resources"] == {"requests": {"cpu": "2", "memory": "2Gi"},
                                      "limits": {"cpu": "2", "memory": "2Gi"}}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["nodeSelector"] == {LABEL: "Ready"}  # "runs only on nodes where the model is Ready"


def test_api_format_from_protocol_version_and_model_name_fallbacks() -> None:
    t = target(service=isvc([{"name": "PROTOCOL_VERSION", "value": "oci-cohere"}]))
    assert t.api_backend == "oci-cohere"
    sglang = engine_pod(["--model-path", "$(MODEL_PATH)"], [{"name": "MODEL_PATH", "value": "/mnt/models"}])
    assert target(pods=[sglang]).model_name == "/mnt/models"
    served_env = engine_pod(["--served-model-name", "$(SERVED_MODEL_NAME)", "--model", "/x"],
                            [{"name": "SERVED_MODEL_NAME", "value": "Qwen/Qwen3-0.6B"}])
    assert target(pods=[sglang, served_env]).model_name == "Qwen/Qwen3-0.6B"
    https = target(service=isvc(url="https://chat.example.com/v1/anything"))
    assert https.api_base == "https://chat.example.com"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"pods": [engine_pod(["--port", "8080"])]}, "cannot determine the served model name"),
    ({"service": isvc(model=None)}, "has no Model defined"),
    ({"model": {"metadata": {"name": "m"}, "spec": {"storage": {"storageUri": "pvc://c/p"}}}},
     "has missing Storage or Path information"),
])
def test_documented_pending_messages(kwargs: Obj, message: str) -> None:
    with pytest.raises(builder.BuildError, match=message):
        target(**kwargs)


def test_pod_override_merge_rules() -> None:
    override = {
        "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}},
        "env": [{"name": "MODEL_PATH", "value": "/elsewhere"}, {"name": "EXTRA", "value": "1"}],
        "envFrom": [{"secretRef": {"name": "creds"}}],
        "volumes": [{"name": "benchmark-output-storage", "emptyDir": {}}, {"name": "gcs", "secret": {"secretName": "s"}}],
        "volumeMounts": [{"name": "gcs", "mountPath": "/var/run/secrets/gcs", "readOnly": True},
                         {"name": "other", "mountPath": "/llama-3-2-1b-instruct"}],
        "nodeSelector": {LABEL: "NotReady", "pool": "bench"},
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        "affinity": {"podAntiAffinity": {}},
    }
    pod = builder.build_job(bench(podOverride=override), target(), builder.PodConfig())["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    # "Replaces the requests and limits it names, and keeps the others."
    assert c["resources"] == {"requests": {"cpu": "4", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "2Gi"}}
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["MODEL_PATH"] == "/elsewhere" and env["EXTRA"] == "1" and env["ENABLE_UI"] == "false"
    assert c["envFrom"] == [{"secretRef": {"name": "creds"}}]
    # "A volume with the same name, or a mount at the same mountPath, replaces OME's."
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["benchmark-output-storage"] == {"name": "benchmark-output-storage", "emptyDir": {}}
    assert "gcs" in volumes and "llama-3-2-1b-instruct" in volumes
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts["/llama-3-2-1b-instruct"] == "other" and mounts["/var/run/secrets/gcs"] == "gcs"
    assert pod["nodeSelector"] == {LABEL: "NotReady", "pool": "bench"}  # adds, replaces the same key
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]  # replaces the default
    assert pod["affinity"] == {"podAntiAffinity": {}}
    assert c["image"] == builder.DEFAULT_IMAGE  # no image in the override: the chart's


def test_hugging_face_secret_and_chart_pod_config() -> None:
    config = builder.pod_config({"benchmarkjob": '{"podConfig": {"image": "ghcr.io/sgl-project/genai-bench:0.1.132",'
                                                 ' "cpuRequest": "1", "memoryLimit": "4Gi"}}'})
    assert config == builder.PodConfig(image="ghcr.io/sgl-project/genai-bench:0.1.132", cpu_request="1",
                                       memory_limit="4Gi")
    job = builder.build_job(bench(huggingFaceSecretReference={"name": "hf"}), target(), config)
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "HUGGINGFACE_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HUGGINGFACE_API_KEY"}}} in c["env"]
    assert c["image"] == "ghcr.io/sgl-project/genai-bench:0.1.132"
    with pytest.raises(builder.BuildError, match="benchmarkjob-config"):
        builder.pod_config({"benchmarkjob": "{not json"})


def test_external_endpoint_gets_no_tokenizer_or_key() -> None:
    spec = bench(endpoint={"endpoint": {"url": "https://api.example.com", "apiFormat": "cohere",
                                        "modelName": "command-r"}},
                 outputLocation={"storageUri": "s3://results@us-east-1/run1"})
    job = builder.build_job(spec, builder.endpoint_target(spec["spec"]["endpoint"]["endpoint"]), builder.PodConfig())
    pod = job["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert (arg(args, "--api-base"), arg(args, "--api-backend"), arg(args, "--api-model-name")) == (
        "https://api.example.com", "cohere", "command-r")
    assert "--api-key" not in args and "--model-tokenizer" not in args
    assert "nodeSelector" not in pod and "volumes" not in pod


@pytest.mark.parametrize(("uri", "params", "expected"), [
    ("oci://n/examplens/b/benchmark-results/o/llama-3-2-1b-instruct",
     {"auth": "instance_principal", "region": "eu-frankfurt-1"},
     ["--upload-results", "--namespace", "examplens", "--storage-bucket", "benchmark-results", "--storage-prefix",
      "llama-3-2-1b-instruct", "--auth", "instance_principal", "--region", "eu-frankfurt-1"]),
    ("s3://benchmark-results/llama-3-2-1b-instruct", {"aws_region": "us-west-2"},
     ["--upload-results", "--storage-provider", "aws", "--storage-bucket", "benchmark-results",
      "--storage-prefix", "llama-3-2-1b-instruct", "--storage-aws-region", "us-west-2"]),
    ("s3://benchmark-results/runs@2026/llama", {},
     ["--upload-results", "--storage-provider", "aws", "--storage-bucket", "benchmark-results/runs",
      "--storage-prefix", "llama", "--storage-aws-region", "2026"]),
    ("az://benchmarkstore/benchmark-results/llama-3-2-1b-instruct", {},
     ["--upload-results", "--storage-provider", "azure", "--storage-bucket", "benchmark-results",
      "--storage-prefix", "llama-3-2-1b-instruct", "--storage-azure-account-name", "benchmarkstore"]),
    ("gs://benchmark-results/llama-3-2-1b-instruct",
     {"gcp_project_id": "llama-demo-project", "gcp_credentials_path": "/var/run/secrets/gcs/key.json"},
     ["--upload-results", "--storage-provider", "gcp", "--storage-bucket", "benchmark-results",
      "--storage-prefix", "llama-3-2-1b-instruct", "--storage-gcp-project-id", "llama-demo-project",
      "--storage-gcp-credentials-path", "/var/run/secrets/gcs/key.json"]),
    ("github://acme/benchmarks@llama-3-2-1b-instruct", {},
     ["--upload-results", "--storage-provider", "github", "--github-owner", "acme", "--github-repo",
      "benchmarks", "--github-tag", "llama-3-2-1b-instruct"]),
    ("github://acme/benchmarks@latest", {"github_token": "t", "unknown": "x"},
     ["--upload-results", "--storage-provider", "github", "--github-owner", "acme", "--github-repo",
      "benchmarks", "--github-token", "t"]),
])
def test_documented_storage_arguments(uri: str, params: dict[str, str], expected: list[str]) -> None:
    assert output_storage.storage_args(uri, params) == expected


def test_storage_uris_ome_cannot_write_to() -> None:
    with pytest.raises(output_storage.OutputStorageError, match="unsupported storage type: hf"):
        output_storage.storage_args("hf://meta-llama/x", {})
    with pytest.raises(builder.BuildError, match="failed to build storage args"):
        builder.build_job(bench(outputLocation={"storageUri": "local:///tmp"}), target(), builder.PodConfig())
