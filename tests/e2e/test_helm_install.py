"""The Helm charts on the local cluster: `helm template` renders config/'s objects, `helm install` of
ome-crd and ome-resources, then the minimal InferenceService to Ready with ome-manager running as a local
process with the chart's settings (its Deployment's arguments and the chart's inferenceservice-config).

kwok runs no images, so the chart's manager pods never serve: the local manager is the one that works, as
in the other e2e tests. It registers its webhooks at 127.0.0.1 (replacing the chart's in-cluster ones) and
removes them on a clean stop. helm is built from the Go module proxy into the control plane's bin
directory by ome/devcluster/build_control_plane.sh (HELM_VERSION in versions.env).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.api import resources
from ome.cmd.chartgen.chart_values import chart_entries, default_values
from ome.cmd.chartgen.config_default import config_default_objects
from ome.cmd.chartgen.manifests import object_key
from ome.devcluster.cluster import free_ports
from ome.devcluster.paths import bin_dir
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import catalog, condition, eventually

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
RELEASE_NAMESPACE = "ome-helm"
# Flags that describe the pod, not the settings: the local process gets its own ports and certificates.
POD_ONLY = ("--metrics-bind-address", "--health-probe-addr", "--webhook-port", "--webhook-cert-dir",
            "--webhook-cert-bootstrap")


def helm_binary() -> Path:
    helm = bin_dir() / "helm"
    assert helm.is_file(), f"{helm} missing: run ome/devcluster/build_control_plane.sh (builds helm)"
    return helm


def helm(kubeconfig: Path | None, *args: str) -> str:
    argv = [str(helm_binary()), *args] + (["--kubeconfig", str(kubeconfig)] if kubeconfig else [])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HELM_CACHE_HOME": "/tmp/ome-helm/cache",
                               "HELM_CONFIG_HOME": "/tmp/ome-helm/config", "HELM_DATA_HOME": "/tmp/ome-helm/data"})
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
    return done.stdout


def test_helm_template_renders_config_default() -> None:
    """The real renderer agrees with config/ (the unit test checks the generator's own rendering)."""
    crds = yaml.load_all(helm(None, "template", "ome-crd", str(ROOT / "charts/ome-crd"), "-n", "ome"),
                         Loader=yaml.CSafeLoader)
    rest = yaml.load_all(helm(None, "template", "ome", str(ROOT / "charts/ome-resources"), "-n", "ome"),
                         Loader=yaml.CSafeLoader)
    rendered = {object_key(d): d for d in [*crds, *rest] if d}
    expected = {object_key(d): d for d in config_default_objects()}
    assert set(rendered) == set(expected)
    for key, obj in expected.items():
        assert rendered[key] == obj, key
    switched = [d for d in yaml.safe_load_all(helm(
        None, "template", "ome", str(ROOT / "charts/ome-resources"), "-n", "ome",
        "--set", "webhook.certManager.enabled=true", "--set", "modelAgent.enabled=true",
        "--set", "ome.controller.replicaCount=1", "--set", "ome.controller.kubeAPIQPS=50",
        "--set", "ome.controller.inferenceServiceMaxConcurrentReconciles=8")) if d]
    kinds = {object_key(d)[0] for d in switched}
    assert {"Certificate", "Issuer", "DaemonSet"} <= kinds
    deployment = next(d for d in switched if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 1
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--kube-api-qps=50" in args and "--inferenceservice-max-concurrent-reconciles=8" in args
    # A 0 leaves its flag out (the manager's own default); a quoted "0" TTL is passed (the cache off).
    zeroed = [d for d in yaml.safe_load_all(helm(
        None, "template", "ome", str(ROOT / "charts/ome-resources"), "-n", "ome",
        "--set", "ome.controller.kubeAPIQPS=0", "--set", "ome.controller.kubeAPIBurst=0",
        "--set", "ome.controller.inferenceReplicaMaxConcurrentReconciles=0",
        "--set-string", "ome.controller.configCacheTTL=0")) if d]
    args = next(d for d in zeroed if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = {a.partition("=")[0] for a in args}
    assert not flags & {"--kube-api-qps", "--kube-api-burst", "--inferencereplica-max-concurrent-reconciles"}
    assert "--config-cache-ttl=0" in args and "--inferenceservice-max-concurrent-reconciles=4" in args
    unquoted = [d for d in yaml.safe_load_all(helm(
        None, "template", "ome", str(ROOT / "charts/ome-resources"), "-n", "ome",
        "--set", "ome.controller.configCacheTTL=0")) if d]
    args = next(d for d in unquoted if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any(a.startswith("--config-cache-ttl") for a in args)
    # extraEnv, extraVolumes and extraVolumeMounts come after the chart's own, as written.
    extra = [d for d in yaml.safe_load_all(helm(
        None, "template", "ome", str(ROOT / "charts/ome-resources"), "-n", "ome",
        "--set-json", 'ome.controller.extraEnv=[{"name":"HTTPS_PROXY","value":"http://proxy:3128"}]',
        "--set-json", 'ome.controller.extraVolumes=[{"name":"corp-ca","configMap":{"name":"corp-ca-bundle"}}]',
        "--set-json", 'ome.controller.extraVolumeMounts=[{"name":"corp-ca","mountPath":"/etc/corp-ca"}]')) if d]
    pod = next(d for d in extra if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert [e["name"] for e in container["env"]] == ["POD_NAMESPACE", "SECRET_NAME", "HTTPS_PROXY"]
    assert pod["volumes"][-1] == {"name": "corp-ca", "configMap": {"name": "corp-ca-bundle"}}
    assert container["volumeMounts"][-1] == {"name": "corp-ca", "mountPath": "/etc/corp-ca"}


@contextlib.contextmanager
def installed(kubeconfig: Path) -> Iterator[None]:
    helm(kubeconfig, "upgrade", "--install", "ome-crd", str(ROOT / "charts/ome-crd"), "-n", RELEASE_NAMESPACE,
         "--create-namespace", "--take-ownership", "--wait")
    helm(kubeconfig, "upgrade", "--install", "ome", str(ROOT / "charts/ome-resources"), "-n", RELEASE_NAMESPACE,
         "--take-ownership", "--set", "ome.controller.replicaCount=1")
    try:
        yield
    finally:
        helm(kubeconfig, "uninstall", "ome", "-n", RELEASE_NAMESPACE, "--wait")
        # The CRDs carry helm.sh/resource-policy: keep, so the rest of the run keeps its kinds.
        helm(kubeconfig, "uninstall", "ome-crd", "-n", RELEASE_NAMESPACE)


def manager_args(deployment: Obj) -> list[str]:
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return [a for a in args if a.split("=", 1)[0] not in POD_ONLY]


async def test_helm_install_then_minimal_isvc_ready(client: Client, namespace: str, kubeconfig: Path,
                                                    tmp_path: Path) -> None:
    with installed(kubeconfig):
        releases = json.loads(helm(kubeconfig, "list", "-n", RELEASE_NAMESPACE, "-o", "json"))
        assert {(r["name"], r["status"]) for r in releases} == {("ome-crd", "deployed"), ("ome", "deployed")}
        deployment = await client.get(resources.DEPLOYMENTS, "ome-controller-manager", RELEASE_NAMESPACE)
        config = await client.get(resources.CONFIGMAPS, "inferenceservice-config", RELEASE_NAMESPACE)
        # The chart's ConfigMap: `inferenceserviceConfig` plus the entries of the structured values
        # (`ome.controller.lifecycle`, `.rollout`, `.coordination`, `.podDisruptionBudget`, `ome.omeAgent`).
        assert config["data"] == chart_entries(default_values())
        crd = await client.get(resources.CRDS, "inferenceservices.ome.io")
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == "ome-crd"

        # The chart's webhook configurations call the in-cluster Service, whose pods kwok never runs; the local
        # manager registers its own at 127.0.0.1 under the same names. (Server-side applying a url over the
        # chart's service reference is rejected, so they are removed first.)
        for res in (resources.MUTATING_WEBHOOK_CONFIGURATIONS, resources.VALIDATING_WEBHOOK_CONFIGURATIONS):
            await client.delete(res, "inferenceservice.ome.io")
        metrics, probes, webhook = free_ports(3)
        argv = [sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(kubeconfig), *manager_args(deployment),
                "--metrics-bind-address", f"127.0.0.1:{metrics}", "--health-probe-addr", f"127.0.0.1:{probes}",
                "--webhook-port", str(webhook), "--webhook-self-register"]
        assert "--kube-api-qps=100" in argv and "--leader-elect-lease-duration=60s" in argv
        log = tmp_path / "manager.log"
        with log.open("wb") as out:
            # Started once and polled, never awaited: a blocking Popen is fine here.
            proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,  # noqa: ASYNC220
                                    env={**os.environ, "POD_NAMESPACE": RELEASE_NAMESPACE})
        try:
            async def registered() -> bool:
                assert proc.poll() is None, log.read_text()[-3000:]
                hooks = await client.get(resources.MUTATING_WEBHOOK_CONFIGURATIONS, "inferenceservice.ome.io")
                return all("127.0.0.1" in (h["clientConfig"].get("url") or "") for h in hooks["webhooks"])

            await eventually(registered, timeout=60)  # the manager replaced the chart's in-cluster webhooks
            async with catalog(client, namespace) as cat:
                async def created() -> bool:
                    try:  # the webhook answers once the manager registered it at 127.0.0.1
                        await client.create(resources.INFERENCE_SERVICES, {
                            "apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
                            "metadata": {"name": "llama-3-2-1b-instruct"},
                            "spec": {"model": {"name": cat.model}, "engine": {}}}, namespace)
                    except (errors.ServerError, errors.ServerTimeout, errors.TransportError):
                        assert proc.poll() is None, log.read_text()[-3000:]
                        return False
                    return True

                await eventually(created, timeout=60)

                async def ready() -> bool:
                    assert proc.poll() is None, log.read_text()[-3000:]
                    obj = await client.get(resources.INFERENCE_SERVICES, "llama-3-2-1b-instruct", namespace)
                    cond = condition(obj, "Ready")
                    return cond is not None and cond["status"] == "True"

                await eventually(ready, timeout=120)
                await client.delete(resources.INFERENCE_SERVICES, "llama-3-2-1b-instruct", namespace)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        assert proc.returncode == 0, log.read_text()[-3000:]


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
