"""The router's own identity: ServiceAccount, Role and RoleBinding `{isvc}-router` (pure).

Routers discover the engine and decoder pods, so each router runs under a ServiceAccount whose Role lets
it get, list and watch pods in its namespace, and nothing else. The three objects carry the router's
labels and are owned by the InferenceService: they go when the router is removed (its `component`
label no longer declared) or the InferenceService is deleted. Router pods always run under this
ServiceAccount, in every mode, as the Go manager does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.resolution import naming, objects
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

RBAC_API: Final = "rbac.authorization.k8s.io"
POD_RULE: Final = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}


def service_account_name(isvc_name: str) -> str:
    return naming.component_name(isvc_name, "router")


def render(isvc: Mapping[str, Any], plan: ComponentPlan) -> list[Obj]:
    """ServiceAccount, Role, RoleBinding, in the order the pods need them."""
    name = service_account_name(plan.isvc)
    namespace = isvc["metadata"]["namespace"]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": objects.metadata(isvc, name, plan.labels)},
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "Role",
            "metadata": objects.metadata(isvc, name, plan.labels),
            "rules": [dict(POD_RULE)],
        },
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "RoleBinding",
            "metadata": objects.metadata(isvc, name, plan.labels),
            "roleRef": {"apiGroup": RBAC_API, "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]
