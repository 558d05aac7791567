"""Self-registration over a configuration an in-cluster install wrote (service clientConfig)."""

from __future__ import annotations

from typing import Any

from ome.framework import errors
from ome.webhooks import self_register


class InstalledByChart:
    """Stands in for the apiserver: an existing configuration with a `service` clientConfig owned by
    another field manager, so applying a `url` is rejected until the object is replaced."""

    def __init__(self) -> None:
        self.existing = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
        self.calls: list[tuple[str, str]] = []
        self.applied: dict[str, dict[str, Any]] = {}

    async def apply(self, res: Any, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.calls.append(("apply", res.kind))
        if res.kind in self.existing:
            raise errors.Invalid(422, "Invalid", "webhooks[0].clientConfig: Required value: exactly one of url or "
                                      "service is required")
        self.applied[res.kind] = body
        return body

    async def delete(self, res: Any, name: str, **_: Any) -> None:
        self.calls.append(("delete", res.kind))
        self.existing.discard(res.kind)


async def test_a_configuration_with_a_service_client_config_is_replaced() -> None:
    api = InstalledByChart()
    await self_register.register(api, port=9443, ca_bundle=b"ca")  # type: ignore[arg-type]
    assert api.calls == [("apply", "MutatingWebhookConfiguration"), ("delete", "MutatingWebhookConfiguration"),
                         ("apply", "MutatingWebhookConfiguration"), ("apply", "ValidatingWebhookConfiguration"),
                         ("delete", "ValidatingWebhookConfiguration"),
                         ("apply", "ValidatingWebhookConfiguration")]
    for body in api.applied.values():
        assert all(h["clientConfig"]["url"].startswith("https://127.0.0.1:9443/") for h in body["webhooks"])
