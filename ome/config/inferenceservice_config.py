"""The `inferenceservice-config` ConfigMap: what the InferenceService controller reads from it.

Each data key holds one JSON document (`deploy`, `ingress`, `lifecycle`, ...). `parse()` turns the
ConfigMap's data into one validated `InferenceServiceConfig`; `load()` reads the ConfigMap from
`POD_NAMESPACE` (default `ome`). Defaults are the `ome-resources` chart's values, so a key the
ConfigMap leaves out behaves as in a chart install. Unknown fields are kept, not rejected: newer charts
may carry settings this controller does not read yet.

A bad entry is fatal: the manager must exit at startup with the documented line, so `parse()` raises
`ConfigError` with its prefix: `Failed to initialize deployment configuration` (deploy),
`Failed to initialize lifecycle scale configuration` (lifecycle), `Failed to initialize OMENative status
configuration` (omenativeStatus, checked strictly as v1.3 does: unknown or repeated fields are errors).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

import orjson
from pydantic import Field, ValidationError, field_validator, model_validator

from ome.config.canary_config import CanaryAnalysisConfig, RolloutConfig
from ome.config.coordination_config import CoordinationConfig
from ome.config.durations import is_duration, parse_duration
from ome.config.event_recorder_config import EventRecorderConfig
from ome.config.gang_schedule import GangScheduleTimeoutConfig
from ome.config.migration_lifecycle import AuditConfig, AutoMigrateConfig, ForceDeleteConfig
from ome.config.ome_agent import OmeAgentConfig
from ome.config.omenative_status_config import OMENativeStatusConfig, parse_omenative_status
from ome.config.pdb_config import PDB_CONFIG_ERROR, PDBConfig
from ome.config.pod_injection import MetricsAggregatorConfig, ServingSidecarConfig
from ome.config.section import Section
from ome.framework import errors, resources
from ome.framework.client import Client

CONFIGMAP_NAME: Final = "inferenceservice-config"
DEFAULT_NAMESPACE: Final = "ome"
NAMESPACE_ENV: Final = "POD_NAMESPACE"
DEPLOY_INIT_ERROR: Final = "Failed to initialize deployment configuration"
LIFECYCLE_INIT_ERROR: Final = "Failed to initialize lifecycle scale configuration"
OMENATIVE_STATUS_INIT_ERROR: Final = "Failed to initialize OMENative status configuration"
DEFAULT_DOMAIN_TEMPLATE: Final = "{{ .Name }}.{{ .Namespace }}.{{ .IngressDomain }}"
# The only default mode v1.3 accepts: OMENative is opted into per InferenceService, never by default.
SUPPORTED_DEFAULT_MODE: Final = "RawDeployment"

UpdateStrategyType = Literal["SurgeThenDrain", "RecreatePod", "InPlaceIfPossible", "InPlaceOnly"]


class ConfigError(Exception):
    """The ConfigMap holds a value the controller cannot run with."""


def _positive_budget(value: int | str | None) -> int | str | None:
    """An update budget must let at least one Instance move, or no rollout ever starts."""
    if value is None:
        return None
    if isinstance(value, str):
        number = value[:-1] if value.endswith("%") else value
        if not number.isdigit():
            raise ValueError(f"{value!r} is not an integer or percentage")
        if int(number) <= 0:
            raise ValueError(f"must be > 0, got {value!r}")
    elif value <= 0:
        raise ValueError(f"must be > 0, got {value}")
    return value


class ComponentUpdateStrategy(Section):
    type: UpdateStrategyType = "SurgeThenDrain"
    max_surge: int | str | None = Field(default="25%", alias="maxSurge")
    max_unavailable: int | str | None = Field(default="25%", alias="maxUnavailable")

    _check_budgets = field_validator("max_surge", "max_unavailable")(_positive_budget)


class UpdateStrategyDefaults(Section):
    """deploy.updateStrategy: per-component defaults for OMENative components that set none."""

    engine: ComponentUpdateStrategy | None = ComponentUpdateStrategy()
    decoder: ComponentUpdateStrategy | None = ComponentUpdateStrategy()
    router: ComponentUpdateStrategy | None = ComponentUpdateStrategy()

    def for_component(self, component: str) -> ComponentUpdateStrategy | None:
        found: ComponentUpdateStrategy | None = getattr(self, component, None)
        return found


CHART_MAX_REPLICAS: Final = {"engine": 3, "decoder": 3, "router": 2}


class ReplicasDefaults(Section):
    """deploy.replicas: the bounds a component gets when neither the InferenceService nor its runtime sets
    them. Without the `replicas` object the chart's values apply; with it, exactly what it lists (a key left
    out or `null` means no default)."""

    default_min_replicas: int | None = Field(default=None, alias="defaultMinReplicas")
    default_max_replicas: dict[str, int | None] = Field(default_factory=dict, alias="defaultMaxReplicas")

    @field_validator("default_min_replicas")
    @classmethod
    def _positive_min(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError(f"invalid deploy config, replicas.defaultMinReplicas must be > 0, got {value}")
        return value

    @field_validator("default_max_replicas")
    @classmethod
    def _positive_max(cls, value: dict[str, int | None]) -> dict[str, int | None]:
        for key, number in value.items():
            if number is not None and number <= 0:
                raise ValueError(
                    f"invalid deploy config, replicas.defaultMaxReplicas.{key} must be > 0, got {number}"
                )
        return value

    def max_for(self, component: str) -> int | None:
        return self.default_max_replicas.get(component)


CHART_REPLICAS: Final = ReplicasDefaults(defaultMinReplicas=1, defaultMaxReplicas=dict(CHART_MAX_REPLICAS))


class DeployConfig(Section):
    default_deployment_mode: str = Field(default=SUPPORTED_DEFAULT_MODE, alias="defaultDeploymentMode")
    termination_grace_period_seconds: int | None = Field(
        default=600, alias="terminationGracePeriodSeconds", gt=0
    )
    """Filled on every component pod spec that neither the InferenceService nor the runtime sets."""
    min_ready_seconds: int | None = Field(default=None, alias="minReadySeconds")
    replicas: ReplicasDefaults | None = CHART_REPLICAS
    """`null` removes every default; absent keeps the chart's."""
    update_strategy: UpdateStrategyDefaults = Field(
        default_factory=UpdateStrategyDefaults, alias="updateStrategy"
    )

    @field_validator("min_ready_seconds")
    @classmethod
    def _non_negative_min_ready(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"invalid deploy config, minReadySeconds must be >= 0, got {value}")
        return value

    @field_validator("default_deployment_mode")
    @classmethod
    def _only_raw_deployment(cls, value: str) -> str:
        if not value:
            raise ValueError("invalid deploy config, defaultDeploymentMode is required")
        if value != SUPPORTED_DEFAULT_MODE:
            raise ValueError(
                f"invalid deployment mode {value!r}. Supported default mode is {SUPPORTED_DEFAULT_MODE}"
            )
        return value


