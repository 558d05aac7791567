"""The pod webhook (labels-and-annotations.md, "Pods"): RDMA, runtime.ome.io profiles, scraping annotations.

Registered for pod CREATE with the `ome.io/inferenceservice` label, in namespaces without a
`control-plane` label. Each step reads the pod's own annotations (copied there from the
InferenceService, the component or the runtime):

* `rdma.ome.io/auto-inject: "true"` (exactly): the `rdma.ome.io/profile` (default `oci-roce`) into the
  container `rdma.ome.io/container-name` (default `ome-container`; a missing one is skipped): env vars the
  container lacks, volumes and mounts the pod lacks, `IPC_LOCK` added to the capabilities, never
  privileged; `cks-gb-rdma` only merges 16 Multus attachments into `k8s.v1.cni.cncf.io/networks`.
* `runtime.ome.io/shm-profile: default`: a memory-backed emptyDir at /dev/shm without a size limit.
* `runtime.ome.io/probe-profile` (`sglang-http`, `vllm-http`): HTTP GET `/health` on
  `runtime.ome.io/probe-port` (default 30000) for each of readiness, liveness and startup the container
  lacks.
* `runtime.ome.io/observability-profile: prometheus`: `prometheus.io/scrape` "true", `prometheus.io/port`
  (`runtime.ome.io/observability-port`, default 30000) and `prometheus.io/path` `/metrics`, where unset.
* `ome.io/enable-metric-aggregation` and `ome.io/enable-prometheus-scraping`, when absent, from the
  `metricsAggregator` settings (both "false" by default, as the chart); scraping "true" sets
  `prometheus.io/port` 9091 (9088 with aggregation) and `prometheus.io/path` /metrics, overwriting.

Before these, the container injections of `pod_injection`: `ome.io/inject-model-init`,
`ome.io/inject-fine-tuned-adapter` and `ome.io/inject-serving-sidecar`, from the `modelInit`,
`fineTunedAdapter` and `servingSidecar` entries (`pod_settings` turns the config into what they read).

An unknown profile, an invalid port or a malformed networks annotation denies the pod (PodDenied).
Aggregation "true" also sets the environment of a `queue-proxy` container the pod has.

The settings follow the `inferenceservice-config` ConfigMap (`PodSettingsSource`): the manager's cache
watches it, and each admission re-derives the settings when its resourceVersion moved, so an edit applies
to the next pod admitted once the watch has delivered it, without a restart. An edit that does not parse
is logged once and the last valid settings stay, as for the controllers (`ome/config/config_source.py`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson
import structlog

from ome.config import inferenceservice_config as isvc_config
from ome.config.inferenceservice_config import ConfigError, InferenceServiceConfig
from ome.webhooks.handler import AdmissionRequest, PodDenied
from ome.webhooks.loose import as_dict, as_list, text
from ome.webhooks.pod_injection import (
    Injections,
    inject_fine_tuned_adapter,
    inject_model_init,
    inject_serving_sidecar,
)

Obj = dict[str, Any]
log = structlog.get_logger("ome.webhooks.pod")

MAIN_CONTAINER: Final = "ome-container"
RDMA_AUTO_INJECT: Final = "rdma.ome.io/auto-inject"
RDMA_PROFILE: Final = "rdma.ome.io/profile"
RDMA_CONTAINER: Final = "rdma.ome.io/container-name"
RUNTIME_CONTAINER: Final = "runtime.ome.io/container-name"
SHM_PROFILE: Final = "runtime.ome.io/shm-profile"
PROBE_PROFILE: Final = "runtime.ome.io/probe-profile"
PROBE_PORT: Final = "runtime.ome.io/probe-port"
OBSERVABILITY_PROFILE: Final = "runtime.ome.io/observability-profile"
OBSERVABILITY_PORT: Final = "runtime.ome.io/observability-port"
METRIC_AGGREGATION: Final = "ome.io/enable-metric-aggregation"
PROMETHEUS_SCRAPING: Final = "ome.io/enable-prometheus-scraping"
SCRAPE, PORT, PATH = "prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path"
CONTAINER_PORT, CONTAINER_PATH = "prometheus.ome.io/port", "prometheus.ome.io/path"
QUEUE_PROXY: Final = "queue-proxy"
NETWORKS: Final = "k8s.v1.cni.cncf.io/networks"
DEFAULT_RUNTIME_PORT: Final = 30000
SCRAPE_PORT, AGGREGATED_PORT = "9091", "9088"
DSHM: Final = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
DSHM_MOUNT: Final = {"name": "dshm", "mountPath": "/dev/shm"}
_DEVINF: Final = {"name": "devinf", "hostPath": {"path": "/dev/infiniband"}}
_DEVINF_MOUNT: Final = {"name": "devinf", "mountPath": "/dev/infiniband"}
_OCI_ROCE_ENV: Final = {
    "NCCL_NET_PLUGIN": "none", "NCCL_DEBUG": "INFO", "NCCL_CROSS_NIC": "2", "NCCL_SOCKET_NTHREADS": "16",
    "NCCL_CUMEM_ENABLE": "0", "NCCL_IB_SPLIT_DATA_ON_QPS": "0", "NCCL_IB_QPS_PER_CONNECTION": "16",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_9,mlx5_10,mlx5_12,mlx5_13,"
    "mlx5_14,mlx5_15,mlx5_16,mlx5_17",
    "NCCL_IB_TC": "41", "NCCL_IB_SL": "0", "NCCL_IB_TIMEOUT": "22", "HCOLL_ENABLE_MCAST_ALL": "0",
    "coll_hcoll_enable": "0", "RX_QUEUE_LEN": "8192", "IB_RX_QUEUE_LEN": "8192", "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_IGNORE_CPU_AFFINITY": "1", "GLOO_SOCKET_IFNAME": "eth0",
}  # fmt: skip
_CKS_GB_SGLANG_ENV: Final = {
    "MC_TE_METRIC": "true", "NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1",
    "NCCL_IB_ADDR_FAMILY": "AF_INET6", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_FAMILY": "AF_INET6",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class RdmaProfile:
    env: dict[str, str]
    devices: bool
    """/dev/shm, /dev/infiniband and IPC_LOCK."""
    networks: tuple[Obj, ...] = ()


RDMA_PROFILES: Final = {
    "oci-roce": RdmaProfile(_OCI_ROCE_ENV, devices=True),
    "cks-gb-sglang": RdmaProfile(_CKS_GB_SGLANG_ENV, devices=True),
    "cks-gb-rdma": RdmaProfile(
        {},
        devices=False,
        networks=tuple(
            {"name": f"ibs{h}p{p}-macvlan", "namespace": "cw-multus"} for h in range(4) for p in range(4)
        ),
    ),
}
PROBE_PROFILES: Final = frozenset({"sglang-http", "vllm-http"})


@dataclass(frozen=True, slots=True)
class MetricsAggregator:
    """The `metricsAggregator` entry of inferenceservice-config (the chart sets both to false)."""

    enable_metric_aggregation: bool = False
    enable_prometheus_scraping: bool = False


@dataclass(frozen=True, slots=True)
class PodSettings:
    """What the pod webhook reads from inferenceservice-config."""

    metrics: MetricsAggregator = MetricsAggregator()
    injections: Injections = Injections()


def pod_settings(config: InferenceServiceConfig, fine_tuned_weight: Any = None) -> PodSettings:
    """The webhook's settings from the config; `fine_tuned_weight(name)` looks a FineTunedWeight up."""
    aggregator = config.metrics_aggregator
    injections = Injections(config.model_init, config.serving_sidecar, config.fine_tuned_adapter,
                            **({"fine_tuned_weight": fine_tuned_weight} if fine_tuned_weight else {}))
    return PodSettings(MetricsAggregator(aggregator.enable_metric_aggregation == "true",
                                         aggregator.enable_prometheus_scraping == "true"), injections)


