"""The `omeAgent` entry of inferenceservice-config: the ome-agent image and the pvc:// metadata Job.

The chart's `ome.omeAgent` values (`image`, `tag`, `metadataJob.*`) land here; the defaults are the ones
serve-models-from-pvc.md lists (`ome-model-metadata`, 256Mi/512Mi, 100m/500m, backoff 2, TTL 3600 s).
A `0` for `backoffLimit` or `ttlSecondsAfterFinished` means the default, and an empty resource value sets
no request or limit. An empty image is accepted here: the metadata controller then reports
`PVCConfigMissing` on each pvc:// model, as v1.3 does, rather than the manager refusing to start.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field, field_validator, model_validator

from ome.config.section import Section

DEFAULT_IMAGE: Final = "ghcr.io/moirai-internal/ome-agent:v1.3.0"
DEFAULT_SERVICE_ACCOUNT: Final = "ome-model-metadata"
DEFAULT_BACKOFF_LIMIT: Final = 2
DEFAULT_TTL_SECONDS: Final = 3600


class MetadataJobConfig(Section):
    service_account: str = Field(default=DEFAULT_SERVICE_ACCOUNT, alias="serviceAccount")
    memory_request: str = Field(default="256Mi", alias="memoryRequest")
    memory_limit: str = Field(default="512Mi", alias="memoryLimit")
    cpu_request: str = Field(default="100m", alias="cpuRequest")
    cpu_limit: str = Field(default="500m", alias="cpuLimit")
    backoff_limit: int = Field(default=DEFAULT_BACKOFF_LIMIT, alias="backoffLimit", ge=0)
    ttl_seconds_after_finished: int = Field(default=DEFAULT_TTL_SECONDS, alias="ttlSecondsAfterFinished",
                                            ge=0)
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    affinity: dict[str, Any] = Field(default_factory=dict)
    priority_class_name: str = Field(default="", alias="priorityClassName")

    @field_validator("service_account")
    @classmethod
    def _service_account_default(cls, value: str) -> str:
        return value or DEFAULT_SERVICE_ACCOUNT

    @property
    def effective_backoff_limit(self) -> int:
        return self.backoff_limit or DEFAULT_BACKOFF_LIMIT

    @property
    def effective_ttl(self) -> int:
        return self.ttl_seconds_after_finished or DEFAULT_TTL_SECONDS


class OmeAgentConfig(Section):
    image: str = DEFAULT_IMAGE
    """The full reference; the chart joins `ome.omeAgent.image` and `.tag` into it."""
    metadata_job: MetadataJobConfig = Field(default_factory=MetadataJobConfig, alias="metadataJob")

    @model_validator(mode="before")
    @classmethod
    def _v13_flat_form(cls, data: Any) -> Any:
        """v1.3 (and its chart, from `ome.omeAgent.metadataJob`) writes the Job's settings beside `image`;
        they fill `metadataJob`, whose own keys win when both are given."""
        if not isinstance(data, dict):
            return data
        flat = {k: v for k, v in data.items() if k in _JOB_KEYS}
        if not flat:
            return data
        nested = data.get("metadataJob")
        rest = {k: v for k, v in data.items() if k not in _JOB_KEYS}
        return {**rest, "metadataJob": {**flat, **(nested if isinstance(nested, dict) else {})}}


_JOB_KEYS: Final = frozenset(f.alias or name for name, f in MetadataJobConfig.model_fields.items())


__all__ = ["DEFAULT_IMAGE", "DEFAULT_SERVICE_ACCOUNT", "MetadataJobConfig", "OmeAgentConfig"]
