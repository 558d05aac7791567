"""Command lines of the control-plane components. Pure: paths and ports in, argv out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ome.devcluster.pki import Pki

KWOK_NODE_LABEL = ("type", "kwok")

PROFILES = ("default", "scale")
"""`default`: the components' own client limits. `scale`: kube-controller-manager and kube-scheduler with
client limits and worker counts high enough that the apiserver and etcd, not these clients, set the pace
(KCM's default of 20 requests/s caps pod creation near 10 per second), and the apiserver's
/debug/pprof served (to the admin only; it costs nothing until a profile is taken) so that a bench can
say where the apiserver's CPU went."""

SCALE_CLIENT = ("--kube-api-qps=500", "--kube-api-burst=1000")
SCALE_KCM_WORKERS = ("--concurrent-deployment-syncs=50", "--concurrent-replicaset-syncs=50")


def _check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise ValueError(f"unknown cluster profile {profile!r}; expected one of {', '.join(PROFILES)}")


@dataclass(frozen=True, slots=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    argv: list[str]
    health_url: str | None
    """Polled until it answers 200 ("ok" bodies); None means process liveness only."""


def etcd(bin_dir: Path, state: Path, ports: Ports) -> Component:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    argv = [
        str(bin_dir / "etcd"), "--name=ome-dev", f"--data-dir={state / 'etcd'}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=ome-dev={peer}", "--initial-cluster-state=new",
        # A throwaway test store: durability is not worth the fsync latency here.
        "--unsafe-no-fsync=true", "--quota-backend-bytes=4294967296", "--log-level=warn",
    ]
    return Component("etcd", argv, f"{client}/health")


# Audit only what changes state, at Metadata level (who, verb, object, code, times): enough to prove which
# process wrote what and when, at the cost of one short JSON line per write. The high-volume status
# heartbeats of kwok's fake nodes and pods (written as the admin user, as KCM and the scheduler write), and
# node leases, are left out; a manager's pod status writes (the serving gate) stay in the log, so the fault
# suite's "no write without the Lease" covers them.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: None
  users: ["ome-dev-admin"]
  resources:
  - group: ""
    resources: ["nodes/status", "pods/status"]
- level: None
  namespaces: ["kube-node-lease"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
"""


def kube_apiserver(
    bin_dir: Path, state: Path, pki: Pki, ports: Ports, *, audit_policy: Path | None = None,
    audit_log: Path | None = None, profile: str = "default",
) -> Component:
    """With `audit_policy` and `audit_log`, writes are audited as JSON lines (see AUDIT_POLICY)."""
    _check_profile(profile)
    argv = [
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ports.apiserver}",
        f"--cert-dir={state / 'apiserver-certs'}",
        f"--tls-cert-file={pki.apiserver_crt}", f"--tls-private-key-file={pki.apiserver_key}",
        f"--client-ca-file={pki.ca_crt}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.sa_pub}", f"--service-account-signing-key-file={pki.sa_key}",
        "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=RBAC", "--allow-privileged=true",
        # Loopback addresses are not valid Endpoints for the `kubernetes` Service; nothing here dials it.
        "--endpoint-reconciler-type=none", f"--profiling={str(profile == 'scale').lower()}",
    ]
    if audit_policy is not None and audit_log is not None:
        argv += [
            f"--audit-policy-file={audit_policy}", f"--audit-log-path={audit_log}", "--audit-log-format=json",
            "--audit-log-maxsize=200", "--audit-log-maxbackup=1",
        ]
    return Component("kube-apiserver", argv, None)


def kube_controller_manager(
    bin_dir: Path, kubeconfig: Path, pki: Pki, ports: Ports, *, profile: str = "default"
) -> Component:
    _check_profile(profile)
    argv = [
        str(bin_dir / "kube-controller-manager"), f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={ports.controller_manager}", "--leader-elect=false",
        f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca_crt}",
        f"--cluster-signing-cert-file={pki.ca_crt}", f"--cluster-signing-key-file={pki.ca_key}",
        "--use-service-account-credentials=false", "--profiling=false",
    ]
    if profile == "scale":
        argv += [*SCALE_CLIENT, *SCALE_KCM_WORKERS]
    return Component("kube-controller-manager", argv, f"https://127.0.0.1:{ports.controller_manager}/healthz")


def kube_scheduler(bin_dir: Path, kubeconfig: Path, ports: Ports, *, profile: str = "default") -> Component:
    _check_profile(profile)
    argv = [
        str(bin_dir / "kube-scheduler"), f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={ports.scheduler}", "--leader-elect=false",
        "--profiling=false",
    ]
    if profile == "scale":
        argv += list(SCALE_CLIENT)
    return Component("kube-scheduler", argv, f"https://127.0.0.1:{ports.scheduler}/healthz")


def kwok(bin_dir: Path, kubeconfig: Path, config: Path, ports: Ports) -> Component:
    key, value = KWOK_NODE_LABEL
    argv = [
        str(bin_dir / "kwok"), f"--kubeconfig={kubeconfig}", f"--config={config}",
        "--manage-all-nodes=false", f"--manage-nodes-with-label-selector={key}={value}",
        # Fake nodes answer on loopback; pod IPs come from a private range nobody dials.
        "--node-ip=127.0.0.1", "--cidr=10.0.0.0/16", "--node-lease-duration-seconds=40",
        f"--server-address=127.0.0.1:{ports.kwok}",
    ]
    return Component("kwok", argv, f"http://127.0.0.1:{ports.kwok}/healthz")