class PodSettingsSource:
    """The webhook's settings as the `inferenceservice-config` ConfigMap holds them now.

    `lookup()` gives the ConfigMap as the informer cache holds it (None while unseen or deleted: the last
    settings stay, the manager's start config at first). Settings are derived again only when the
    ConfigMap's resourceVersion moved, so an admission costs a dict lookup."""

    def __init__(self, lookup: Callable[[], Obj | None], initial: InferenceServiceConfig,
                 fine_tuned_weight: Any = None) -> None:
        self._lookup = lookup
        self._fine_tuned_weight = fine_tuned_weight
        self._settings = pod_settings(initial, fine_tuned_weight)
        self._version: str | None = None
        self._rejected: str | None = None

    def current(self) -> PodSettings:
        configmap = self._lookup()
        if configmap is None:
            return self._settings
        version = str(as_dict(configmap.get("metadata")).get("resourceVersion") or "")
        if version and version == self._version:
            return self._settings
        self._version = version
        try:
            config = isvc_config.parse(as_dict(configmap.get("data")))
        except ConfigError as exc:
            if str(exc) != self._rejected:  # once per bad edit, not once per pod
                log.warning("inferenceservice-config edit rejected; the pod webhook keeps the last valid "
                            "settings", error=str(exc))
                self._rejected = str(exc)
            return self._settings
        self._rejected = None
        settings = pod_settings(config, self._fine_tuned_weight)
        if settings != self._settings:
            log.info("inferenceservice-config changed; the pod webhook admits the next pods with it")
            self._settings = settings
        return self._settings


