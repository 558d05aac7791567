"""`ome-manager`: every OME reconciler and the admission webhook server in one process.

Flags follow controller-runtime's names. Controllers run only on the leader; informers and the webhook
server run on every replica, so a standby answers admission requests and takes over with a warm cache.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
import tempfile
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Final

import structlog

from ome.cmd import flags, wiring
from ome.config.durations import parse_duration
from ome.framework import crypto_child, errors, heap_trim, log_setup, pem_files
from ome.framework.client import Client
from ome.framework.leaderelection import ACQUIRE_JITTER, LeaderElectionConfig
from ome.framework.manager import LeaderElectionLost, Manager, ManagerOptions
from ome.framework.metrics_auth import ApiReviewClient, MetricsAuthFilter
from ome.framework.transport import ClientSettings
from ome.framework.webhook_server import WebhookServer
from ome.resolution import quota_governance
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


def _non_negative_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number >= 0")
    return number


BURST_REQUIRED: Final = ("burst is required to be greater than 0 when RateLimiter is not set and QPS is set "
                         "to greater than 0")


def client_settings(args: argparse.Namespace) -> ClientSettings:
    """The API clients' rate limit (one bucket per resource type, as the Go manager has a client per
    resource type), as client-go reads --kube-api-qps/--kube-api-burst: no QPS, no limit
    (a burst alone has no effect); a QPS needs a burst above 0, else ValueError(BURST_REQUIRED)."""
    if args.kube_api_qps is None or args.kube_api_qps == 0:
        return ClientSettings(qps=0.0, burst=0)
    if args.kube_api_burst <= 0:
        raise ValueError(BURST_REQUIRED)
    return ClientSettings(qps=args.kube_api_qps, burst=args.kube_api_burst)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = flags.parser("ome-manager", __doc__)
    p.add_argument("--kubeconfig", help="path to a kubeconfig; in-cluster config when unset")
    p.add_argument("--metrics-bind-address", default=":8080", help='address of /metrics; "0" disables it')
    p.add_argument("--metrics-secure", action=flags.BoolFlag,
                   help="serve /metrics over HTTPS, with a self-signed certificate made at start, to "
                        "bearer tokens allowed get on /metrics only (TokenReview and SubjectAccessReview; "
                        "the ClusterRole ome-metrics-reader grants it)")
    # The documented name first; the controller-runtime scaffold's name stays as an alias (last one wins).
    p.add_argument("--health-probe-addr", "--health-probe-bind-address", dest="health_probe_bind_address",
                   default=":8081", help='address of /healthz and /readyz; "0" disables them')
    p.add_argument("--webhook", action=flags.BoolFlag,
                   help="run the admission webhook server (implied by --webhook-self-register and "
                        "--webhook-cert-bootstrap)")
    p.add_argument("--webhook-port", type=int, default=9443,
                   help="port of the admission webhook server; 0 disables it")
    p.add_argument("--enable-http2", action=flags.BoolFlag,
                   help="serve HTTP/2 on the metrics and webhook servers; this implementation serves "
                        "HTTP/1.1 only and says so in the log when it is set")
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
    # The Deployment sets SECRET_NAME, so the Secret's name is visible (and changeable) in one place.
    p.add_argument("--webhook-cert-secret",
                   default=os.environ.get("SECRET_NAME") or cert_bootstrap.DEFAULT_SECRET_NAME,
                   help="Secret of the bootstrapped certificate (default: env SECRET_NAME, else "
                        f"{cert_bootstrap.DEFAULT_SECRET_NAME}, the name the generated Role grants)")
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
    p.add_argument("--kube-api-qps", type=_non_negative_float, default=None,
                   help="requests per second to the API server, per resource type (default: no limit); "
                        "needs --kube-api-burst")
    p.add_argument("--kube-api-burst", type=int, default=0,
                   help="requests per resource type sent at once before the --kube-api-qps rate applies; "
                        "no effect without it")
    p.add_argument("--inferenceservice-max-concurrent-reconciles", type=_positive, default=1,
                   help="InferenceServices reconciled at once")
    p.add_argument("--inferencereplica-max-concurrent-reconciles", type=_positive, default=1,
                   help="InferenceReplicas reconciled at once")
    p.add_argument("--accelerator-resources", type=quota_governance.parse_resources, default=None,
                   help="comma-separated resource names that send a component through quota admission when "
                        "its pods request one; other OMENative components keep no kueue.x-k8s.io/queue-name "
                        "label on their pods (default: every component)")
    p.add_argument("--enable-inferencereplica-controller", action=flags.BoolFlag, default=True,
                   help="run the InferenceReplica controller, which creates and updates the pods of "
                        "OMENative services (default true)")
    p.add_argument("--runtime-revision-retention", type=_positive, default=10,
                   help="newest runtime revisions kept per runtime name, besides those in use")
    p.add_argument("--runtime-revision-grace-period", type=_duration, default="24h",
                   help="how long an unreferenced runtime revision stays marked before deletion")
    p.add_argument("--leader-election-namespace", default=None,
                   help="namespace of the Lease (default: --config-namespace)")
    p.add_argument("--config-namespace", default=os.environ.get("POD_NAMESPACE", "ome"),
                   help="namespace of the inferenceservice-config ConfigMap (env POD_NAMESPACE)")
    log_setup.add_zap_flags(p)
    args = flags.parse_args(p, argv)
    if args.webhook_self_register and args.webhook_cert_bootstrap:
        p.error("argument --webhook-self-register: not allowed with argument --webhook-cert-bootstrap "
                "(each is a different source of the serving certificate)")
    args.webhook = args.webhook or args.webhook_self_register or args.webhook_cert_bootstrap
    lease, renew, retry = (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
                           args.leader_elect_retry_period)
    if not (lease > renew > ACQUIRE_JITTER * retry):
        p.error(f"Invalid leader election timing: lease duration ({lease:g}s) must exceed the renew deadline "
                f"({renew:g}s), which must exceed {ACQUIRE_JITTER:g} x the retry period ({retry:g}s)")
    return args


async def run(args: argparse.Namespace) -> int:
    try:
        rate_limit = client_settings(args)
    except ValueError as exc:
        log.error("Failed to create Kubernetes client set", error=str(exc))
        print(f"ome-manager: Failed to create Kubernetes client set: {exc}", file=sys.stderr)
        return 1
    if args.enable_http2:
        log.warning("HTTP/2 requested with --enable-http2, but the metrics and webhook servers of this "
                    "implementation speak HTTP/1.1 only; serving HTTP/1.1")
    try:
        client = await Client.from_environment(args.kubeconfig, rate_limit)
    except (ValueError, OSError) as exc:  # kubeconfig.ConfigError, or TLS files the ssl module refuses
        log.error("unable to get kubeconfig", error=str(exc))
        print(f"ome-manager: unable to get kubeconfig: {exc}", file=sys.stderr)
        return 1
    try:
        try:
            settings = await wiring.load_settings(client, args.config_namespace)
        except wiring.ConfigError as exc:
            log.error(str(exc))
            print(f"ome-manager: {exc}", file=sys.stderr)
            return 1
        except (errors.ApiError, OSError) as exc:  # the apiserver unreachable at start: exit, be restarted
            log.error("unable to read the operator configuration", error=str(exc))
            print(f"ome-manager: unable to read the operator configuration: {exc}", file=sys.stderr)
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
            metrics_ssl_context=_metrics_tls() if args.metrics_secure else None,
            metrics_filter=MetricsAuthFilter(ApiReviewClient(client)) if args.metrics_secure else None,
            health_probe_bind_address=args.health_probe_bind_address,
            leader_election=election, webhook_server=webhook, sync_period=args.sync_period,
        ))
        manager.event_budget = settings.event_budget  # before any controller makes its recorder
        settings.inferenceservice_workers = args.inferenceservice_max_concurrent_reconciles
        settings.inferencereplica_workers = args.inferencereplica_max_concurrent_reconciles
        settings.revision_retention = args.runtime_revision_retention
        settings.revision_grace = timedelta(seconds=args.runtime_revision_grace_period)
        settings.config_cache_ttl = args.config_cache_ttl
        settings.inferencereplica_controller = args.enable_inferencereplica_controller
        quota_governance.QUOTA.names = args.accelerator_resources
        wiring.add_controllers(manager, settings)
        if (trim := heap_trim.load_trim()) is not None:  # RSS creep under churn: see heap_trim.py
            manager.add_runnable(lambda: heap_trim.trim_periodically(trim), needs_leader_election=False)
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
        except LeaderElectionLost as exc:
            log.error("Failed to start manager", error=str(exc))  # the documented line; then exit 1
            return 1
        except OSError as exc:  # e.g. a metrics, probe or webhook address in use: a clear line, no traceback
            log.error("Failed to start manager", error=str(exc))
            return 1
        finally:
            try:
                await wiring.unregister_webhooks(client, registered)
            except (errors.ApiError, OSError) as exc:  # e.g. the apiserver down when the Lease was lost
                log.warning("webhook configurations not removed", error=str(exc))
        return 0
    finally:
        await client.close()


def _bootstrap_options(args: argparse.Namespace) -> cert_bootstrap.Options:
    return cert_bootstrap.Options(
        namespace=args.config_namespace, secret_name=args.webhook_cert_secret,
        service_name=args.webhook_service_name, cert_dir=args.webhook_cert_dir,
        configuration_name=registry.CONFIGURATION_NAME,
    )


def _metrics_tls() -> ssl.SSLContext:
    """controller-runtime's secure metrics without a certificate directory: a self-signed pair made at
    start, held only in a private temporary directory for the load."""
    _, crt, key = crypto_child.self_signed("ome-metrics-self-signed", "localhost",
                                           ip_addresses=("127.0.0.1",))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="ome-metrics-cert-") as directory:
        pem_files.write_cert_pair(Path(directory), crt, key, cert_name="tls.crt", key_name="tls.key")
        context.load_cert_chain(Path(directory) / "tls.crt", Path(directory) / "tls.key")
    return context


def _webhook_server(args: argparse.Namespace) -> WebhookServer | None:
    if not args.webhook or args.webhook_port == 0:
        return None
    if args.webhook_self_register:
        if args.webhook_cert_dir == DEFAULT_CERT_DIR:
            args.webhook_cert_dir = tempfile.mkdtemp(prefix="ome-webhook-certs-")
        args.self_signed_ca = self_register.write_serving_certificate(args.webhook_cert_dir)
        args.webhook_host = "127.0.0.1"
    return WebhookServer(host=args.webhook_host, port=args.webhook_port, cert_dir=args.webhook_cert_dir)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    log_setup.configure_from_zap_flags(args)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
