"""Self-registration over a configuration an in-cluster install wrote (service clientConfig)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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


class Cluster:
    """The configurations as the apiserver holds them; another replica's unregister deletes them."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, Any]] = {}
        self.failures: list[Exception] = []

    async def apply(self, res: Any, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.configs[res.kind] = body
        return body

    async def get(self, res: Any, name: str, **_: Any) -> dict[str, Any]:
        if self.failures:
            raise self.failures.pop()
        if res.kind not in self.configs:
            raise errors.NotFound(404, "NotFound", f"{name} not found")
        return self.configs[res.kind]


async def test_a_serving_replica_registers_again_when_a_stopping_one_removed_the_configurations() -> None:
    api = Cluster()
    rounds: list[float] = []

    async def sleep(seconds: float) -> None:  # each round: what happened meanwhile, then the check
        rounds.append(seconds)
        if len(rounds) == 2:
            api.configs.clear()  # the replica that registered last stopped and unregistered
        if len(rounds) == 3:
            api.failures.append(errors.TransportError(0, "TransportError", "apiserver restarting"))
        if len(rounds) == 5:
            raise asyncio.CancelledError  # the manager stops

    await self_register.register(api, port=9443, ca_bundle=b"ca")  # type: ignore[arg-type]
    api.configs.pop("ValidatingWebhookConfiguration")  # only one of them is gone: both come back
    with pytest.raises(asyncio.CancelledError):
        await self_register.keep_registered(api, port=9443, ca_bundle=b"ca", sleep=sleep)  # type: ignore[arg-type]
    assert rounds == [self_register.KEEP_INTERVAL] * 5
    assert set(api.configs) == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for body in api.configs.values():
        assert all(h["clientConfig"]["url"].startswith("https://127.0.0.1:9443/") for h in body["webhooks"])
