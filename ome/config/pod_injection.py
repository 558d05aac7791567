"""The `servingSidecar` and `metricsAggregator` entries of inferenceservice-config, read by the pod webhook.

`servingSidecar` configures the container `ome.io/inject-serving-sidecar: "true"` adds (its image, requests
and limits, and the OCI settings `compartmentId`, `authType`, `region`); `metricsAggregator` holds the
defaults of `ome.io/enable-metric-aggregation` and `ome.io/enable-prometheus-scraping`, which the chart
sets to "false". As in v1.3 the values are strings; a JSON boolean is taken as its string.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from ome.config.section import Section


class ServingSidecarConfig(Section):
    image: str = ""
    memory_request: str | None = Field(default=None, alias="memoryRequest")
    memory_limit: str | None = Field(default=None, alias="memoryLimit")
    cpu_request: str | None = Field(default=None, alias="cpuRequest")
    cpu_limit: str | None = Field(default=None, alias="cpuLimit")
    compartment_id: str | None = Field(default=None, alias="compartmentId")
    auth_type: str | None = Field(default=None, alias="authType")
    region: str | None = None
    realm_domain_component: str | None = Field(default=None, alias="realmDomainComponent")


class MetricsAggregatorConfig(Section):
    enable_metric_aggregation: str = Field(default="false", alias="enableMetricAggregation")
    enable_prometheus_scraping: str = Field(default="false", alias="enablePrometheusScraping")

    @field_validator("enable_metric_aggregation", "enable_prometheus_scraping", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if not isinstance(value, str):
            raise ValueError("must be a string, \"true\" or \"false\"")
        return value


__all__ = ["MetricsAggregatorConfig", "ServingSidecarConfig"]
