"""The pod webhook follows `inferenceservice-config` on a real apiserver: after a `kubectl edit` of the
ConfigMap, the next serving pod admitted is mutated by the new setting, with no restart of the webhook
server.

The webhook server runs in the test process on 127.0.0.1 (self_register), its configurations select only this
test's namespace, and it reads the ConfigMap from that namespace, as the manager does with
--config-namespace. The setting edited is `metricsAggregator.enablePrometheusScraping`, which decides the
pod's `ome.io/enable-prometheus-scraping` default and, when "true", `prometheus.io/port` 9091
(labels-and-annotations.md, Pods).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ome.config.inferenceservice_config import CONFIGMAP_NAME, InferenceServiceConfig
from ome.framework import errors, resources
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import registry, self_register

Obj = dict[str, Any]
SCRAPING = "ome.io/enable-prometheus-scraping"


def aggregator(scraping: str) -> dict[str, str]:
    return {"metricsAggregator": json.dumps({"enableMetricAggregation": "false",
                                             "enablePrometheusScraping": scraping})}


def serving_pod(name: str, namespace: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"ome.io/inferenceservice": "svc"}},
            "spec": {"containers": [{"name": "ome-container", "image": "vllm:latest"}]}}


@pytest.fixture
async def webhook(client: Client, namespace: str, ome_crds: list[str], tmp_path: Path
                  ) -> AsyncIterator[SharedCache]:
    await client.create(resources.CONFIGMAPS, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP_NAME, "namespace": namespace}, "data": aggregator("false")}, namespace)
    cache = SharedCache(client)
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path))
    ca = self_register.write_serving_certificate(tmp_path)
    # The start config says "true": what the ConfigMap holds must win once the cache has it.
    start = InferenceServiceConfig.model_validate(
        {"metricsAggregator": {"enableMetricAggregation": "false", "enablePrometheusScraping": "true"}})
    registry.register_webhooks(server, cache, start, config_namespace=namespace)
    await cache.start()
    await server.start()
    registration = await self_register.register(
        client, port=server.port, ca_bundle=ca, name=f"pods-{namespace}",
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": namespace}})
    try:
        await cache.wait_for_sync(30)
        yield cache
    finally:
        with contextlib.suppress(errors.ApiError):
            await self_register.unregister(client, registration)
        await server.stop()
        await cache.stop()


async def admitted(client: Client, namespace: str, name: str) -> dict[str, str]:
    """Create a serving pod once the webhook configuration is live (it reaches the admission chain within
    moments), and return the annotations it was admitted with."""
    for _ in range(100):
        created = await client.create(resources.PODS, serving_pod(name, namespace), namespace)
        annotations: dict[str, str] = created["metadata"].get("annotations") or {}
        if SCRAPING in annotations:
            return annotations
        await client.delete(resources.PODS, name, namespace, grace_period_seconds=0)
        await asyncio.sleep(0.1)  # not mutated: the configuration is not in the admission chain yet
    raise AssertionError("the pod webhook never mutated a pod")


async def test_a_configmap_edit_mutates_the_next_pod_without_a_restart(
        client: Client, namespace: str, webhook: SharedCache) -> None:
    first = await admitted(client, namespace, "pod-before")
    assert first[SCRAPING] == "false" and "prometheus.io/port" not in first

    await edit(client, namespace, webhook, aggregator("true"))
    # The very next pod: the same server, no restart.
    second = (await client.create(resources.PODS, serving_pod("pod-after", namespace), namespace))["metadata"]
    assert second["annotations"][SCRAPING] == "true"
    assert second["annotations"]["prometheus.io/port"] == "9091"
    assert second["annotations"]["prometheus.io/path"] == "/metrics"

    # An edit that does not parse leaves the last valid setting in force.
    await edit(client, namespace, webhook, {**aggregator("false"), "deploy": "{not json"})
    third = (await client.create(resources.PODS, serving_pod("pod-bad-edit", namespace), namespace))["metadata"]
    assert third["annotations"][SCRAPING] == "true"


async def edit(client: Client, namespace: str, cache: SharedCache, data: dict[str, str]) -> None:
    """Patch the ConfigMap (as `kubectl edit` does) and wait until the watch delivered it to the webhook's
    cache: from then on the webhook must admit pods with it."""
    edited = await client.patch(resources.CONFIGMAPS, CONFIGMAP_NAME, {"data": data}, namespace)
    version = edited["metadata"]["resourceVersion"]
    for _ in range(200):
        cached = cache.get_or_none(resources.CONFIGMAPS, CONFIGMAP_NAME, namespace)
        if cached is not None and cached["metadata"]["resourceVersion"] == version:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the ConfigMap edit never reached the webhook's cache")