_CLASS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class IngressGatewaySpec(Section):
    """One Gateway the HTTPRoutes attach to: `namespace/name`, the domain of the host on it, and the name
    of its entry in status.addresses."""

    ome_ingress_gateway: str = Field(default="", alias="omeIngressGateway")
    ingress_domain: str = Field(default="", alias="ingressDomain")
    class_: str = Field(default="", alias="class")


class NamespaceIngressGateways(Section):
    """namespaceIngressGateways.<namespace>: the Gateways for the InferenceServices of one namespace."""

    primary: IngressGatewaySpec = Field(default_factory=IngressGatewaySpec)
    additional: list[IngressGatewaySpec] | None = None
    """None keeps the cluster-wide additionalIngressGateways; [] means none."""


class IngressConfig(Section):
    ingress_gateway: str | None = Field(default=None, alias="ingressGateway")
    ingress_service: str | None = Field(default=None, alias="ingressService")
    ome_ingress_gateway: str | None = Field(default=None, alias="omeIngressGateway")
    ingress_domain: str = Field(default="svc.cluster.local", alias="ingressDomain")
    ingress_class_name: str | None = Field(default=None, alias="ingressClassName")
    additional_ingress_domains: list[str] | None = Field(default=None, alias="additionalIngressDomains")
    domain_template: str = Field(default=DEFAULT_DOMAIN_TEMPLATE, alias="domainTemplate")
    url_scheme: str = Field(default="http", alias="urlScheme")
    path_template: str = Field(default="", alias="pathTemplate")
    disable_istio_virtual_host: bool = Field(default=False, alias="disableIstioVirtualHost")
    disable_ingress_creation: bool = Field(default=True, alias="disableIngressCreation")
    enable_gateway_api: bool = Field(default=False, alias="enableGatewayAPI")
    # Gateway API settings (v1.3). A key the ConfigMap leaves out behaves as the docs say a kustomize
    # install does: bare-domain shared host, hashing on x-routing-key only, no route timeout of OME's own.
    ome_ingress_gateway_class: str = Field(default="", alias="omeIngressGatewayClass")
    per_isvc_subdomain: bool = Field(default=False, alias="perISVCSubdomain")
    shared_host_prefix: str = Field(default="", alias="sharedHostPrefix")
    additional_ingress_gateways: list[IngressGatewaySpec] = Field(
        default_factory=list, alias="additionalIngressGateways"
    )
    namespace_ingress_gateways: dict[str, NamespaceIngressGateways] = Field(
        default_factory=dict, alias="namespaceIngressGateways"
    )
    consistent_hash_headers: list[str] = Field(
        default_factory=lambda: ["x-routing-key"], alias="consistentHashHeaders"
    )
    default_route_timeout_seconds: int | None = Field(default=None, alias="defaultRouteTimeoutSeconds")

    @model_validator(mode="after")
    def _classes_are_labels(self) -> IngressConfig:
        # A class names an entry of status.addresses, so it must be a lowercase RFC 1123 label.
        found = [("omeIngressGatewayClass", self.ome_ingress_gateway_class)]
        found += [(f"additionalIngressGateways[{i}].class", gw.class_)
                  for i, gw in enumerate(self.additional_ingress_gateways)]
        for namespace, entry in self.namespace_ingress_gateways.items():
            found.append((f'namespaceIngressGateways["{namespace}"].primary.class', entry.primary.class_))
            found += [(f'namespaceIngressGateways["{namespace}"].additional[{i}].class', gw.class_)
                      for i, gw in enumerate(entry.additional or [])]
        for where, value in found:
            if value and (len(value) > 63 or not _CLASS_LABEL.fullmatch(value)):
                raise ValueError(f"{where} \"{value}\" is not a lowercase RFC 1123 label")
        return self

    @field_validator("domain_template", "ingress_domain", "url_scheme")
    @classmethod
    def _empty_means_default(cls, value: str, info: Any) -> str:
        # Upstream fills these when the ConfigMap writes "", so "" must not reach the URL builder.
        defaults = {
            "domain_template": DEFAULT_DOMAIN_TEMPLATE,
            "ingress_domain": "example.com",
            "url_scheme": "http",
        }
        return value or defaults[info.field_name]


