"""`ome-manager` run outside the cluster the README's way, with an admin kubeconfig and
`--webhook-self-register`, serves an OMENative InferenceService to Ready; the shipped RBAC is enough to
self-register.

Its webhooks are live in the real apiserver the whole time, so the InferenceReplica the manager projects,
and the finalizer its InferenceReplica controller adds, pass its own replica webhook: the webhook knows
the controller by the documented `ome.io/controller-write: "true"` annotation, not by a user name (the
admin kubeconfig is not the in-cluster ServiceAccount). A user's direct create of a projected-looking
replica, which lacks the annotation, is still denied with the documented message.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.devcluster.cluster import free_ports
from ome.devcluster.kubeapi import KubeApi
from ome.devcluster.operator_config import install_config
from ome.framework import errors
from ome.framework.client import Client
from ome.webhooks import registry, self_register
from tests.e2e.isvc_support import catalog, condition, eventually
from tests.e2e.test_manager_process import _service_account_kubeconfig, manager_rbac

__all__ = ["manager_rbac"]  # the fixture, shared with test_manager_process

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.usefixtures("ome_crds"),
    # The apiserver must dial the manager's 127.0.0.1 webhook server.
    pytest.mark.skipif(bool(os.environ.get("OME_E2E_KUBECONFIG")), reason="needs the local control plane"),
]
WEBHOOK_PREFIX = 'admission webhook "inferencereplica.ome-webhook-server.validator" denied the request: '
CONFIGURATIONS = (resources.MUTATING_WEBHOOK_CONFIGURATIONS, resources.VALIDATING_WEBHOOK_CONFIGURATIONS)


@contextlib.contextmanager
def manager_process(kubeconfig: Path, namespace: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The README's out-of-cluster command line (admin kubeconfig, self-registered webhooks)."""
    [port] = free_ports(1)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(kubeconfig), "--webhook-self-register",
             f"--webhook-port={port}", "--config-namespace", namespace, "--metrics-bind-address=0",
             "--health-probe-bind-address=0", "--log-format=json"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _projected_looking(name: str, isvc: str, uid: str) -> Obj:
    """A replica as a user would copy one: parentRef and the service as controller owner, no annotation."""
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
            "metadata": {"name": name, "ownerReferences": [
                {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": isvc, "uid": uid,
                 "controller": True}]},
            "spec": {"component": "engine", "parentRef": {"name": isvc}, "replicas": 1,
                     "runners": [{"name": "default", "size": 1, "template": {"spec": {"containers": [
                         {"name": "ome-container", "image": "vllm/vllm-openai:v0.9.0"}]}}}]}}


def _expected_denial(namespace: str, name: str, isvc: str) -> str:
    return (f"{WEBHOOK_PREFIX}InferenceReplica {namespace}/{name} is projected by InferenceService "
            f"{namespace}/{isvc} and rejects a direct CREATE without the ome.io/controller-write=true "
            "annotation; edit the InferenceService instead")


async def _cleanup_configurations(client: Client) -> None:
    """A manager killed before it unregistered would leave failurePolicy=Fail hooks for later tests."""
    for res in CONFIGURATIONS:
        with contextlib.suppress(errors.NotFound):
            await client.delete(res, registry.CONFIGURATION_NAME)


