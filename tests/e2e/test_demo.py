"""`make run`'s demo against the session's cluster: the seed's minimal InferenceService ends Ready.

The demo runs the model agent and `ome-manager` (self-registered webhooks, leader election) as processes;
this checks what a new user sees, then removes what the demo left (it leaves objects for the user to try
`kubectl` against).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

from ome.devcluster.kubeapi import KubeApi, KubeApiError
from ome.models import labels

ROOT = Path(__file__).resolve().parents[2]
MODEL, RUNTIME, NAMESPACE = "llama-3-2-1b-instruct", "vllm-llama-3-2-1b-instruct", "llama-demo"


def _cleanup(api: KubeApi) -> None:
    key = labels.model_label_key("ClusterBaseModel", MODEL)
    for path in (f"/api/v1/namespaces/{NAMESPACE}",
                 f"/apis/ome.io/v1beta1/clusterservingruntimes/{RUNTIME}",
                 "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/inferenceservice.ome.io",
                 "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/inferenceservice.ome.io",
                 "/apis/coordination.k8s.io/v1/namespaces/ome/leases/ome-controller-manager-leader-lock"):
        with contextlib.suppress(KubeApiError):
            api.request("DELETE", path)
    model_path = f"/apis/ome.io/v1beta1/clusterbasemodels/{MODEL}"
    with contextlib.suppress(KubeApiError):  # no manager is left to release its finalizer
        model = api.get(model_path)
        model["metadata"]["finalizers"] = []
        api.request("PUT", model_path, model)
        api.request("DELETE", model_path)
    with contextlib.suppress(KubeApiError):
        node = api.get("/api/v1/nodes/gpu-node-0")
        if key in node["metadata"].get("labels", {}):
            del node["metadata"]["labels"][key]
            api.request("PUT", "/api/v1/nodes/gpu-node-0", node)


def test_demo_serves_the_minimal_inferenceservice(
    admin_api: KubeApi, kubeconfig: Path, ome_crds: list[str], tmp_path: Path
) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ome.cmd.demo", "--kubeconfig", str(kubeconfig), "--state-dir",
             str(tmp_path), "--exit-when-ready", "--timeout", "120"],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-4000:]
        assert f"InferenceService {NAMESPACE}/{MODEL} is Ready after" in out
        assert f"Runtime {RUNTIME} will be auto-selected for model {MODEL}" in out  # the webhook's warning
        assert "Traceback" not in out
        isvc = admin_api.get(f"/apis/ome.io/v1beta1/namespaces/{NAMESPACE}/inferenceservices/{MODEL}")
        conds = {c["type"]: c["status"] for c in isvc["status"]["conditions"]}
        assert conds["Ready"] == "True"
        assert isvc["status"]["url"] == f"http://{MODEL}.{NAMESPACE}.svc.cluster.local:8080"
        # The manager removed its self-registered webhooks when it stopped.
        try:
            admin_api.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                          "inferenceservice.ome.io")
            raise AssertionError("the demo's webhook configuration outlived its manager")
        except KubeApiError as exc:
            assert exc.status == 404
    finally:
        _cleanup(admin_api)