class UpdateRetry(Section):
    max_attempts: int = Field(default=3, alias="maxAttempts", gt=0)
    initial_delay: str = Field(default="1m", alias="initialDelay")
    max_delay: str = Field(default="30m", alias="maxDelay")
    multiplier: float = Field(default=2.0, ge=1)


class TeardownConfig(Section):
    deadline: str | None = None
    """How long after its deletion a replica's finalizer is released even with pods left; None holds."""

    @field_validator("deadline")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None and not is_duration(value):
            raise ValueError(f"teardown.deadline {value!r} is not a duration such as 30m or 1h30m")
        return value


# Documented lifecycle keys this controller validates but does not act on yet; the manager names each one
# that is set in a startup warning, so none is ignored silently.
# Every documented lifecycle key is acted on now (the pod batching keys in ome/omenative/pod_batching.py and
# scale_down_batching.py, gangScheduleTimeout in ome/omenative/gang_timeout.py); a key added to the docs and
# not yet acted on goes here, to be named in a startup warning rather than ignored silently.
LIFECYCLE_NOT_ACTED_ON: Final[tuple[str, ...]] = ()


class LifecycleConfig(Section):
    instance_ready_timeout: str | None = Field(default="30m", alias="instanceReadyTimeout")
    update_retry: UpdateRetry | None = Field(default_factory=UpdateRetry, alias="updateRetry")
    # Not the chart's 10 when left out: "with neither set, OME keeps every revision"
    # (omenative-update-strategies.md); the chart and config/configmap both write 10.
    revision_history_limit: int | None = Field(default=None, alias="revisionHistoryLimit", gt=0)
    stuck_pod_grace_period: str | None = Field(default=None, alias="stuckPodGracePeriod")
    unschedulable_grace_period: str | None = Field(default=None, alias="unschedulableGracePeriod")
    gang_schedule_timeout: GangScheduleTimeoutConfig | None = Field(default=None, alias="gangScheduleTimeout")
    scale_up_pod_batch_size: int | None = Field(default=None, alias="scaleUpPodBatchSize")
    scale_down_pod_batch_size: int | None = Field(default=None, alias="scaleDownPodBatchSize")
    scale_down_requeue_interval: str | None = Field(default=None, alias="scaleDownRequeueInterval")
    teardown: TeardownConfig = Field(default_factory=TeardownConfig)
    # Typed, so a value of the wrong JSON type stops the start (ome/config/migration_lifecycle.py).
    audit: AuditConfig | None = None
    auto_migrate: AutoMigrateConfig | None = Field(default=None, alias="autoMigrate")
    force_delete_block: ForceDeleteConfig | None = Field(default=None, alias="forceDelete")

    @field_validator("scale_up_pod_batch_size", "scale_down_pod_batch_size", mode="before")
    @classmethod
    def _positive_batch(cls, value: Any, info: Any) -> Any:
        name = {"scale_up_pod_batch_size": "scaleUpPodBatchSize",
                "scale_down_pod_batch_size": "scaleDownPodBatchSize"}[info.field_name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"lifecycle.{name} must be a positive integer, got {value!r}")
        return value

    @field_validator("stuck_pod_grace_period", "unschedulable_grace_period", "scale_down_requeue_interval")
    @classmethod
    def _positive_duration(cls, value: str | None, info: Any) -> str | None:
        name = {"stuck_pod_grace_period": "stuckPodGracePeriod",
                "unschedulable_grace_period": "unschedulableGracePeriod",
                "scale_down_requeue_interval": "scaleDownRequeueInterval"}[info.field_name]
        if value is not None and (not is_duration(value) or (parse_duration(value) or 0) <= 0):
            raise ValueError(f"lifecycle.{name} must be a positive duration such as 90s or 15m, "
                             f"got {value!r}")
        return value

    def gang_clamp(self) -> tuple[float, float] | None:
        """lifecycle.gangScheduleTimeout as (min, max) seconds; None when unset or unusable."""
        return self.gang_schedule_timeout.clamp() if self.gang_schedule_timeout is not None else None

    def migration_caps(self) -> tuple[int, float, int] | None:
        """lifecycle.audit as (maxMigrationsPerWindow, window seconds, maxInFlightMigrations); None when
        any of the three is missing or not above zero (migration requests then wait, as documented)."""
        return self.audit.caps() if self.audit is not None else None

    def auto_migrate_attempts(self) -> int | None:
        """lifecycle.autoMigrate.maxAttempts when a positive integer; None turns relocation off."""
        return self.auto_migrate.attempts() if self.auto_migrate is not None else None

    def force_delete(self) -> tuple[float, float] | None:
        """lifecycle.forceDelete as (overdueSlack, nodeUnreachableThreshold) seconds; None (escalation off)
        unless both are durations above zero."""
        return self.force_delete_block.durations() if self.force_delete_block is not None else None

    def not_acted_on(self) -> list[str]:
        """The documented keys set here that this controller does not act on (see LIFECYCLE_NOT_ACTED_ON)."""
        given = self.model_fields_set | set(self.model_extra or {})
        by_alias = {(f.alias or name) for name, f in LifecycleConfig.model_fields.items() if name in given}
        by_alias |= set(self.model_extra or {})
        return [key for key in LIFECYCLE_NOT_ACTED_ON if key in by_alias]

    def unknown_keys(self) -> list[tuple[str, str | None]]:
        """Keys set here that no document names (a typo such as `stuckPodGracePeriods`), each with the
        closest documented key, so the startup warning can say which one was probably meant."""
        known = [f.alias or name for name, f in LifecycleConfig.model_fields.items()]
        return [(key, next(iter(difflib.get_close_matches(key, known, n=1, cutoff=0.6)), None))
                for key in sorted(self.model_extra or {})]


