"""Make one model's weights present on this node, by scheme, and read what the model is.

`local://` is checked, `hf://` downloaded (in a thread, with a progress monitor on the event loop),
`vendor://` taken as it is; any other scheme fails with a reason naming it, so no node is left
`Updating` for a model nobody can fetch. `pvc://` never gets here: the agent skips those models.

File-system work (the directory scan after prepare, the progress monitor's walk of the download
directory) runs in threads. A cancelled download asks its thread to stop at the next file and waits for
it to end before the cancellation goes on, so the caller's download slot is released only then.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import structlog

from ome.framework import errors, resources, timefmt
from ome.modelagent import hf, staging
from ome.models import scan, storage
from ome.models.entries import Progress
from ome.models.modelconfig import ModelConfig
from ome.models.status import SKIP_CONFIG_PARSING

Obj = dict[str, Any]
ProgressSink = Callable[[Progress], Awaitable[None]]
_T = TypeVar("_T")


class PrepareError(Exception):
    """The model cannot be made present on this node; the message says why (shown in the model status)."""


@dataclass(frozen=True, kw_only=True)
class PrepareSettings:
    models_root: str = "/mnt/models"
    """Parent directory of models whose spec names no `storage.path`."""
    hf_endpoint: str = "https://huggingface.co"
    config_namespace: str = "ome"
    """Where a ClusterBaseModel's token Secret lives."""
    progress_interval: float = 30.0
    """Seconds between progress log lines and ConfigMap progress updates."""


class SecretReader:
    """Reads tokens with a direct GET: the agent never watches Secrets."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def hf_token(self, model: Obj, config_namespace: str) -> str | None:
        spec = storage.storage_of(model)
        params = spec.get("parameters") or {}
        if name := spec.get("key"):
            namespace = model["metadata"].get("namespace") or config_namespace
            try:
                secret = await self._client.get(resources.SECRETS, name, namespace)
            except errors.ApiError as exc:
                raise PrepareError(f"Failed to retrieve secret {namespace}/{name}: {exc.reason}") from exc
            data_key = params.get("secretKey") or "token"
            raw = (secret.get("data") or {}).get(data_key)
            if not raw:
                raise PrepareError(f"Failed to retrieve secret {namespace}/{name}: no key {data_key!r}")
            return base64.b64decode(raw).decode().strip()
        return params.get("token") or os.environ.get("HF_TOKEN") or None


async def prepare(model: Obj, settings: PrepareSettings, secrets: SecretReader,
                  on_progress: ProgressSink) -> ModelConfig | None:
    """Weights present at the model's path, and its config (None when unreadable or not to be read)."""
    uri = storage.storage_of(model).get("storageUri") or ""
    try:
        source = storage.parse(uri)
    except storage.StorageUriError as exc:
        raise PrepareError(str(exc)) from exc
    target = Path(storage.target_dir(model, settings.models_root))
    if isinstance(source, storage.LocalSource):
        if not target.is_dir():
            raise PrepareError(f"local path {target} does not exist or is not a directory")
    elif isinstance(source, storage.HfSource):
        token = await secrets.hf_token(model, settings.config_namespace)
        await _download_hf(source, target, token, settings, on_progress)
    elif isinstance(source, storage.VendorSource):
        return None
    else:
        scheme = storage.scheme_of(uri) or uri
        raise PrepareError(f"unsupported storage scheme {scheme!r}: the model agent has no downloader for it")
    return await asyncio.to_thread(read_config, model, target)


def read_config(model: Obj, target: Path) -> ModelConfig | None:
    if (model["metadata"].get("annotations") or {}).get(SKIP_CONFIG_PARSING) == "true":
        return None
    log = structlog.get_logger("modelagent").bind(name=model["metadata"]["name"], path=str(target))
    try:
        return scan.scan(target)
    except (OSError, ValueError) as exc:
        # Documented: a model whose files cannot be read still becomes Ready; its metadata is set by hand.
        log.warning("model config not read", error=str(exc))
        return None


async def _download_hf(source: storage.HfSource, target: Path, token: str | None, settings: PrepareSettings,
                       on_progress: ProgressSink) -> None:
    endpoint = settings.hf_endpoint
    plan = await asyncio.to_thread(hf.plan, source.repo_id, source.revision, endpoint=endpoint, token=token)
    if await asyncio.to_thread(hf.is_published, target, plan):
        return
    stop, done = threading.Event(), [0]
    interval = settings.progress_interval
    monitor = asyncio.create_task(_monitor(source, plan, target, done, interval, on_progress))
    try:
        await run_to_end(stop, hf.download, source.repo_id, plan, target, endpoint=endpoint, token=token,
                         stop=stop, on_file=lambda _f: done.__setitem__(0, done[0] + 1))
    except hf.DownloadError as exc:
        raise PrepareError(str(exc)) from exc
    finally:
        monitor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await monitor


async def run_to_end(stop: threading.Event, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """`fn` in a thread; when cancelled, set `stop` and wait for the thread to end, then re-raise.

    A thread cannot be killed: returning at once would leave it writing while its caller believes
    the work is over (and hands its download slot to the next model).
    """
    thread = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(thread)
    except asyncio.CancelledError:
        stop.set()
        while not thread.done():
            try:
                await asyncio.shield(thread)
            except asyncio.CancelledError:
                continue  # cancelled again while waiting: the thread still has to end first
            except Exception:
                break  # it ended with an error; the cancellation is what the caller asked for
        raise


async def _monitor(source: storage.HfSource, plan: hf.Plan, target: Path, done: list[int], interval: float,
                   on_progress: ProgressSink) -> None:
    """Log and publish bytes on disk and the rate, every `interval` seconds, until cancelled."""
    log = structlog.get_logger("modelagent").bind(repo=source.repo_id, commit=plan.commit)
    staged = staging.staging_dir(target)
    last_bytes, last_time = await asyncio.to_thread(staging.directory_bytes, staged), time.monotonic()
    log.info("download started", total_bytes=plan.total_bytes, files=len(plan.files),
             resumed_bytes=last_bytes)
    while True:
        await asyncio.sleep(interval)
        now_bytes, now = await asyncio.to_thread(staging.directory_bytes, staged), time.monotonic()
        rate = max(now_bytes - last_bytes, 0) / max(now - last_time, 1e-6)
        last_bytes, last_time = now_bytes, now
        completed = min(now_bytes, plan.total_bytes)
        log.info("download progress", completed_bytes=completed, total_bytes=plan.total_bytes,
                 bytes_per_second=round(rate), files_done=done[0], files=len(plan.files))
        await on_progress(Progress("Downloading", plan.total_bytes, completed, len(plan.files), done[0], rate,
                                   timefmt.now()))
