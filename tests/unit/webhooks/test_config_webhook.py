"""config/webhook/manifests.yaml is exactly what registry.py renders for the in-cluster Service."""

from __future__ import annotations

from pathlib import Path

import yaml

from ome.webhooks import registry

ROOT = Path(__file__).resolve().parents[3] / "config" / "webhook"


def test_manifests_match_the_registry() -> None:
    shipped = list(yaml.safe_load_all((ROOT / "manifests.yaml").read_text()))
    assert shipped == list(registry.webhook_configurations(registry.service_client_config()))


def test_configurations_call_the_webhook_service_in_ome() -> None:
    for config in yaml.safe_load_all((ROOT / "manifests.yaml").read_text()):
        for hook in config["webhooks"]:
            service = hook["clientConfig"]["service"]
            assert (service["name"], service["namespace"]) == ("ome-webhook-server-service", "ome")
            assert hook["failurePolicy"] == "Fail"
