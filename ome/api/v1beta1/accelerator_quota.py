"""AcceleratorQuota: one node of the fleet's accelerator quota tree (v1.3).

A Cohort node groups other nodes; a ClusterQueue node is a leaf with a budget per
(resource, flavor) pair, rendered into Kueue objects by the quota manager.
"""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    AGE,
    UID,
    CRDInfo,
    Int64,
    KubeObject,
    OMEModel,
    PrinterColumn,
    Quantity,
    Rule,
    Time,
    f,
)
from ome.api.v1beta1.common import Condition
from ome.api.v1beta1.placement import AcceleratorCapacityAttribution

AcceleratorQuotaRole = Literal["Cohort", "ClusterQueue"]
AcceleratorQuotaDistributionPolicy = Literal["Explicit", "Proportional"]

_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_RESOURCE_NAME = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
    r"(/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$"
)
_BUDGET_KEYS = ("resourceName", "resourceFlavor")


class AcceleratorQuotaParentRef(OMEModel):
    name: str = f("name", required=True, max_length=253, pattern=_DNS_SUBDOMAIN)


class AcceleratorQuotaDistribution(OMEModel):
    policy: AcceleratorQuotaDistributionPolicy | None = f("policy")


class AcceleratorClusterShare(OMEModel):
    cluster: str = f("cluster", required=True, max_length=253)
    nominal: Quantity = f("nominal", required=True)


class AcceleratorBudget(OMEModel):
    resource_name: str = f("resourceName", required=True, max_length=253, pattern=_RESOURCE_NAME)
    resource_flavor: str = f("resourceFlavor", required=True, max_length=253, pattern=_DNS_SUBDOMAIN)
    policy: AcceleratorQuotaDistributionPolicy | None = f("policy")
    nominal: Quantity = f("nominal", required=True)
    borrowing_limit: Quantity | None = f("borrowingLimit")
    lending_limit: Quantity | None = f("lendingLimit")
    per_cluster: list[AcceleratorClusterShare] | None = f(
        "perCluster", list_type="map", list_map_keys=("cluster",)
    )


def _effective_policy_is(policy: str) -> str:
    return (
        f"(has(b.policy) ? b.policy == '{policy}' : (has(self.distribution) && "
        f"has(self.distribution.policy) && self.distribution.policy == '{policy}'))"
    )


class AcceleratorQuotaSpec(OMEModel):
    crd_rules = (
        Rule(
            "self.role != 'ClusterQueue' || has(self.parentRef)",
            "a ClusterQueue node must set parentRef; only the reserved root node is parent-less",
        ),
        Rule(
            "self.role != 'Cohort' || (!has(self.priorityTier) && !has(self.distribution))",
            "a Cohort node must not set priorityTier or distribution; no workload binds to a grouping",
        ),
        Rule(
            "self.role != 'Cohort' || !has(self.budgets) || self.budgets.all(b, !has(b.policy) && "
            "!has(b.borrowingLimit) && !has(b.lendingLimit) && !has(b.perCluster))",
            "a Cohort node's budgets carry only resourceName, resourceFlavor, and nominal",
        ),
        Rule(
            "self.role != 'ClusterQueue' || (has(self.budgets) && size(self.budgets) > 0)",
            "a ClusterQueue node must carry at least one budget",
        ),
        Rule(
            f"!has(self.budgets) || self.budgets.all(b, !{_effective_policy_is('Explicit')} || "
            "has(b.perCluster))",
            "a budget whose effective distribution policy is Explicit must set perCluster",
        ),
        Rule(
            f"!has(self.budgets) || self.budgets.all(b, !{_effective_policy_is('Proportional')} || "
            "!has(b.perCluster))",
            "a budget whose effective distribution policy is Proportional must not set perCluster; the "
            "split is computed",
        ),
    )

    role: AcceleratorQuotaRole = f("role", required=True)
    parent_ref: AcceleratorQuotaParentRef | None = f("parentRef")
    priority_tier: str | None = f("priorityTier", max_length=63, pattern=_DNS_SUBDOMAIN)
    distribution: AcceleratorQuotaDistribution | None = f("distribution")
    budgets: list[AcceleratorBudget] | None = f(
        "budgets", max_items=16, list_type="map", list_map_keys=_BUDGET_KEYS
    )


class AcceleratorClusterBudgetStatus(OMEModel):
    cluster: str = f("cluster", required=True)
    nominal: Quantity | None = f("nominal")
    admitted: Quantity | None = f("admitted")
    reserved: Quantity | None = f("reserved")
    borrowed: Quantity | None = f("borrowed")


