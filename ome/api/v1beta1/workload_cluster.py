"""WorkloadCluster: a cluster the multi-cluster control plane can place workloads onto (alpha)."""

from __future__ import annotations

from ome.api.v1beta1.base import (
    AGE,
    CRDInfo,
    KubeObject,
    OMEModel,
    PrinterColumn,
    Rule,
    SecretReferenceDict,
    f,
)
from ome.api.v1beta1.common import Condition


class KubeConfigSource(OMEModel):
    secret_ref: SecretReferenceDict = f("secretRef", required=True)
    key: str | None = f("key", crd_default="kubeconfig")


class ClusterProfileRef(OMEModel):
    name: str = f("name", required=True)


class ClusterConnectionSource(OMEModel):
    crd_rules = (
        Rule(
            "has(self.kubeConfig) != has(self.clusterProfileRef)",
            "exactly one of kubeConfig or clusterProfileRef must be set",
        ),
    )

    kube_config: KubeConfigSource | None = f("kubeConfig")
    cluster_profile_ref: ClusterProfileRef | None = f("clusterProfileRef")


class WorkloadClusterSpec(OMEModel):
    cluster_source: ClusterConnectionSource = f("clusterSource", required=True)


class WorkloadClusterStatus(OMEModel):
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))


class WorkloadCluster(KubeObject):
    crd = CRDInfo(
        kind="WorkloadCluster",
        plural="workloadclusters",
        singular="workloadcluster",
        scope="Cluster",
        short_names=("wlc",),
        printer_columns=(
            PrinterColumn("Reachable", "string", '.status.conditions[?(@.type=="Ready")].status'),
            AGE,
        ),
    )

    spec: WorkloadClusterSpec | None = f("spec")
    status: WorkloadClusterStatus | None = f("status")