class MetricProvider(Section):
    server_address: str = Field(alias="serverAddress")
    auth_modes: str | None = Field(default=None, alias="authModes")


class AutoscalerPolicyConfig(Section):
    """autoscalerPolicy: present (the chart writes it when `ome.autoscalerPolicy.enabled`) turns the alpha
    AutoscalerPolicy feature on, unless it says `"enabled": false`."""

    enabled: bool = True
    metric_providers: dict[str, MetricProvider] = Field(default_factory=dict, alias="metricProviders")


class AgentImageConfig(Section):
    """modelInit / fineTunedAdapter: the ome-agent init container that fetches weights into a pod."""

    image: str = "ghcr.io/moirai-internal/ome-agent:v1.3.0"
    memory_request: str | None = Field(default=None, alias="memoryRequest")
    memory_limit: str | None = Field(default=None, alias="memoryLimit")
    cpu_request: str | None = Field(default=None, alias="cpuRequest")
    cpu_limit: str | None = Field(default=None, alias="cpuLimit")
    auth_type: str | None = Field(default=None, alias="authType")
    compartment_id: str | None = Field(default=None, alias="compartmentId")
    vault_id: str | None = Field(default=None, alias="vaultId")  # modelInit: the OCI Vault of the keys
    region: str | None = None


