"""The webhook server's metrics as alerting.md's OMEWebhookFailing reads them (coverage row T2):
`controller_runtime_webhook_requests_total{webhook,code}` and the latency histogram, per request."""

from __future__ import annotations

from prometheus_client import REGISTRY

from ome.framework.webhook_server import WebhookServer
from tests.unit.framework.test_webhook_server import Pki, pki, post, review_request, server

__all__ = ["pki", "server"]  # fixtures, imported for pytest


def _sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_each_request_is_counted_and_timed(server: WebhookServer, pki: Pki) -> None:
    """alerting.md §OMEWebhookFailing reads `controller_runtime_webhook_requests_total` by `code`; the
    latency histogram is controller-runtime's `controller_runtime_webhook_latency_seconds`."""
    labels = {"webhook": "/allow"}
    count_before = _sample("controller_runtime_webhook_latency_seconds_count", labels)
    ok_before = _sample("controller_runtime_webhook_requests_total", {**labels, "code": "200"})
    for uid in ("a", "b", "c"):
        status, _ = await post(server, pki, "/allow", review_request(uid))
        assert status == 200
    assert _sample("controller_runtime_webhook_requests_total", {**labels, "code": "200"}) == ok_before + 3
    assert _sample("controller_runtime_webhook_latency_seconds_count", labels) == count_before + 3
    assert _sample("controller_runtime_webhook_latency_seconds_bucket", {**labels, "le": "+Inf"}) >= 3
