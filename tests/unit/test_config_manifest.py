"""The shipped manifests: inferenceservice-config carries the chart defaults the docs state, and the
kustomize overlays wire the webhook serving certificate the way the manager expects."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.cmd import manager, rbac
from ome.config import inferenceservice_config
from ome.webhooks import cert_bootstrap, registry

CONFIG = Path(__file__).resolve().parents[2] / "config"
MANIFEST = CONFIG / "configmap" / "inferenceservice-config.yaml"


def test_shipped_config_parses_with_documented_defaults() -> None:
    data = yaml.safe_load(MANIFEST.read_text())["data"]
    config = inferenceservice_config.parse(data)
    assert config.deploy.termination_grace_period_seconds == 600
    assert config.lifecycle.instance_ready_timeout == "30m"
    assert config.lifecycle.update_retry is not None and config.lifecycle.update_retry.max_attempts == 3
    assert config.lifecycle.revision_history_limit == 10
    assert config.omenative_status.status_encoding == "ColumnarV2"
    assert config.ingress.disable_ingress_creation is True
    engine = config.deploy.update_strategy.for_component("engine")
    assert engine is not None and engine.type == "SurgeThenDrain"
    assert (engine.max_surge, engine.max_unavailable) == ("25%", "25%")


# -- webhook serving certificate: config/default bootstraps its own, config/certmanager mounts cert-manager's


def _kustomize(overlay: str) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (for kustomize) is not on PATH")
    done = subprocess.run([kubectl, "kustomize", str(CONFIG / overlay)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    # Parse only what the tests read: the CRDs are most of the output and slow to load.
    wanted = re.compile(r"^kind: (Deployment|Certificate|\w+WebhookConfiguration)$", re.M)
    return [yaml.safe_load(doc) for doc in done.stdout.split("\n---\n") if wanted.search(doc)]


def _manager_pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "ome-controller-manager")
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _cert_volume(pod: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    volume = next(v for v in pod["volumes"] if v["name"] == "cert")
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "cert")
    return volume, mount


def test_default_overlay_bootstraps_a_self_signed_certificate() -> None:
    pod = _manager_pod(_kustomize("default"))
    args = manager.parse_args(pod["containers"][0]["args"])
    assert args.webhook_cert_bootstrap and not args.webhook_self_register
    volume, mount = _cert_volume(pod)
    assert volume == {"name": "cert", "emptyDir": {}}
    assert mount["mountPath"] == args.webhook_cert_dir and not mount.get("readOnly")


def test_certmanager_overlay_mounts_the_issued_secret() -> None:
    docs = _kustomize("certmanager")
    pod = _manager_pod(docs)
    args = manager.parse_args(pod["containers"][0]["args"])
    assert not args.webhook_cert_bootstrap
    volume, mount = _cert_volume(pod)
    assert volume["secret"]["secretName"] == cert_bootstrap.DEFAULT_SECRET_NAME
    assert mount["mountPath"] == args.webhook_cert_dir
    certificate = next(d for d in docs if d["kind"] == "Certificate")
    assert certificate["spec"]["secretName"] == cert_bootstrap.DEFAULT_SECRET_NAME
    assert tuple(certificate["spec"]["dnsNames"]) == cert_bootstrap.service_dns_names(registry.SERVICE_NAME, "ome")
    configurations = [d for d in docs if d["kind"].endswith("WebhookConfiguration")]
    assert len(configurations) == 2
    assert all("cert-manager.io/inject-ca-from" in d["metadata"]["annotations"] for d in configurations)


def test_bootstrap_names_match_the_webhook_service_and_the_role() -> None:
    service = yaml.safe_load((CONFIG / "webhook" / "service.yaml").read_text())
    assert service["metadata"]["name"] == registry.SERVICE_NAME
    role = next(d for d in yaml.safe_load_all(rbac.ROLE_FILE.read_text()) if d and d["kind"] == "Role")
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert {"secrets"} == {res for r in named for res in r["resources"]}
    assert {cert_bootstrap.DEFAULT_SECRET_NAME} == {n for r in named for n in r["resourceNames"]}