def mutate_pod(request: AdmissionRequest,
               settings: MetricsAggregator | PodSettings | PodSettingsSource = MetricsAggregator()) -> Obj:
    """The pod with every documented injection applied; raises PodDenied for bad annotations."""
    if isinstance(settings, PodSettingsSource):
        settings = settings.current()
    if isinstance(settings, MetricsAggregator):
        settings = PodSettings(settings)
    pod = request.obj
    annotations = _annotations(pod)
    inject_model_init(pod, annotations, settings.injections.model_init)
    inject_fine_tuned_adapter(pod, annotations, settings.injections)
    inject_serving_sidecar(pod, annotations, settings.injections.serving_sidecar)
    _inject_rdma(pod, annotations)
    _inject_shm(pod, annotations)
    _inject_probes(pod, annotations)
    _inject_observability(annotations)
    _scraping(annotations, settings.metrics)
    _aggregate_in_queue_proxy(pod, annotations)
    return pod


def _annotations(pod: Obj) -> dict[str, Any]:
    if not isinstance(pod.get("metadata"), dict):  # `metadata: null` in a review is still a pod to admit
        pod["metadata"] = {}
    meta = pod["metadata"]
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    annotations: dict[str, Any] = meta["annotations"]
    return annotations


def _container(pod: Obj, name: str) -> Obj | None:
    for container in as_list(as_dict(pod.get("spec")).get("containers")):
        if isinstance(container, dict) and container.get("name") == name:
            return container
    return None


def _add_volume(pod: Obj, volume: Obj) -> None:
    volumes = pod.setdefault("spec", {}).setdefault("volumes", [])
    if not any(as_dict(v).get("name") == volume["name"] for v in volumes):
        volumes.append(copy.deepcopy(volume))


def _add_mount(container: Obj, mount: Obj) -> None:
    mounts = container.setdefault("volumeMounts", [])
    if not any(as_dict(m).get("name") == mount["name"] for m in mounts):
        mounts.append(copy.deepcopy(mount))


def _inject_rdma(pod: Obj, annotations: dict[str, Any]) -> None:
    if annotations.get(RDMA_AUTO_INJECT) != "true":
        return
    name = text(annotations.get(RDMA_PROFILE)) or "oci-roce"
    profile = RDMA_PROFILES.get(name)
    if profile is None:
        raise PodDenied(f"unknown RDMA profile: {name}")
    container = _container(pod, text(annotations.get(RDMA_CONTAINER)) or MAIN_CONTAINER)
    if container is None:
        return  # the docs: a container that doesn't exist is skipped
    if profile.devices:
        _add_volume(pod, DSHM)
        _add_volume(pod, _DEVINF)
    if profile.networks:
        _merge_networks(annotations, profile.networks)
    present = {as_dict(e).get("name") for e in as_list(container.get("env"))}
    added = [{"name": k, "value": profile.env[k]} for k in sorted(profile.env) if k not in present]
    if added:
        container["env"] = as_list(container.get("env")) + added
    if not profile.devices:
        return
    _add_mount(container, DSHM_MOUNT)
    _add_mount(container, _DEVINF_MOUNT)
    security = container.setdefault("securityContext", {})
    capabilities = security.setdefault("capabilities", {})
    add = capabilities.setdefault("add", [])
    if "IPC_LOCK" not in add:
        add.append("IPC_LOCK")


