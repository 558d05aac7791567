"""`ome-manager`: every OME reconciler and the admission webhook server in one process.

Flags follow controller-runtime's names. Controllers run only on the leader; informers and the webhook
server run on every replica, so a standby answers admission requests and takes over with a warm cache.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from datetime import timedelta

import structlog

from ome.cmd import flags, wiring
from ome.config.durations import parse_duration
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.leaderelection import ACQUIRE_JITTER, LeaderElectionConfig
from ome.framework.log_setup import configure_logging
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.transport import ClientSettings
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import cert_bootstrap, registry, self_register

log = structlog.get_logger("setup")

LEADER_ELECTION_ID = "ome-controller-manager-leader-lock"
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"


def _duration(value: str) -> float:
    seconds = parse_duration(value)
    if seconds is None or seconds <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive duration such as 90s, 5m or 72h")
    return seconds


def _duration_or_zero(value: str) -> float:
    return 0.0 if value.strip() in ("0", "0s") else _duration(value)


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive integer")
    return int(value)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = flags.parser("ome-manager", __doc__)
    p.add_argument("--kubeconfig", help="path to a kubeconfig; in-cluster config when unset")
    p.add_argument("--metrics-bind-address", default=":8080", help='address of /metrics; "0" disables it')
    p.add_argument("--health-probe-bind-address", default=":8081",
                   help='address of /healthz and /readyz; "0" disables them')
    p.add_argument("--webhook-port", type=int, default=9443,
                   help="port of the admission webhook server; 0 disables it")
    p.add_argument("--webhook-host", default="0.0.0.0", help="address the webhook server binds")
    p.add_argument("--webhook-cert-dir", default=DEFAULT_CERT_DIR,
                   help="holds the webhook server's tls.crt and tls.key")
    # Where the serving certificate comes from: a mounted Secret (cert-manager), self-registration
    # (outside a cluster) or the in-cluster bootstrap; the last two exclude each other (exit 2).
    p.add_argument("--webhook-self-register", action=flags.BoolFlag,
                   help="outside a cluster: generate a CA and a 127.0.0.1 serving certificate (into "
                        "a temporary --webhook-cert-dir unless set), serve on 127.0.0.1 and server-side "
                        "apply the MutatingWebhookConfiguration and ValidatingWebhookConfiguration "
                        f"{registry.CONFIGURATION_NAME} with url https://127.0.0.1:<port>/... and that "
                        "caBundle; they are removed on exit. Needs create, get, patch and delete on both "
                        "kinds (that name), which an admin kubeconfig or the shipped ClusterRole "
                        "ome-manager-role grants")
    p.add_argument("--webhook-cert-bootstrap", action=flags.BoolFlag,
                   help="in a cluster without cert-manager: keep a self-signed serving certificate in the "
                        "--webhook-cert-secret Secret, write it to --webhook-cert-dir and set the webhook "
                        "configurations' caBundle")
    p.add_argument("--webhook-service-name", default=registry.SERVICE_NAME,
                   help="the webhook server's Service (its DNS names go into the bootstrapped certificate)")
    p.add_argument("--webhook-cert-secret", default=cert_bootstrap.DEFAULT_SECRET_NAME,
                   help="Secret of the bootstrapped certificate (the generated Role names the default)")
    p.add_argument("--leader-elect", action=flags.BoolFlag,
                   help="run the controllers only while holding the leader election Lease")
    p.add_argument("--leader-election-id", default=LEADER_ELECTION_ID, help="name of the Lease")
    p.add_argument("--leader-elect-lease-duration", type=_duration, default="15s",
                   help="how long a standby waits before taking over an unrenewed Lease")
    p.add_argument("--leader-elect-renew-deadline", type=_duration, default="10s",
                   help="how long the leader retries renewing before it steps down")
    p.add_argument("--leader-elect-retry-period", type=_duration, default="2s",
                   help="time between renew and acquire attempts")
    p.add_argument("--sync-period", type=_duration, default="10h",
                   help="how often every watched object is reconciled again without a change")
    p.add_argument("--config-cache-ttl", type=_duration_or_zero, default="30s",
                   help="how long reconcilers use a read of inferenceservice-config before re-reading it "
                        '("0": every reconcile)')
    p.add_argument("--kube-api-qps", type=float, default=100.0,
                   help="requests per second to the API server, beyond the burst (0: unlimited)")
    p.add_argument("--kube-api-burst", type=int, default=None,
                   help="requests allowed at once above --kube-api-qps (default 200 with the default QPS)")
    p.add_argument("--inferenceservice-max-concurrent-reconciles", type=_positive, default=4,
                   help="InferenceServices reconciled at once")
    p.add_argument("--inferencereplica-max-concurrent-reconciles", type=_positive, default=4,
                   help="InferenceReplicas reconciled at once")
    p.add_argument("--runtime-revision-retention", type=_positive, default=10,
                   help="newest runtime revisions kept per runtime name, besides those in use")
    p.add_argument("--runtime-revision-grace-period", type=_duration, default="24h",
                   help="how long an unreferenced runtime revision stays marked before deletion")
    p.add_argument("--leader-election-namespace", default=None,
                   help="namespace of the Lease (default: --config-namespace)")
    p.add_argument("--config-namespace", default=os.environ.get("POD_NAMESPACE", "ome"),
                   help="namespace of the inferenceservice-config ConfigMap (env POD_NAMESPACE)")
    p.add_argument("--log-format", choices=("auto", "json", "console"), default="auto",
                   help="auto: console on a terminal, else JSON")
    p.add_argument("--log-level", default="info", help="debug, info, warning or error")
    args = flags.parse_args(p, argv)
    if args.webhook_self_register and args.webhook_cert_bootstrap:
        p.error("argument --webhook-self-register: not allowed with argument --webhook-cert-bootstrap "
                "(each is a different source of the serving certificate)")
    if args.kube_api_burst is None:
        if args.kube_api_qps not in (0, 100.0):
            p.error("--kube-api-qps needs --kube-api-burst: set them together")
        args.kube_api_burst = 200 if args.kube_api_qps else 0
    if args.kube_api_qps < 0 or (args.kube_api_qps > 0 and args.kube_api_burst < 1):
        p.error("--kube-api-qps must be >= 0 and --kube-api-burst >= 1 when a QPS is set")
    lease, renew, retry = (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
                           args.leader_elect_retry_period)
    if not (lease > renew > ACQUIRE_JITTER * retry):
        p.error(f"Invalid leader election timing: lease duration ({lease:g}s) must exceed the renew deadline "
                f"({renew:g}s), which must exceed {ACQUIRE_JITTER:g} x the retry period ({retry:g}s)")
    return args


async def run(args: argparse.Namespace) -> int:
    client = await Client.from_environment(
        args.kubeconfig, ClientSettings(qps=args.kube_api_qps, burst=args.kube_api_burst)
    )
    try:
        try:
            settings = await wiring.load_settings(client, args.config_namespace)
        except wiring.ConfigError as exc:
            log.error(str(exc))
            print(f"ome-manager: {exc}", file=sys.stderr)
            return 1
        if args.webhook_cert_bootstrap and args.webhook_port != 0:
            try:
                await cert_bootstrap.ensure_serving_certificate(client, **_bootstrap_options(args))
            except (errors.ApiError, OSError, RuntimeError) as exc:
                log.error("webhook certificate bootstrap failed", error=str(exc))
                print(f"ome-manager: webhook certificate bootstrap failed: {exc}", file=sys.stderr)
                return 1
        webhook = _webhook_server(args)
        election = None
        if args.leader_elect:
            election = LeaderElectionConfig(
                lease_name=args.leader_election_id,
                lease_namespace=args.leader_election_namespace or args.config_namespace,
                lease_duration=args.leader_elect_lease_duration,
                renew_deadline=args.leader_elect_renew_deadline,
                retry_period=args.leader_elect_retry_period,
                # The process exits once the manager stops, so handing the Lease back is safe, and a
                # rolling update then moves leadership at once instead of after the lease duration.
                release_on_cancel=True,
            )
        manager = Manager(client, ManagerOptions(
            metrics_bind_address=args.metrics_bind_address,
            health_probe_bind_address=args.health_probe_bind_address,
            leader_election=election, webhook_server=webhook,
        ))
        settings.inferenceservice_workers = args.inferenceservice_max_concurrent_reconciles
        settings.inferencereplica_workers = args.inferencereplica_max_concurrent_reconciles
        settings.revision_retention = args.runtime_revision_retention
        settings.revision_grace = timedelta(seconds=args.runtime_revision_grace_period)
        settings.config_cache_ttl = args.config_cache_ttl
        wiring.add_controllers(manager, settings)
        registered: list[wiring.Registration] = []
        if webhook is not None:
            wiring.add_webhooks(webhook, manager, settings)
            if args.webhook_self_register:
                manager.add_runnable(
                    lambda: wiring.self_register_webhooks(client, webhook, args.self_signed_ca, registered),
                    needs_leader_election=False)
            if args.webhook_cert_bootstrap:
                options = _bootstrap_options(args)
                manager.add_runnable(lambda: cert_bootstrap.refresh_periodically(client, **options),
                                     needs_leader_election=False)
        try:
            await manager.run()
        finally:
            await wiring.unregister_webhooks(client, registered)
        return 0
    finally:
        await client.close()


def _bootstrap_options(args: argparse.Namespace) -> cert_bootstrap.Options:
    return cert_bootstrap.Options(
        namespace=args.config_namespace, secret_name=args.webhook_cert_secret,
        service_name=args.webhook_service_name, cert_dir=args.webhook_cert_dir,
        configuration_name=registry.CONFIGURATION_NAME,
    )


def _webhook_server(args: argparse.Namespace) -> WebhookServer | None:
    if args.webhook_port == 0:
        return None
    if args.webhook_self_register:
        if args.webhook_cert_dir == DEFAULT_CERT_DIR:
            args.webhook_cert_dir = tempfile.mkdtemp(prefix="ome-webhook-certs-")
        args.self_signed_ca = self_register.write_serving_certificate(args.webhook_cert_dir)
        args.webhook_host = "127.0.0.1"
    return WebhookServer(host=args.webhook_host, port=args.webhook_port, cert_dir=args.webhook_cert_dir)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_format, args.log_level)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
