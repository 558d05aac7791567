"""The apiserver really calls a webhook served on 127.0.0.1 (url clientConfig + caBundle)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ome.framework import admission, certs, errors, pem_files
from ome.framework.client import Client
from ome.framework.resources import CONFIGMAPS, VALIDATING_WEBHOOK_CONFIGURATIONS
from ome.framework.webhook_server import WebhookServer


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[tuple[WebhookServer, bytes]]:
    ca_crt, ca_key = certs.generate_ca("smoke-webhook-ca")
    crt, key = certs.generate_serving_cert(ca_crt, ca_key, "127.0.0.1", ip_addresses=("127.0.0.1",))
    pem_files.write_cert_pair(tmp_path, crt, key, cert_name="tls.crt", key_name="tls.key")
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path))

    async def validate(review: dict[str, Any]) -> dict[str, Any]:
        req = review["request"]
        name = req["object"]["metadata"]["name"]
        if name.startswith("deny-"):
            return admission.denied(req["uid"], f"configmap {name} is not allowed here")
        return admission.allowed(req["uid"], warnings=[f"smoke warning for {name}"])

    server.register("/validate-configmap", validate)
    await server.start()
    try:
        yield server, ca_crt
    finally:
        await server.stop()


async def test_webhook_denies_with_message_and_returns_warnings(
    client: Client, namespace: str, webhook: tuple[WebhookServer, bytes]
) -> None:
    server, ca_crt = webhook
    config_name = f"smoke-{namespace}"
    await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": config_name},
        "webhooks": [{
            "name": "configmaps.smoke.ome.io",
            "clientConfig": {"url": f"https://127.0.0.1:{server.port}/validate-configmap",
                             "caBundle": base64.b64encode(ca_crt).decode()},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["configmaps"]}],
            # Only this test's namespace: other tests never meet this webhook.
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
            "timeoutSeconds": 10,
        }],
    })
    try:
        seen: list[str] = []
        client.warning_handler = seen.append
        with pytest.raises(errors.ApiError) as denied:
            await _create_when_webhook_active(client, namespace, "deny-me")
        assert "configmap deny-me is not allowed here" in str(denied.value)
        assert denied.value.status == 403

        await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "allowed"}}, namespace)
        assert "smoke warning for allowed" in seen
    finally:
        await client.delete(VALIDATING_WEBHOOK_CONFIGURATIONS, config_name)


async def _create_when_webhook_active(client: Client, namespace: str, name: str) -> None:
    # A new webhook configuration reaches the apiserver's admission chain within a moment; retry
    # until the denial shows up rather than sleeping a fixed time.
    import asyncio

    for _ in range(50):
        try:
            await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": name}}, namespace)
        except errors.ApiError:
            raise
        await client.delete(CONFIGMAPS, name, namespace)
        await asyncio.sleep(0.1)
    raise AssertionError("the webhook was never called")
