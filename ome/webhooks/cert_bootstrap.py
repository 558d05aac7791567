"""A self-signed serving certificate for the in-cluster webhook server, without cert-manager.

controller-runtime's "cert rotator" pattern, kept small. Every replica, at startup and then hourly:

1. reads the kubernetes.io/tls Secret; when it is missing, does not name `<service>.<ns>.svc` (and
   `.cluster.local`), expires within 30 days or is otherwise unusable, generates a CA and a serving
   certificate and writes the Secret (create, or update under a resourceVersion precondition). The
   replica that loses the race re-reads and uses the winner's Secret, so all replicas serve one pair;
2. writes tls.crt, tls.key and ca.crt into the cert dir (atomically, only when changed), where the
   WebhookServer picks them up;
3. sets every webhook's caBundle in the Mutating- and ValidatingWebhookConfiguration (a merge patch
   under a resourceVersion precondition, only when something differs).

A replaced CA stays in ca.crt next to the new one until it expires, so replicas still serving the old
pair (until their next refresh) keep passing the apiserver's verification during a rotation.

The X.509 work (checking the Secret, making a pair: `ome.webhooks.cert_material`) runs in a child
process (`ome.framework.crypto_child`), so the manager maps no X.509 library for an hourly check.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypedDict

import structlog

from ome.framework import crypto_child, errors, pem_files, resources
from ome.framework.resources import Resource

if TYPE_CHECKING:
    from ome.framework.client import PatchType

log = structlog.get_logger(__name__)

Obj = dict[str, Any]

DEFAULT_SECRET_NAME: Final = "ome-webhook-server-cert"
RENEW_BEFORE: Final = datetime.timedelta(days=30)
REFRESH_INTERVAL: Final = 3600.0
MAX_ATTEMPTS: Final = 5
CERT_KEY: Final = "tls.crt"
KEY_KEY: Final = "tls.key"
CA_KEY: Final = "ca.crt"
SECRET_TYPE: Final = "kubernetes.io/tls"
CONFIGURATIONS: Final = (
    resources.MUTATING_WEBHOOK_CONFIGURATIONS,
    resources.VALIDATING_WEBHOOK_CONFIGURATIONS,
)


class Options(TypedDict):
    """ensure_serving_certificate's keyword arguments, as the manager passes them."""

    namespace: str
    secret_name: str
    service_name: str
    cert_dir: str | Path
    configuration_name: str


class Api(Protocol):
    """The part of ome.framework.client.Client used here (tests pass an in-memory fake)."""

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj: ...

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj: ...

    async def update(self, res: Resource, obj: Obj) -> Obj: ...

    async def patch(
        self, res: Resource, name: str, patch: Obj | list[Obj], namespace: str | None = None,
        *, patch_type: PatchType = "merge",
    ) -> Obj: ...


# -- pure parts ------------------------------------------------------------------------------------


def service_dns_names(service_name: str, namespace: str) -> tuple[str, str]:
    return f"{service_name}.{namespace}.svc", f"{service_name}.{namespace}.svc.cluster.local"


def secret_material(secret: Mapping[str, Any]) -> dict[str, bytes] | None:
    """tls.crt, tls.key and ca.crt decoded from the Secret's data; None when one is missing or garbled."""
    data = secret.get("data") or {}
    try:
        material = {key: base64.b64decode(data[key], validate=True) for key in (CERT_KEY, KEY_KEY, CA_KEY)}
    except (KeyError, TypeError, ValueError, binascii.Error):
        return None
    return material if all(material.values()) else None


def encode_data(material: Mapping[str, bytes]) -> dict[str, str]:
    """A Secret's `data` for the decoded material."""
    return {key: base64.b64encode(value).decode("ascii") for key, value in material.items()}


def build_secret(name: str, namespace: str, data: Mapping[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "ome-manager"}},
            "data": dict(data)}


def patched_webhooks(webhooks: Sequence[Mapping[str, Any]], ca_bundle: bytes) -> list[Obj] | None:
    """The webhooks list with every caBundle set to `ca_bundle`; None when all of them already are."""
    encoded = base64.b64encode(ca_bundle).decode("ascii")
    if all((hook.get("clientConfig") or {}).get("caBundle") == encoded for hook in webhooks):
        return None
    return [{**hook, "clientConfig": {**(hook.get("clientConfig") or {}), "caBundle": encoded}}
            for hook in webhooks]


# -- I/O -------------------------------------------------------------------------------------------


