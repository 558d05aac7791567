"""The manager's RBAC, derived from what its controllers actually watch plus the writes they declare.

`python -m ome.cmd.rbac [--check]` writes (or checks) config/rbac/role.yaml. Reads come from the informers
the controllers register, so a new watch can never ship without its list/watch permission; writes come
from WRITES below, checked end to end by the e2e test that runs the manager as its ServiceAccount.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client import Configuration

from ome.cmd import wiring
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.config.ome_agent import DEFAULT_SERVICE_ACCOUNT
from ome.framework import metrics_auth
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.webhooks import cert_bootstrap, registry

ROLE_FILE = Path(__file__).resolve().parents[2] / "config" / "rbac" / "role.yaml"
ROLE_NAME = "ome-manager-role"
READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete")

# (apiGroup, resource) -> verbs the controllers write with, beyond the informers' reads.
WRITES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): ("create", "delete", "patch"),
    ("", "pods/status"): ("patch", "update"),
    ("", "services"): WRITE,
    ("", "serviceaccounts"): WRITE,  # the router's identity, with its Role and RoleBinding
    ("rbac.authorization.k8s.io", "roles"): WRITE,
    ("rbac.authorization.k8s.io", "rolebindings"): WRITE,
    ("", "events"): ("create", "patch"),
    # inferenceservice-config, read once at startup; {isvc}-ome-migration-audit, written per migration
    # the pvc:// metadata result of a gone model is deleted
    ("", "configmaps"): ("get", "create", "update", "delete"),
    ("", "persistentvolumeclaims"): READ,
    ("apps", "deployments"): WRITE,
    ("networking.k8s.io", "ingresses"): WRITE,
    ("apps", "controllerrevisions"): WRITE,
    ("autoscaling", "horizontalpodautoscalers"): WRITE,
    ("policy", "poddisruptionbudgets"): WRITE,
    ("apps", "deployments/scale"): ("get", "update", "patch"),  # class None holds the count
    # KEDA's and AutoscalerPolicy's informers exist only when served/enabled at start.
    ("keda.sh", "scaledobjects"): READ + WRITE,
    ("ome.io", "autoscalerpolicies"): READ,
    ("ome.io", "autoscalerpolicies/status"): ("get", "update", "patch"),
    # RolloutPolicy's informer exists only when its CRD is served at start; canary analysis reads the
    # bearer token Secret a canary's prometheus.authRef (or a metricProviders binding) names.
    ("ome.io", "rolloutpolicies"): READ,
    ("ome.io", "rolloutpolicies/status"): ("get", "update", "patch"),
    ("", "secrets"): ("get",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("get",),  # is a CRD served?
    ("leaderworkerset.x-k8s.io", "leaderworkersets"): WRITE,
    # get: is an Instance's PodGroup name held by one being deleted (PodGroupTerminating); list: the
    # scheduleTimeoutSeconds sync of existing groups.
    ("scheduling.x-k8s.io", "podgroups"): ("get", "list") + WRITE,
    ("ome.io", "inferenceservices"): ("update", "patch", "delete"),
    ("ome.io", "inferenceservices/status"): ("get", "update", "patch"),
    ("ome.io", "inferenceservices/finalizers"): ("update",),
    ("ome.io", "inferencereplicas"): WRITE,
    ("ome.io", "inferencereplicas/status"): ("get", "update", "patch"),
    ("ome.io", "inferencereplicas/scale"): ("get", "update", "patch"),
    ("ome.io", "inferencereplicas/finalizers"): ("update",),  # blockOwnerDeletion on children
    # The PodMonitor informer exists only when its CRD is served, so the inspection cannot see it.
    ("monitoring.coreos.com", "podmonitors"): READ + WRITE,
    # Gateway API routes and the backend policy kinds: their informers exist only when served at start.
    ("gateway.networking.k8s.io", "httproutes"): READ + WRITE,
    ("gateway.envoyproxy.io", "backendtrafficpolicies"): READ + WRITE,
    ("networking.istio.io", "destinationrules"): READ + WRITE,
    ("ome.io", "basemodels"): ("update", "patch"),
    ("ome.io", "basemodels/status"): ("get", "update", "patch"),
    ("ome.io", "basemodels/finalizers"): ("update",),
    ("ome.io", "clusterbasemodels"): ("update", "patch"),
    ("ome.io", "clusterbasemodels/status"): ("get", "update", "patch"),
    ("ome.io", "clusterbasemodels/finalizers"): ("update",),
    ("ome.io", "acceleratorclasses/status"): ("get", "update", "patch"),
    # status.inheritanceChain and InheritanceReady
    ("ome.io", "servingruntimes/status"): ("get", "update", "patch"),
    ("ome.io", "clusterservingruntimes/status"): ("get", "update", "patch"),
    # benchmark and pvc:// metadata Jobs: created once, never changed; metadata Jobs of a gone model deleted
    ("batch", "jobs"): ("create", "delete"),
    ("ome.io", "benchmarkjobs/status"): ("get", "update", "patch"),
    ("ome.io", "benchmarkjobs/finalizers"): ("update",),  # blockOwnerDeletion on the Job
}

# Grants on named objects (resourceNames), which the (apiGroup, resource) table above cannot express:
# --webhook-cert-bootstrap sets the caBundle of OME's own webhook configurations, and no others;
# --webhook-self-register server-side applies them (a create, which the apiserver authorizes with the
# object's name, so the named rule covers it) and deletes them on exit.
NAMED_CLUSTER_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["admissionregistration.k8s.io"],
     "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
     "resourceNames": [registry.CONFIGURATION_NAME], "verbs": ["create", "delete", "get", "patch"]},
    # The RoleBinding `ome-model-metadata-<namespace>` lets a metadata Job outside OME's namespace write
    # its result; binding a ClusterRole needs `bind` on it (or every permission it grants).
    {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
     "resourceNames": [DEFAULT_SERVICE_ACCOUNT], "verbs": ["bind"]},
]

# What the ome-agent of a pvc:// metadata Job may do, bound in OME's namespace only: write its result.
METADATA_AGENT_ROLE: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
    "metadata": {"name": DEFAULT_SERVICE_ACCOUNT},
    "rules": [{"apiGroups": [""], "resources": ["configmaps"],
               "verbs": ["create", "get", "list", "patch", "update"]}],
}

# --metrics-secure (framework/metrics_auth): the manager asks the apiserver who each scrape's token belongs to
# and whether that user may get /metrics. The names are v1.3's: ome-metrics-auth-role (bound to the manager
# in role_binding.yaml) and ome-metrics-reader, which an operator binds to the scraper's identity.
METRICS_AUTH_ROLE: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
    "metadata": {"name": "ome-metrics-auth-role"},
    "rules": [{"apiGroups": [metrics_auth.TOKEN_REVIEWS.group],
               "resources": [metrics_auth.TOKEN_REVIEWS.plural], "verbs": ["create"]},
              {"apiGroups": [metrics_auth.SUBJECT_ACCESS_REVIEWS.group],
               "resources": [metrics_auth.SUBJECT_ACCESS_REVIEWS.plural], "verbs": ["create"]}],
}
METRICS_READER_ROLE: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
    "metadata": {"name": "ome-metrics-reader"},
    "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
}

# What lives in the manager's own namespace, as a Role rather than cluster-wide: leader election, and the
# Secret of --webhook-cert-bootstrap (create cannot be limited by name; get and update are).
NAMESPACED_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "list", "watch", "create", "update", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [cert_bootstrap.DEFAULT_SECRET_NAME],
     "verbs": ["get", "update"]},
]


def manager_for_inspection() -> Manager:
    """A manager with every controller registered and no connection: registering does no I/O."""
    client = Client.from_configuration(Configuration(host="http://127.0.0.1:9"))
    manager = Manager(client, ManagerOptions(install_signal_handlers=False))
    settings = wiring.Settings(InferenceServiceConfig(), lws_served=True, config_namespace="ome")
    wiring.add_controllers(manager, settings)
    return manager


def required_permissions(manager: Manager) -> dict[tuple[str, str], set[str]]:
    perms: dict[tuple[str, str], set[str]] = defaultdict(set)
    for informer in manager.cache.informers:
        perms[(informer.resource.group, informer.resource.plural)].update(READ)
    for key, verbs in WRITES.items():
        perms[key].update(verbs)
    return perms


def cluster_role(manager: Manager) -> dict[str, Any]:
    rules = [{"apiGroups": [group], "resources": [resource], "verbs": sorted(verbs)}
             for (group, resource), verbs in sorted(required_permissions(manager).items())]
    rules += NAMED_CLUSTER_RULES
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": ROLE_NAME}, "rules": rules}


def render() -> str:
    header = "# Generated by `python -m ome.cmd.rbac`; do not edit.\n"
    # The Role keeps its historical name (config/rbac/role_binding.yaml binds it) though it holds more now.
    leader = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
              "metadata": {"name": "ome-leader-election-role", "namespace": "ome"},
              "rules": NAMESPACED_RULES}
    return header + yaml.safe_dump_all([cluster_role(manager_for_inspection()), leader, METADATA_AGENT_ROLE,
                                        METRICS_AUTH_ROLE, METRICS_READER_ROLE], sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ome.cmd.rbac")
    parser.add_argument("--check", action="store_true", help="exit 1 when config/rbac/role.yaml is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not ROLE_FILE.exists() or ROLE_FILE.read_text() != text:
            print(f"{ROLE_FILE} is stale: run python -m ome.cmd.rbac", file=sys.stderr)
            return 1
        return 0
    ROLE_FILE.parent.mkdir(parents=True, exist_ok=True)
    ROLE_FILE.write_text(text)
    print(f"wrote {ROLE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