class FineTunedAdapterConfig(AgentImageConfig):
    """Not written by the install: until it is added, fine-tuned serving reports what is missing."""

    image: str = ""


class InferenceServiceConfig(Section):
    """Every entry of the ConfigMap this controller reads, each defaulted as the chart ships it."""

    deploy: DeployConfig = Field(default_factory=DeployConfig)
    ingress: IngressConfig = Field(default_factory=IngressConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)
    omenative_status: OMENativeStatusConfig = Field(
        default_factory=OMENativeStatusConfig, alias="omenativeStatus"
    )
    pod_disruption_budget: PDBConfig = Field(default_factory=PDBConfig, alias="podDisruptionBudget")
    """Without the key no mode has a default, as on a manifest install; the chart writes the key (its
    `maxUnavailable: 1` for both modes, `ome.controller.podDisruptionBudget`)."""
    autoscaler_policy: AutoscalerPolicyConfig | None = Field(default=None, alias="autoscalerPolicy")
    metric_providers: dict[str, MetricProvider] | None = Field(default=None, alias="metricProviders")
    """Top-level bindings; when present they win over autoscalerPolicy.metricProviders."""
    model_init: AgentImageConfig = Field(default_factory=AgentImageConfig, alias="modelInit")
    fine_tuned_adapter: FineTunedAdapterConfig | None = Field(default=None, alias="fineTunedAdapter")
    coordination: CoordinationConfig = Field(default_factory=CoordinationConfig)
    """Rollout groups: the default maintainRatio tolerance (`ome/config/coordination_config.py`)."""
    event_recorder: EventRecorderConfig = Field(default_factory=EventRecorderConfig, alias="eventRecorder")
    """The manager's per-object event budget (`ome/config/event_recorder_config.py`)."""
    cluster_domain: str = Field(default="cluster.local", alias="clusterDomain")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    canary_analysis: CanaryAnalysisConfig = Field(
        default_factory=CanaryAnalysisConfig, alias="canaryAnalysis"
    )
    ome_agent: OmeAgentConfig = Field(default_factory=OmeAgentConfig, alias="omeAgent")
    """The ome-agent image and the pvc:// metadata Job's settings (`ome/config/ome_agent.py`)."""
    serving_sidecar: ServingSidecarConfig | None = Field(default=None, alias="servingSidecar")
    metrics_aggregator: MetricsAggregatorConfig = Field(default_factory=MetricsAggregatorConfig,
                                                        alias="metricsAggregator")
    """The pod webhook's (`ome/config/pod_injection.py`)."""