async def ensure_serving_certificate(
    client: Api, *, namespace: str, secret_name: str, service_name: str, cert_dir: str | Path,
    configuration_name: str,
) -> bytes:
    """Make the Secret, the cert dir and both configurations' caBundle agree; returns the CA bundle."""
    dns_names = service_dns_names(service_name, namespace)
    material = await _ensure_secret(client, namespace, secret_name, dns_names)
    _write_files(Path(cert_dir), material)
    for res in CONFIGURATIONS:
        await _ensure_ca_bundle(client, res, configuration_name, material[CA_KEY])
    return material[CA_KEY]


async def refresh_periodically(
    client: Api, *, namespace: str, secret_name: str, service_name: str, cert_dir: str | Path,
    configuration_name: str, interval: float = REFRESH_INTERVAL,
) -> None:
    """Re-run ensure_serving_certificate every `interval` seconds (a manager runnable); errors are logged.

    This renews before expiry, follows a rotation by another replica and sets the caBundle of
    configurations created after startup.
    """
    while True:
        await asyncio.sleep(interval)
        try:
            await ensure_serving_certificate(
                client, namespace=namespace, secret_name=secret_name, service_name=service_name,
                cert_dir=cert_dir, configuration_name=configuration_name,
            )
        except Exception as exc:  # the webhook keeps serving the current pair; the next round retries
            log.warning("webhook certificate refresh failed; retrying later", exc_info=exc)


async def _ensure_secret(
    client: Api, namespace: str, name: str, dns_names: Sequence[str]
) -> dict[str, bytes]:
    for _ in range(MAX_ATTEMPTS):
        try:
            current: Obj | None = await client.get(resources.SECRETS, name, namespace)
        except errors.NotFound:
            current = None
        now = datetime.datetime.now(datetime.UTC)
        if current is not None:
            problem = await _secret_problem(current, dns_names, now)
            if problem is None:
                material = secret_material(current)
                assert material is not None
                return material
            log.info("replacing webhook serving certificate", secret=name, reason=problem)
        data = await _replacement(current, dns_names, now)
        try:
            if current is None:
                await client.create(resources.SECRETS, build_secret(name, namespace, data), namespace)
            else:
                await client.update(resources.SECRETS, {**current, "data": data})
        except (errors.AlreadyExists, errors.Conflict):
            log.info("another replica wrote the webhook certificate; re-reading", secret=name)
            continue
        log.info("webhook serving certificate written", secret=name, dns_names=list(dns_names))
        return {key: base64.b64decode(value) for key, value in data.items()}
    raise RuntimeError(f"Secret {namespace}/{name} kept changing; gave up after {MAX_ATTEMPTS} attempts")


async def _secret_problem(secret: Mapping[str, Any], dns_names: Sequence[str], now: datetime.datetime
                          ) -> str | None:
    """`cert_material.secret_problem`, in the certificate child."""
    found = await crypto_child.run("serving-check", {"data": secret.get("data"), "dns_names": list(dns_names),
                                                     "now": now.isoformat()})
    problem = found.get("problem")
    return None if problem is None else str(problem)


async def _replacement(current: Mapping[str, Any] | None, dns_names: Sequence[str], now: datetime.datetime
                       ) -> dict[str, str]:
    """A new pair's Secret data (`cert_material.generate`), in the certificate child; the CA of the
    Secret it replaces (when its data decodes) stays in ca.crt while it is valid."""
    made = await crypto_child.run("serving-generate", {
        "data": (current or {}).get("data"),
        "dns_names": list(dns_names), "now": now.isoformat(),
    })
    return {str(k): str(v) for k, v in dict(made["data"]).items()}


def _write_files(cert_dir: Path, material: Mapping[str, bytes]) -> None:
    """Key before certificate (the server reloads on either); unchanged files are not rewritten."""
    for key in (KEY_KEY, CERT_KEY, CA_KEY):
        path = cert_dir / key
        if not path.exists() or path.read_bytes() != material[key]:
            pem_files.write_pem(path, material[key], private=key == KEY_KEY)


async def _ensure_ca_bundle(client: Api, res: Resource, name: str, ca_bundle: bytes) -> None:
    for _ in range(MAX_ATTEMPTS):
        try:
            current = await client.get(res, name)
        except errors.NotFound:
            log.warning("webhook configuration not found; caBundle not set", kind=res.kind, name=name)
            return
        webhooks = patched_webhooks(current.get("webhooks") or [], ca_bundle)
        if webhooks is None:
            return
        version = current["metadata"]["resourceVersion"]
        patch: Obj = {"metadata": {"resourceVersion": version}, "webhooks": webhooks}
        try:
            await client.patch(res, name, patch, patch_type="merge")
        except errors.Conflict:
            continue
        log.info("webhook caBundle set", kind=res.kind, name=name, webhooks=len(webhooks))
        return
    raise RuntimeError(f"{res.kind} {name} kept changing; gave up after {MAX_ATTEMPTS} attempts")
