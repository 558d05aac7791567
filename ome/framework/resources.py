"""Resource types the framework talks to, and their REST paths.

A `Resource` is the static fact the client needs to build a URL (group, version, plural, scope) plus
the kind it serves. There is no discovery: every built-in type we touch is declared here, and the
application registers its own kinds with `register()` (OME's are in ome/api/resources.py), so a typo
fails at import time instead of as a 404 at runtime. The framework knows no application kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Resource:
    """One served resource: `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]`."""

    group: str
    """API group; "" for the core group served under /api."""
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: frozenset[str] = field(default_factory=frozenset)
    """Subresources `path()` accepts, such as "status" and "scale"."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def name(self) -> str:
        """`plural.group` as kubectl prints it (`pods`, `deployments.apps`); used as a metric label."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """REST path; `namespace=None` on a namespaced type addresses all namespaces (list and watch)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and not self.namespaced:
            raise ValueError(f"{self.kind} is cluster-scoped; got namespace {namespace!r}")
        if name is not None and self.namespaced and not namespace:
            raise ValueError(f"{self.kind} {name!r} is namespaced; a namespace is required")
        if subresource is not None:
            if name is None:
                raise ValueError(f"subresource {subresource!r} of {self.kind} needs a name")
            if subresource not in self.subresources:
                raise ValueError(f"{self.kind} has no subresource {subresource!r}")
        parts = [prefix]
        if namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"empty {self.kind} name")
            parts.append(quote(name, safe=""))
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)


_STATUS: Final = frozenset({"status"})
_STATUS_SCALE: Final = frozenset({"status", "scale"})


def _core(kind: str, plural: str, namespaced: bool = True, sub: frozenset[str] = frozenset()) -> Resource:
    return Resource("", "v1", kind, plural, namespaced, sub)


# Core group.
PODS: Final = _core(
    "Pod", "pods", sub=frozenset({"status", "eviction", "binding", "log", "ephemeralcontainers"})
)
SERVICES: Final = _core("Service", "services", sub=_STATUS)
CONFIGMAPS: Final = _core("ConfigMap", "configmaps")
SECRETS: Final = _core("Secret", "secrets")
EVENTS: Final = _core("Event", "events")
NAMESPACES: Final = _core("Namespace", "namespaces", namespaced=False, sub=frozenset({"status", "finalize"}))
NODES: Final = _core("Node", "nodes", namespaced=False, sub=_STATUS)
SERVICE_ACCOUNTS: Final = _core("ServiceAccount", "serviceaccounts", sub=frozenset({"token"}))
PVCS: Final = _core("PersistentVolumeClaim", "persistentvolumeclaims", sub=_STATUS)
PVS: Final = _core("PersistentVolume", "persistentvolumes", namespaced=False, sub=_STATUS)
ENDPOINTS: Final = _core("Endpoints", "endpoints")
RESOURCE_QUOTAS: Final = _core("ResourceQuota", "resourcequotas", sub=_STATUS)

# Built-in groups.
DEPLOYMENTS: Final = Resource("apps", "v1", "Deployment", "deployments", True, _STATUS_SCALE)
STATEFULSETS: Final = Resource("apps", "v1", "StatefulSet", "statefulsets", True, _STATUS_SCALE)
DAEMONSETS: Final = Resource("apps", "v1", "DaemonSet", "daemonsets", True, _STATUS)
REPLICASETS: Final = Resource("apps", "v1", "ReplicaSet", "replicasets", True, _STATUS_SCALE)
CONTROLLER_REVISIONS: Final = Resource("apps", "v1", "ControllerRevision", "controllerrevisions", True)
JOBS: Final = Resource("batch", "v1", "Job", "jobs", True, _STATUS)
PDBS: Final = Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, _STATUS)
LEASES: Final = Resource("coordination.k8s.io", "v1", "Lease", "leases", True)
ENDPOINT_SLICES: Final = Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True)
HPAS: Final = Resource(
    "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, _STATUS
)
INGRESSES: Final = Resource("networking.k8s.io", "v1", "Ingress", "ingresses", True, _STATUS)
ROLES: Final = Resource("rbac.authorization.k8s.io", "v1", "Role", "roles", True)
ROLE_BINDINGS: Final = Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True)
CLUSTER_ROLES: Final = Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)
CLUSTER_ROLE_BINDINGS: Final = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False
)
CRDS: Final = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, _STATUS
)
_ADMISSION: Final = "admissionregistration.k8s.io"
MUTATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    _ADMISSION, "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False
)
VALIDATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    _ADMISSION, "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False
)

# Third-party kinds OME may drive when their CRDs are served.
SCALED_OBJECTS: Final = Resource("keda.sh", "v1alpha1", "ScaledObject", "scaledobjects", True, _STATUS)
HTTP_ROUTES: Final = Resource("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes", True, _STATUS)
LEADER_WORKER_SETS: Final = Resource(
    "leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets", True, _STATUS_SCALE
)

_REGISTRY: dict[tuple[str, str], Resource] = {}


def register(resource: Resource) -> Resource:
    """Make `resource_for` know a type; registering the same type twice is fine, a different one is not."""
    key = (resource.api_version, resource.kind)
    existing = _REGISTRY.setdefault(key, resource)
    if existing != resource:
        raise ValueError(f"{resource.api_version} {resource.kind} is already registered as {existing}")
    return resource


def resource_for(api_version: str, kind: str) -> Resource:
    """The registered resource serving `kind` in `api_version` (e.g. "apps/v1", "Deployment")."""
    try:
        return _REGISTRY[(api_version, kind)]
    except KeyError:
        raise KeyError(
            f"unknown resource {api_version} {kind}: declare it, or register() it before use"
        ) from None


def registered() -> list[Resource]:
    """Every registered resource, in registration order."""
    return list(_REGISTRY.values())


for _res in [value for value in list(globals().values()) if isinstance(value, Resource)]:
    register(_res)
del _res
