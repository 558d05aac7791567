"""The `rollout` and `canaryAnalysis` keys of `inferenceservice-config` (canary-progression.md,
canary-analysis.md, Controller settings).

`rollout.defaultReadyTimeout` (the chart writes `15m`; the kustomize manifests leave it out: no timeout).
`canaryAnalysis`: `bundledPrometheusAddress`, `defaultProvider`, `queryTimeout` (5s), `maxConcurrency`
(8) and `cacheTTL` (2m). A `queryTimeout` or `cacheTTL` that is not a positive duration, or a
`maxConcurrency` below 1, falls back to its default instead of failing the config.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field, field_validator

from ome.config.durations import parse_duration
from ome.config.section import Section

DEFAULT_QUERY_TIMEOUT: Final = "5s"
DEFAULT_MAX_CONCURRENCY: Final = 8
DEFAULT_CACHE_TTL: Final = "2m"


class RolloutConfig(Section):
    default_ready_timeout: str | None = Field(default=None, alias="defaultReadyTimeout")

    @property
    def ready_timeout_seconds(self) -> float | None:
        value = parse_duration(self.default_ready_timeout)
        return value if value and value > 0 else None


class CanaryAnalysisConfig(Section):
    bundled_prometheus_address: str = Field(default="", alias="bundledPrometheusAddress")
    default_provider: str = Field(default="", alias="defaultProvider")
    query_timeout: str = Field(default=DEFAULT_QUERY_TIMEOUT, alias="queryTimeout")
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, alias="maxConcurrency")
    cache_ttl: str = Field(default=DEFAULT_CACHE_TTL, alias="cacheTTL")

    @field_validator("query_timeout", "cache_ttl", mode="before")
    @classmethod
    def _positive_or_default(cls, value: Any, info: Any) -> str:
        seconds = parse_duration(value) if isinstance(value, str) else None
        if seconds is None or seconds <= 0:
            return DEFAULT_QUERY_TIMEOUT if info.field_name == "query_timeout" else DEFAULT_CACHE_TTL
        return str(value)

    @field_validator("max_concurrency", mode="before")
    @classmethod
    def _at_least_one(cls, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        return DEFAULT_MAX_CONCURRENCY

    @property
    def query_timeout_seconds(self) -> float:
        return parse_duration(self.query_timeout) or 5.0
