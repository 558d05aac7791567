"""The operator config as reconcilers see it: re-read from the ConfigMap at most once per TTL.

v1.3 semantics (configure-the-controller): a `kubectl` edit of `inferenceservice-config` reaches the
controllers within the config cache's TTL (30 s by default, `--config-cache-ttl`), and applies to an
object the next time it is reconciled; the edit alone starts no reconcile. An edit that does not parse
keeps the last good config in force and is logged once, so a typo never stops the controllers (the
manager only refuses to start on a bad config).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from ome.config import inferenceservice_config as isvc_config
from ome.config.inferenceservice_config import ConfigError, InferenceServiceConfig
from ome.framework import errors, resources
from ome.framework.resources import Resource

log = structlog.get_logger("ome.config")


class Getter(Protocol):
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]: ...


class ConfigSource:
    def __init__(
        self,
        client: Getter,
        namespace: str,
        initial: InferenceServiceConfig,
        *,
        ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._config = initial
        self._ttl = ttl
        self._clock = clock
        self._read_at = clock()
        self._rejected: str | None = None
        self._lock = asyncio.Lock()

    @property
    def config(self) -> InferenceServiceConfig:
        """The config in force, without a read."""
        return self._config

    async def current(self) -> InferenceServiceConfig:
        """The config in force, re-read first when the last read is older than the TTL."""
        if self._clock() - self._read_at < self._ttl:
            return self._config
        async with self._lock:  # concurrent reconciles share one read
            if self._clock() - self._read_at >= self._ttl:
                await self._refresh()
        return self._config

    async def _refresh(self) -> None:
        try:
            configmap = await self._client.get(
                resources.CONFIGMAPS, isvc_config.CONFIGMAP_NAME, self._namespace
            )
        except errors.NotFound:
            data: dict[str, str] = {}
        except errors.ApiError as exc:
            log.warning("inferenceservice-config not re-read; keeping the config in force", error=str(exc))
            return  # retried after the TTL, like a successful read
        else:
            data = configmap.get("data") or {}
        finally:
            self._read_at = self._clock()
        try:
            parsed = isvc_config.parse(data)
        except ConfigError as exc:
            if str(exc) != self._rejected:
                log.warning(
                    "inferenceservice-config edit rejected; keeping the last valid config", error=str(exc)
                )
                self._rejected = str(exc)
            return
        self._rejected = None
        if parsed != self._config:
            log.info("inferenceservice-config changed; reconciles use the new config from now on")
            self._config = parsed