async def test_out_of_cluster_manager_serves_omenative_and_its_webhook_still_guards_replicas(
    client: Client, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    log = tmp_path / "manager.log"
    try:
        async with catalog(client, namespace) as cat:
            await install_config(client, namespace)  # the manager refuses to start without it
            with manager_process(kubeconfig, namespace, log) as proc:

                async def webhook_guards() -> bool:
                    assert proc.poll() is None, log.read_text()[-4000:]
                    probe = _projected_looking("probe-engine", "probe", "00000000-0000-0000-0000-000000000000")
                    try:
                        await client.create(resources.INFERENCE_REPLICAS, probe, namespace, dry_run=True)
                    except errors.ApiError as exc:
                        return exc.status == 403 and exc.message.startswith(WEBHOOK_PREFIX)
                    return False  # not registered yet: the dry run was admitted

                await eventually(webhook_guards, timeout=60, interval=0.5)

                isvc = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "llama"},
                        "spec": {"model": {"name": cat.model}, "runtime": {"name": cat.runtime},
                                 "engine": {"minReplicas": 1, "maxReplicas": 1,
                                            "annotations": {"ome.io/deploymentMode": "OMENative"}}}}
                created = await client.create(resources.INFERENCE_SERVICES, isvc, namespace)

                async def ready() -> Obj | None:
                    assert proc.poll() is None, log.read_text()[-4000:]
                    obj = await client.get(resources.INFERENCE_SERVICES, "llama", namespace)
                    cond = condition(obj, "Ready")
                    return obj if cond is not None and cond["status"] == "True" else None

                served = await eventually(ready, timeout=120, interval=0.5)
                assert served["status"]["components"]["engine"], served["status"]

                replica = await client.get(resources.INFERENCE_REPLICAS, "llama-engine", namespace)
                annotations = replica["metadata"]["annotations"]
                assert annotations["ome.io/controller-write"] == "true"
                assert annotations["ome.io/parent-generation"] == str(created["metadata"]["generation"])
                assert replica["metadata"].get("finalizers"), "the finalizer-only update was admitted"
                pods, _ = await client.list(resources.PODS, namespace,
                                            label_selector={"ome.io/inferenceservice": "llama"})
                assert any(p["metadata"]["labels"].get("ome.io/managed-by") == "OMENative" for p in pods)

                with pytest.raises(errors.ApiError) as denied:
                    await client.create(resources.INFERENCE_REPLICAS,
                                        _projected_looking("shadow-engine", "llama", created["metadata"]["uid"]),
                                        namespace)
                assert denied.value.status == 403
                assert denied.value.message == _expected_denial(namespace, "shadow-engine", "llama")
                with pytest.raises(errors.NotFound):
                    await client.get(resources.INFERENCE_REPLICAS, "shadow-engine", namespace)

                await client.delete(resources.INFERENCE_SERVICES, "llama", namespace)
            assert proc.returncode == 0, log.read_text()[-4000:]
            # The manager removed the configurations it registered when it stopped.
            for res in CONFIGURATIONS:
                with pytest.raises(errors.NotFound):
                    await client.get(res, registry.CONFIGURATION_NAME)
    finally:
        await _cleanup_configurations(client)


async def test_shipped_role_lets_the_service_account_self_register(
    admin_api: KubeApi, kubeconfig: Path, client: Client, manager_rbac: None, tmp_path: Path
) -> None:
    """--webhook-self-register server-side applies both configurations (a create the first time) and
    deletes them on exit: the generated ClusterRole must grant all of it to ome-controller-manager."""
    sa_kubeconfig = _service_account_kubeconfig(admin_api, kubeconfig, tmp_path / "sa.kubeconfig")
    ca = self_register.write_serving_certificate(tmp_path / "certs")
    [port] = free_ports(1)
    await _cleanup_configurations(client)
    try:
        async with await Client.from_kubeconfig(str(sa_kubeconfig)) as sa:
            registration = await self_register.register(sa, port=port, ca_bundle=ca)
            for res in CONFIGURATIONS:
                applied = await sa.get(res, registry.CONFIGURATION_NAME)
                assert applied["webhooks"][0]["clientConfig"]["url"].startswith(f"https://127.0.0.1:{port}/")
            await self_register.register(sa, port=port, ca_bundle=ca)  # a restart re-applies (patch)
            await self_register.unregister(sa, registration, only_if_ours=True)
            for res in CONFIGURATIONS:
                with pytest.raises(errors.NotFound):
                    await client.get(res, registry.CONFIGURATION_NAME)
    finally:
        await _cleanup_configurations(client)