def _merge_networks(annotations: dict[str, Any], networks: tuple[Obj, ...]) -> None:
    raw = text(annotations.get(NETWORKS))
    try:
        merged = orjson.loads(raw) if raw else []
    except orjson.JSONDecodeError as exc:
        raise PodDenied(f"rdma-injector: {NETWORKS} annotation is not a valid JSON array: {exc}") from exc
    if not isinstance(merged, list) or not all(isinstance(n, dict) for n in merged):
        raise PodDenied(f"rdma-injector: {NETWORKS} annotation is not a valid JSON array")
    seen = {(n.get("name"), n.get("namespace", "")) for n in merged}
    merged += [dict(n) for n in networks if (n["name"], n["namespace"]) not in seen]
    annotations[NETWORKS] = orjson.dumps(merged).decode()


def _inject_shm(pod: Obj, annotations: dict[str, Any]) -> None:
    profile = annotations.get(SHM_PROFILE)
    if profile is None:
        return
    if profile != "default":
        raise PodDenied(f'unknown {SHM_PROFILE} "{profile}": the only profile is "default"')
    container = _container(pod, text(annotations.get(RUNTIME_CONTAINER)) or MAIN_CONTAINER)
    if container is None:
        return
    _add_volume(pod, DSHM)
    _add_mount(container, DSHM_MOUNT)


def _port(annotations: dict[str, Any], key: str) -> int:
    value = annotations.get(key)
    if value is None:
        return DEFAULT_RUNTIME_PORT
    if isinstance(value, str) and value.isdigit() and 0 < int(value) <= 65535:
        return int(value)
    raise PodDenied(f'invalid {key} "{value}": a port must be a whole number from 1 to 65535')


def _inject_probes(pod: Obj, annotations: dict[str, Any]) -> None:
    profile = annotations.get(PROBE_PROFILE)
    if profile is None:
        return
    if profile not in PROBE_PROFILES:
        raise PodDenied(f'unknown {PROBE_PROFILE} "{profile}": use sglang-http or vllm-http')
    port = _port(annotations, PROBE_PORT)
    container = _container(pod, text(annotations.get(RUNTIME_CONTAINER)) or MAIN_CONTAINER)
    if container is None:
        return
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        if container.get(probe) is None:
            container[probe] = {"httpGet": {"path": "/health", "port": port}}


def _inject_observability(annotations: dict[str, Any]) -> None:
    profile = annotations.get(OBSERVABILITY_PROFILE)
    if profile is None:
        return
    if profile != "prometheus":
        raise PodDenied(f'unknown {OBSERVABILITY_PROFILE} "{profile}": the only profile is "prometheus"')
    port = _port(annotations, OBSERVABILITY_PORT)
    annotations.setdefault(SCRAPE, "true")
    annotations.setdefault(PORT, str(port))
    annotations.setdefault(PATH, "/metrics")


def _scraping(annotations: dict[str, Any], settings: MetricsAggregator) -> None:
    annotations.setdefault(METRIC_AGGREGATION, str(settings.enable_metric_aggregation).lower())
    annotations.setdefault(PROMETHEUS_SCRAPING, str(settings.enable_prometheus_scraping).lower())
    if annotations[PROMETHEUS_SCRAPING] == "true":
        annotations[PORT] = AGGREGATED_PORT if annotations[METRIC_AGGREGATION] == "true" else SCRAPE_PORT
        annotations[PATH] = "/metrics"


def _aggregate_in_queue_proxy(pod: Obj, annotations: dict[str, Any]) -> None:
    """`ome.io/enable-metric-aggregation: "true"` configures a `queue-proxy` container the pod has (OME never
    adds one) to aggregate the metrics at `prometheus.ome.io/port` / `path` (8080, /metrics) on port 9088."""
    if annotations.get(METRIC_AGGREGATION) != "true":
        return
    proxy = _container(pod, QUEUE_PROXY)
    if proxy is None:
        return
    wanted = {"CONTAINER_PROMETHEUS_METRICS_PORT": text(annotations.get(CONTAINER_PORT)) or "8080",
              "CONTAINER_PROMETHEUS_METRICS_PATH": text(annotations.get(CONTAINER_PATH)) or "/metrics",
              "AGGREGATE_PROMETHEUS_METRICS_PORT": AGGREGATED_PORT}
    present = {as_dict(e).get("name") for e in as_list(proxy.get("env"))}
    added = [{"name": k, "value": v} for k, v in wanted.items() if k not in present]
    if added:
        proxy["env"] = as_list(proxy.get("env")) + added
