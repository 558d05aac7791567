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
from pathlib import Path

import structlog

from ome.cmd import wiring
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.leaderelection import LeaderElectionConfig
from ome.framework.log_setup import configure_logging
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import cert_bootstrap, registry

log = structlog.get_logger("setup")

LEADER_ELECTION_ID = "ome-controller-manager-leader-lock"
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="ome-manager", description=__doc__)
    p.add_argument("--kubeconfig", help="path to a kubeconfig; in-cluster config when unset")
    p.add_argument("--metrics-bind-address", default=":8080", help='"0" disables /metrics')
    p.add_argument("--health-probe-bind-address", default=":8081", help='"0" disables /healthz and /readyz')
    p.add_argument("--webhook-port", type=int, default=9443, help="0 disables the webhook server")
    p.add_argument("--webhook-host", default="0.0.0.0", help="address the webhook server binds")
    p.add_argument("--webhook-cert-dir", default=DEFAULT_CERT_DIR, help="holds tls.crt and tls.key")
    # Where the serving certificate comes from: a mounted Secret (cert-manager), self-registration
    # (outside a cluster) or the in-cluster bootstrap; the last two exclude each other (exit 2).
    source = p.add_mutually_exclusive_group()
    source.add_argument("--webhook-self-register", action="store_true",
                        help="outside a cluster: generate a CA and a 127.0.0.1 serving certificate and "
                             "register the webhook configurations with url https://127.0.0.1:<port>/... "
                             "and that caBundle")
    source.add_argument("--webhook-cert-bootstrap", action="store_true",
                        help="in a cluster without cert-manager: keep a self-signed serving certificate "
                             "in the --webhook-cert-secret Secret, write it to --webhook-cert-dir and set "
                             "the webhook configurations' caBundle")
    p.add_argument("--webhook-service-name", default=registry.SERVICE_NAME,
                   help="the webhook server's Service (its DNS names go into the bootstrapped certificate)")
    p.add_argument("--webhook-cert-secret", default=cert_bootstrap.DEFAULT_SECRET_NAME,
                   help="Secret of the bootstrapped certificate (the generated Role names the default)")
    p.add_argument("--leader-elect", action="store_true", help="run controllers only while holding the Lease")
    p.add_argument("--leader-election-id", default=LEADER_ELECTION_ID)
    p.add_argument("--leader-election-namespace", default=None, help="default: the config namespace")
    p.add_argument("--config-namespace", default=os.environ.get("POD_NAMESPACE", "ome"),
                   help="namespace of the inferenceservice-config ConfigMap (env POD_NAMESPACE)")
    p.add_argument("--log-format", choices=("auto", "json", "console"), default="auto")
    p.add_argument("--log-level", default="info")
    return p.parse_args(argv)


async def run(args: argparse.Namespace) -> int:
    client = await Client.from_environment(args.kubeconfig)
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
                # The process exits once the manager stops, so handing the Lease back is safe, and a
                # rolling update then moves leadership at once instead of after the lease duration.
                release_on_cancel=True,
            )
        manager = Manager(client, ManagerOptions(
            metrics_bind_address=args.metrics_bind_address,
            health_probe_bind_address=args.health_probe_bind_address,
            leader_election=election, webhook_server=webhook,
        ))
        wiring.add_controllers(manager, settings)
        registered: list[wiring.Registration] = []
        if webhook is not None:
            wiring.add_webhooks(webhook, manager, settings)
            if args.webhook_self_register:
                cert_dir = Path(args.webhook_cert_dir)
                manager.add_runnable(
                    lambda: wiring.self_register_webhooks(client, webhook, cert_dir, registered),
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
        wiring.write_self_signed_certs(Path(args.webhook_cert_dir))
        args.webhook_host = "127.0.0.1"
    return WebhookServer(host=args.webhook_host, port=args.webhook_port, cert_dir=args.webhook_cert_dir)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_format, args.log_level)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
