"""Register a webhook server that runs outside the cluster (a local manager, tests, the demo).

In the cluster the apiserver reaches the webhook through the `ome-webhook-server-service` Service and
cert-manager's certificate. A manager on the developer's machine has neither, so it makes its own: a CA
and a serving certificate for 127.0.0.1 (written as tls.crt / tls.key, where the WebhookServer reads
them), then server-side applies both webhook configurations with `url: https://127.0.0.1:<port>/<path>`
and that CA as caBundle. A namespaceSelector scopes them, so tests sharing a cluster only meet the
webhooks they registered.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import structlog

from ome.framework import crypto_child, errors, pem_files, resources
from ome.framework.client import Client
from ome.webhooks import registry

FIELD_MANAGER: Final = "ome-webhook-self-register"
LOOPBACK: Final = "127.0.0.1"
KEEP_INTERVAL: Final = 5.0
"""Seconds between a replica's checks that the configurations still exist."""

_CONFIGURATIONS: Final = (
    resources.MUTATING_WEBHOOK_CONFIGURATIONS,
    resources.VALIDATING_WEBHOOK_CONFIGURATIONS,
)
_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Registration:
    name: str
    """The name of both configurations (a Mutating- and a ValidatingWebhookConfiguration)."""
    ca_bundle: bytes


def write_serving_certificate(cert_dir: str | Path, *, host: str = LOOPBACK) -> bytes:
    """Generate a CA and a serving certificate for `host` into cert_dir; returns the CA (the caBundle)."""
    ca_crt, crt, key = crypto_child.self_signed("ome-webhook-local-ca", host, ip_addresses=(host,))
    pem_files.write_cert_pair(Path(cert_dir), crt, key, cert_name="tls.crt", key_name="tls.key")
    return ca_crt


async def register(
    client: Client,
    *,
    port: int,
    ca_bundle: bytes,
    name: str = registry.CONFIGURATION_NAME,
    host: str = LOOPBACK,
    namespace_selector: Mapping[str, Any] | None = None,
) -> Registration:
    """Server-side apply both configurations, pointing every webhook at https://host:port/<path>."""
    config = registry.url_client_config(f"https://{host}:{port}", ca_bundle)
    mutating, validating = registry.webhook_configurations(
        config, name=name, namespace_selector=namespace_selector
    )
    await _apply_replacing(client, resources.MUTATING_WEBHOOK_CONFIGURATIONS, mutating)
    await _apply_replacing(client, resources.VALIDATING_WEBHOOK_CONFIGURATIONS, validating)
    return Registration(name, ca_bundle)


async def keep_registered(
    client: Client,
    *,
    port: int,
    ca_bundle: bytes,
    name: str = registry.CONFIGURATION_NAME,
    interval: float = KEEP_INTERVAL,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Runs for the life of the server: registers again whenever a configuration is gone.

    Every replica registers itself at start and the last one wins; a replica that stops deletes the
    configurations when they still name it (`unregister(only_if_ours=True)`), which leaves the replicas
    still serving without admission. So each one checks every `interval` and puts them back.
    """
    while True:
        await sleep(interval)
        try:
            for res in _CONFIGURATIONS:
                await client.get(res, name)
        except errors.NotFound:
            await register(client, port=port, ca_bundle=ca_bundle, name=name)
            _log.info("webhook configurations registered again", url=f"https://{LOOPBACK}:{port}")
        except errors.ApiError as exc:  # an apiserver restarting: the next round looks again
            _log.info("webhook configurations not checked", error=str(exc))


async def _apply_replacing(client: Client, res: resources.Resource, body: dict[str, Any]) -> None:
    """Apply; a configuration written by a chart or kustomize install keeps its `service` clientConfig
    (owned by another field manager), so adding our `url` makes it invalid (both set): replace it."""
    try:
        await client.apply(res, body, field_manager=FIELD_MANAGER, force=True)
    except errors.Invalid:
        try:
            await client.delete(res, body["metadata"]["name"])
        except errors.NotFound:
            pass
        await client.apply(res, body, field_manager=FIELD_MANAGER, force=True)


async def unregister(client: Client, registration: Registration, *, only_if_ours: bool = False) -> None:
    """Delete both configurations; already gone is fine.

    With only_if_ours, a configuration another process has since re-registered (a different caBundle)
    is left alone: a stopping manager must not cut off the one still serving.
    """
    for res in (resources.MUTATING_WEBHOOK_CONFIGURATIONS, resources.VALIDATING_WEBHOOK_CONFIGURATIONS):
        try:
            if only_if_ours:
                current = await client.get(res, registration.name)
                if not _uses_ca(current, registration.ca_bundle):
                    continue
                version = current["metadata"]["resourceVersion"]
                await client.delete(res, registration.name, resource_version=version)
            else:
                await client.delete(res, registration.name)
        except (errors.NotFound, errors.Conflict):
            pass


def _uses_ca(configuration: Mapping[str, Any], ca_bundle: bytes) -> bool:
    expected = base64.b64encode(ca_bundle).decode()
    hooks = configuration.get("webhooks") or []
    return bool(hooks) and all((h.get("clientConfig") or {}).get("caBundle") == expected for h in hooks)