# Keys whose value is a JSON document; clusterDomain is a bare string.
_JSON_KEYS: Final = (
    "deploy",
    "ingress",
    "lifecycle",
    "omenativeStatus",
    "podDisruptionBudget",
    "autoscalerPolicy",
    "metricProviders",
    "modelInit",
    "fineTunedAdapter",
    "coordination",
    "eventRecorder",
    "rollout",
    "canaryAnalysis",
    "omeAgent",
    "servingSidecar",
    "metricsAggregator",
)


def config_namespace() -> str:
    return os.environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE


def parse(data: Mapping[str, str]) -> InferenceServiceConfig:
    """Validate the ConfigMap's data; raises ConfigError naming the key and the field that is wrong."""
    raw: dict[str, Any] = {}
    status_block: OMENativeStatusConfig | None = None
    if data.get("omenativeStatus", "").strip():
        try:
            status_block = parse_omenative_status(data["omenativeStatus"])
        except ValueError as exc:
            raise _error("omenativeStatus", f"invalid omenativeStatus config: {exc}") from exc
    for key in _JSON_KEYS:
        text = data.get(key, "")
        if key == "omenativeStatus" or not text.strip():
            continue
        try:
            raw[key] = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise _error(key, f"unable to parse {key} config json: {exc}") from exc
        if not isinstance(raw[key], dict):
            raise _error(key, f"{key} config must be a JSON object")
    if data.get("clusterDomain", "").strip():
        raw["clusterDomain"] = data["clusterDomain"].strip()
    for key, value in raw.items():
        try:
            InferenceServiceConfig.model_validate({key: value})
        except ValidationError as exc:
            raise _error(key, _describe(key, exc)) from exc
    config = InferenceServiceConfig.model_validate(raw)
    if status_block is not None:
        config = config.model_copy(update={"omenative_status": status_block})
    return config


MISSING_STATUS_BLOCK: Final = 'inferenceservice-config is missing the required "omenativeStatus" block'


async def load(
    client: Client, namespace: str | None = None, *, require_omenative_status: bool = False
) -> InferenceServiceConfig:
    """Read and parse the ConfigMap. `require_omenative_status` (the manager's start) fails a missing
    ConfigMap and one without the omenativeStatus block, as v1.3 does; later reads of a missing one give
    every default."""
    try:
        configmap = await client.get(resources.CONFIGMAPS, CONFIGMAP_NAME, namespace or config_namespace())
    except errors.NotFound:
        if require_omenative_status:  # v1.3 reads the deploy entry first and stops there
            raise ConfigError(f'{DEPLOY_INIT_ERROR}: configmaps "{CONFIGMAP_NAME}" not found') from None
        return InferenceServiceConfig()
    data = configmap.get("data") or {}
    config = parse(data)  # the other entries' errors first, as the manager checks deploy before the rest
    if require_omenative_status:
        if "omenativeStatus" not in data:
            raise ConfigError(f"{OMENATIVE_STATUS_INIT_ERROR}: {MISSING_STATUS_BLOCK}")
        if not data["omenativeStatus"].strip():
            raise _error("omenativeStatus", "invalid omenativeStatus config: expected a JSON object")
    return config


def _describe(key: str, exc: ValidationError) -> str:
    problems = []
    for item in exc.errors():
        where = ".".join(str(part) for part in item["loc"])
        message = str(item["msg"]).removeprefix("Value error, ")
        documented = ("invalid deploy config", "exactly one of", "podDisruptionBudget.", "unknown field",
                      "lifecycle.")
        if message.startswith(documented):
            return message  # already the documented sentence, naming the key
        problems.append(f"{where}: {message}")
    if key == "lifecycle":  # v1.3 decodes the entry into typed fields: a bare-number duration fails there
        return "unable to parse lifecycle config json: " + "; ".join(problems)
    return f"invalid {key} config: " + "; ".join(problems)


def _error(key: str, message: str) -> ConfigError:
    if key == "podDisruptionBudget":
        return ConfigError(f"{PDB_CONFIG_ERROR}: {message}")
    if key == "deploy":
        return ConfigError(f"{DEPLOY_INIT_ERROR}: {message}")
    if key == "lifecycle":
        return ConfigError(f"{LIFECYCLE_INIT_ERROR}: {message}")
    if key == "omenativeStatus":
        return ConfigError(f"{OMENATIVE_STATUS_INIT_ERROR}: {message}")
    return ConfigError(message)
