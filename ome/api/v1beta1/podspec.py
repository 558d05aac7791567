"""The Kubernetes types OME components inline: PodSpec (containers optional) and Container.

OME's PodSpec is corev1.PodSpec with ``containers`` optional; the InferenceService CRD also
drops ``ephemeralContainers`` from components. The fields are listed so python code can use
them; their CRD schema is the apiserver's own (``crd_inline``), so pod fields newer than
this list still validate and survive.
"""

from __future__ import annotations

from typing import Any

from ome.api.v1beta1.base import (
    AffinityDict,
    ContainerDict,
    EnvFromSourceDict,
    EnvVarDict,
    InlineK8s,
    LocalObjectReferenceDict,
    OMEModel,
    ResourceRequirementsDict,
    StrMap,
    TolerationDict,
    VolumeDict,
    VolumeMountDict,
    f,
)

POD_SPEC = "io.k8s.api.core.v1.PodSpec"
CONTAINER = "io.k8s.api.core.v1.Container"


def _pod(alias: str) -> Any:
    return f(alias, inline=True)


class PodSpecFields(OMEModel):
    """corev1.PodSpec, inlined into engine, decoder, router, leader and worker."""

    crd_inline = (InlineK8s(POD_SPEC, drop=("ephemeralContainers",)),)

    volumes: list[VolumeDict] | None = _pod("volumes")
    init_containers: list[ContainerDict] | None = _pod("initContainers")
    containers: list[ContainerDict] | None = _pod("containers")
    restart_policy: str | None = _pod("restartPolicy")
    termination_grace_period_seconds: int | None = _pod("terminationGracePeriodSeconds")
    active_deadline_seconds: int | None = _pod("activeDeadlineSeconds")
    dns_policy: str | None = _pod("dnsPolicy")
    node_selector: StrMap | None = _pod("nodeSelector")
    service_account_name: str | None = _pod("serviceAccountName")
    service_account: str | None = _pod("serviceAccount")
    automount_service_account_token: bool | None = _pod("automountServiceAccountToken")
    node_name: str | None = _pod("nodeName")
    host_network: bool | None = _pod("hostNetwork")
    host_pid: bool | None = _pod("hostPID")
    host_ipc: bool | None = _pod("hostIPC")
    share_process_namespace: bool | None = _pod("shareProcessNamespace")
    security_context: dict[str, Any] | None = _pod("securityContext")
    image_pull_secrets: list[LocalObjectReferenceDict] | None = _pod("imagePullSecrets")
    hostname: str | None = _pod("hostname")
    subdomain: str | None = _pod("subdomain")
    affinity: AffinityDict | None = _pod("affinity")
    scheduler_name: str | None = _pod("schedulerName")
    tolerations: list[TolerationDict] | None = _pod("tolerations")
    host_aliases: list[dict[str, Any]] | None = _pod("hostAliases")
    priority_class_name: str | None = _pod("priorityClassName")
    priority: int | None = _pod("priority")
    dns_config: dict[str, Any] | None = _pod("dnsConfig")
    readiness_gates: list[dict[str, Any]] | None = _pod("readinessGates")
    runtime_class_name: str | None = _pod("runtimeClassName")
    enable_service_links: bool | None = _pod("enableServiceLinks")
    preemption_policy: str | None = _pod("preemptionPolicy")
    overhead: dict[str, Any] | None = _pod("overhead")
    topology_spread_constraints: list[dict[str, Any]] | None = _pod("topologySpreadConstraints")
    set_hostname_as_fqdn: bool | None = _pod("setHostnameAsFQDN")
    os: dict[str, Any] | None = _pod("os")
    host_users: bool | None = _pod("hostUsers")
    scheduling_gates: list[dict[str, Any]] | None = _pod("schedulingGates")
    resource_claims: list[dict[str, Any]] | None = _pod("resourceClaims")
    resources: ResourceRequirementsDict | None = _pod("resources")


class RunnerSpec(OMEModel):
    """The main container of a component: an inlined corev1.Container.

    As in the upstream CRD, the container's own required list is not enforced here, so a
    runner may leave ``name`` to the runtime.
    """

    crd_inline = (InlineK8s(CONTAINER),)

    name: str | None = _pod("name")
    image: str | None = _pod("image")
    command: list[str] | None = _pod("command")
    args: list[str] | None = _pod("args")
    working_dir: str | None = _pod("workingDir")
    ports: list[dict[str, Any]] | None = _pod("ports")
    env_from: list[EnvFromSourceDict] | None = _pod("envFrom")
    env: list[EnvVarDict] | None = _pod("env")
    resources: ResourceRequirementsDict | None = _pod("resources")
    resize_policy: list[dict[str, Any]] | None = _pod("resizePolicy")
    restart_policy: str | None = _pod("restartPolicy")
    volume_mounts: list[VolumeMountDict] | None = _pod("volumeMounts")
    volume_devices: list[dict[str, Any]] | None = _pod("volumeDevices")
    liveness_probe: dict[str, Any] | None = _pod("livenessProbe")
    readiness_probe: dict[str, Any] | None = _pod("readinessProbe")
    startup_probe: dict[str, Any] | None = _pod("startupProbe")
    lifecycle: dict[str, Any] | None = _pod("lifecycle")
    termination_message_path: str | None = _pod("terminationMessagePath")
    termination_message_policy: str | None = _pod("terminationMessagePolicy")
    image_pull_policy: str | None = _pod("imagePullPolicy")
    security_context: dict[str, Any] | None = _pod("securityContext")
    stdin: bool | None = _pod("stdin")
    stdin_once: bool | None = _pod("stdinOnce")
    tty: bool | None = _pod("tty")
