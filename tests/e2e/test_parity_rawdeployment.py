"""Parity with the Go manager on the real control plane (RawDeployment), with the manager authenticated as
its ServiceAccount under the generated RBAC:

- an engine pod whose runtime sets no readiness probe gets the default TCP probe on `ome-container`;
- the router runs under its own ServiceAccount `{isvc}-router`, bound to a Role that reads pods, which
  the manager may create (RBAC's escalation check passes with the generated ClusterRole);
- removing the router removes its ServiceAccount, Role and RoleBinding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ome.api import resources
from ome.devcluster.kubeapi import KubeApi
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import catalog, eventually, running_manager
from tests.e2e.test_manager_process import _service_account_kubeconfig, manager_rbac  # noqa: F401

Obj = dict[str, Any]
NAME = "parity"
PROBE = {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
         "failureThreshold": 3}
IDENTITY = (resources.SERVICE_ACCOUNTS, resources.ROLES, resources.ROLE_BINDINGS)


async def _pod(client: Client, namespace: str, app: str) -> Obj | None:
    pods, _ = await client.list(resources.PODS, namespace, label_selector={"app": app})
    return pods[0] if pods else None


def _container(pod: Obj, name: str) -> Obj:
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


async def _gone(client: Client, namespace: str) -> bool:
    for res in IDENTITY:
        try:
            obj = await client.get(res, f"{NAME}-router", namespace)
        except errors.NotFound:
            continue
        if not obj["metadata"].get("deletionTimestamp"):
            return False
    return True


async def test_rawdeployment_pod_gets_the_tcp_readiness_probe_and_the_router_its_own_identity(
    admin_api: KubeApi, kubeconfig: Path, client: Client, namespace: str, ome_crds: list[str],
    manager_rbac: None, tmp_path: Path,  # noqa: F811
) -> None:
    sa_kubeconfig = _service_account_kubeconfig(admin_api, kubeconfig, tmp_path / "sa.kubeconfig")
    async with await Client.from_kubeconfig(str(sa_kubeconfig)) as as_manager:
        async with catalog(client, namespace, router=True) as cat, running_manager(as_manager):
            body = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": NAME},
                    "spec": {"model": {"name": cat.model}, "engine": {}, "router": {}}}
            isvc = await client.create(resources.INFERENCE_SERVICES, body, namespace)

            # The runtime's engine runner has no readiness probe: the pod gets OME's TCP probe.
            engine = await eventually(lambda: _pod(client, namespace, f"{NAME}-engine"), timeout=90)
            assert _container(engine, "ome-container")["readinessProbe"] == PROBE

            # The router pod was admitted under its own ServiceAccount, which OME created first.
            router = await eventually(lambda: _pod(client, namespace, f"{NAME}-router"), timeout=90)
            assert router["spec"]["serviceAccountName"] == f"{NAME}-router"
            assert "readinessProbe" not in _container(router, "router")  # only ome-container gets one
            for res in IDENTITY:
                obj = await client.get(res, f"{NAME}-router", namespace)
                [owner] = obj["metadata"]["ownerReferences"]
                assert (owner["kind"], owner["uid"], owner["controller"]) == (
                    "InferenceService", isvc["metadata"]["uid"], True)
            role = await client.get(resources.ROLES, f"{NAME}-router", namespace)
            assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
            binding = await client.get(resources.ROLE_BINDINGS, f"{NAME}-router", namespace)
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{NAME}-router",
                                            "namespace": namespace}]

            # Dropping the router removes its identity with it.
            await client.patch(resources.INFERENCE_SERVICES, NAME, {"spec": {"router": None}}, namespace)
            await eventually(lambda: _gone(client, namespace), timeout=60)
            await client.delete(resources.INFERENCE_SERVICES, NAME, namespace)