class AcceleratorBudgetStatus(OMEModel):
    resource_name: str = f("resourceName", required=True)
    resource_flavor: str = f("resourceFlavor", required=True)
    nominal: Quantity | None = f("nominal")
    admitted: Quantity | None = f("admitted")
    reserved: Quantity | None = f("reserved")
    borrowed: Quantity | None = f("borrowed")
    per_cluster: list[AcceleratorClusterBudgetStatus] | None = f(
        "perCluster", list_type="map", list_map_keys=("cluster",)
    )


class AcceleratorClusterCapacityStatus(OMEModel):
    cluster: str = f("cluster", required=True)
    cluster_uid: UID | None = f("clusterUID")
    report_uid: UID | None = f("reportUID")
    report_resource_version: str | None = f("reportResourceVersion")
    report_available: bool | None = f("reportAvailable")
    allocatable: Quantity | None = f("allocatable")
    high_water_mark: Quantity | None = f("highWaterMark")
    observed_at: Time | None = f("observedAt")
    attribution: AcceleratorCapacityAttribution | None = f("attribution")


class AcceleratorCapacityStatus(OMEModel):
    resource_name: str = f("resourceName", required=True)
    resource_flavor: str = f("resourceFlavor", required=True)
    allocatable: Quantity | None = f("allocatable")
    high_water_mark: Quantity | None = f("highWaterMark")
    observed_at: Time | None = f("observedAt")
    per_cluster: list[AcceleratorClusterCapacityStatus] | None = f(
        "perCluster", list_type="map", list_map_keys=("cluster",)
    )
    attribution: AcceleratorCapacityAttribution | None = f("attribution")


class AcceleratorQuotaClusterStatus(OMEModel):
    cluster: str = f("cluster", required=True)
    applied_generation: Int64 | None = f("appliedGeneration")
    applied_time: Time | None = f("appliedTime")
    materialized_generation: Int64 | None = f("materializedGeneration")
    message: str | None = f("message")


class AcceleratorQuotaMaterialization(OMEModel):
    frozen: bool | None = f("frozen")
    frozen_at: Time | None = f("frozenAt")
    reason: str | None = f("reason")
    last_applied_generation: Int64 | None = f("lastAppliedGeneration")
    last_applied_time: Time | None = f("lastAppliedTime")


class AcceleratorQuotaStatus(OMEModel):
    observed_generation: Int64 | None = f("observedGeneration")
    parent: str | None = f("parent")
    source_generation: Int64 | None = f("sourceGeneration")
    budgets: list[AcceleratorBudgetStatus] | None = f("budgets", list_type="map", list_map_keys=_BUDGET_KEYS)
    capacity: list[AcceleratorCapacityStatus] | None = f(
        "capacity", list_type="map", list_map_keys=_BUDGET_KEYS
    )
    clusters: list[AcceleratorQuotaClusterStatus] | None = f(
        "clusters", list_type="map", list_map_keys=("cluster",)
    )
    materialization: AcceleratorQuotaMaterialization | None = f("materialization")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))


class AcceleratorQuota(KubeObject):
    crd = CRDInfo(
        kind="AcceleratorQuota",
        plural="acceleratorquotas",
        singular="acceleratorquota",
        scope="Cluster",
        short_names=("aq",),
        printer_columns=(
            PrinterColumn("Role", "string", ".spec.role"),
            PrinterColumn("Parent", "string", ".spec.parentRef.name"),
            PrinterColumn("Resource", "string", ".status.budgets[0].resourceName"),
            PrinterColumn("Flavor", "string", ".status.budgets[0].resourceFlavor"),
            PrinterColumn("Nominal", "string", ".status.budgets[0].nominal"),
            PrinterColumn("Admitted", "string", ".status.budgets[0].admitted"),
            PrinterColumn("Borrowed", "string", ".status.budgets[0].borrowed", priority=1),
            PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
            PrinterColumn("Degraded", "string", '.status.conditions[?(@.type=="Degraded")].status'),
            AGE,
        ),
        root_rules=(
            Rule(
                "size(self.metadata.name) <= 63",
                "an AcceleratorQuota name may not exceed 63 characters; it is copied into a label value "
                "on every Kueue object the node materializes",
            ),
        ),
    )

    spec: AcceleratorQuotaSpec | None = f("spec")
    status: AcceleratorQuotaStatus | None = f("status")
