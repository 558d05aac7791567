"""The kube-apiserver's CPU profile over a bench phase, and where it went.

The dev cluster's `scale` profile serves the apiserver's /debug/pprof to the admin
(ome/devcluster/components.PROFILES). Go's CPU profile covers a duration fixed when it is asked for, and a
phase's length is not known in advance: `record` takes consecutive chunks while the phase runs and drops
the chunk in flight when the phase ends, so the kept chunks cover the phase but its last seconds (the
summary says how many seconds). `summarize` merges them with `go tool pprof` (Go builds the control plane
here, so it is at hand) and reads the cumulative CPU seconds of the request paths the manager and the raw
floor differ in: creates (POST) against server-side applies (PATCH), the managed-fields bookkeeping both
pay, the ClusterIP allocator, watch serving, the garbage collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ome.devcluster.cluster import Cluster

CHUNK_SECONDS: Final = 10

_H = "k8s.io/apiserver/pkg/endpoints/handlers."
_MF = "k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager)."
_SVC = "k8s.io/kubernetes/pkg/registry/core/service/storage."
# Each request runs in two goroutines (the handler's, and the finisher's that writes to storage), so a
# verb's cost is its handler's root plus its finisher closure; the names are kube-apiserver v1.36's.
CATEGORIES: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("create", (f"{_H}CreateResource.createHandler.func1", f"{_H}CreateResource.createHandler.func1.2")),
    ("update", (f"{_H}UpdateResource.func1", f"{_H}UpdateResource.func1.4")),
    ("patch/apply", (f"{_H}PatchResource.func1", f"{_H}(*patcher).patchResource.func2")),
    ("managed fields", (f"{_MF}Update", f"{_MF}Apply")),
    ("ClusterIP allocation", (f"{_SVC}(*Allocators).allocateCreate",)),
    ("watch", (f"{_H}(*WatchServer).HandleHTTP",)),
    ("GC", ("runtime.gcBgMarkWorker",)),
)
"""(label, functions whose cumulative seconds add up to it); managed fields and the allocator are parts of
the writes above them."""

_UNIT = r"(hrs|mins|ms|us|µs|ns|s)"
_TOTAL = re.compile(r"Total samples = ([\d.]+)" + _UNIT)
_ROW = re.compile(r"^\s*\S+\s+\S+%\s+\S+%\s+([\d.]+)" + _UNIT + r"\s+\S+%\s+(.+?)\s*$")


@dataclass
class Recording:
    """The chunks one phase kept."""

    files: list[Path] = field(default_factory=list)
    chunk: int = CHUNK_SECONDS
    error: str | None = None
    """Why recording stopped before the phase ended (a cluster started without profiling answers 404)."""

    @property
    def seconds(self) -> int:
        """The seconds the kept chunks cover."""
        return len(self.files) * self.chunk


@contextlib.asynccontextmanager
async def phase(cluster: Cluster, out_dir: Path | None, name: str) -> AsyncIterator[Recording | None]:
    """`record` of the cluster's apiserver into `out_dir` while the block runs; nothing without a dir."""
    if out_dir is None:
        yield None
        return
    api = cluster.admin_api()

    def fetch(seconds: int) -> Awaitable[bytes]:
        return asyncio.to_thread(api.data, f"/debug/pprof/profile?seconds={seconds}", timeout=seconds + 60)

    async with record(fetch, out_dir, name) as kept:
        yield kept


@contextlib.asynccontextmanager
async def record(
    fetch: Callable[[int], Awaitable[bytes]], out_dir: Path, name: str, chunk: int = CHUNK_SECONDS,
) -> AsyncIterator[Recording]:
    """Profiles of `chunk` seconds, one after another, for as long as the block runs; `fetch(seconds)`
    returns one profile. The one in flight at the end is waited for and left out: the apiserver runs one
    CPU profile at a time, and the next phase's would be refused while it runs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = Recording(chunk=chunk)
    ended = False

    async def loop() -> None:
        while not ended:
            try:
                data = await fetch(chunk)
            except Exception as exc:  # noqa: BLE001 - the phase's own figures must not be lost to it
                kept.error = str(exc) or type(exc).__name__
                return
            if ended:
                return
            path = out_dir / f"{name}-{len(kept.files):03d}.pprof"
            path.write_bytes(data)
            kept.files.append(path)

    task = asyncio.create_task(loop())
    try:
        yield kept
    finally:
        ended = True
        await task


def parse_top(text: str) -> tuple[float, dict[str, float]]:
    """`go tool pprof -top -cum` output: (total sampled CPU seconds, {function: cumulative seconds})."""
    total = 0.0
    if match := _TOTAL.search(text):
        total = _seconds(match.group(1), match.group(2))
    cum: dict[str, float] = {}
    for line in text.splitlines():
        if row := _ROW.match(line):
            cum[row.group(3)] = _seconds(row.group(1), row.group(2))
    return total, cum


def categorize(cum: dict[str, float]) -> dict[str, float]:
    return {label: sum(cum.get(f, 0.0) for f in functions) for label, functions in CATEGORIES}


def summarize(files: Sequence[Path], go: str | None = None) -> tuple[float, dict[str, float]]:
    """The merged profile of `files`: (total CPU seconds, seconds per CATEGORIES label)."""
    if not files:
        return 0.0, {label: 0.0 for label, _ in CATEGORIES}
    tool = go or shutil.which("go") or "/usr/local/go/bin/go"
    text = subprocess.run([tool, "tool", "pprof", "-top", "-cum", "-nodecount=100000", *map(str, files)],
                          check=True, capture_output=True, text=True).stdout
    total, cum = parse_top(text)
    return total, categorize(cum)


def format_summary(recording: Recording, phase_seconds: float, total: float, parts: dict[str, float]) -> str:
    if recording.error is not None and not recording.files:
        return f"apiserver CPU profile unavailable: {recording.error}"
    shown = ", ".join(f"{label} {seconds:.1f}" for label, seconds in parts.items())
    stopped = f" (stopped early: {recording.error})" if recording.error else ""
    return (f"apiserver CPU profile, {recording.seconds:.0f} s sampled (phase {phase_seconds:.0f} s): "
            f"{total:.1f} CPU s; {shown}{stopped}")


def _seconds(value: str, unit: str) -> float:
    scale = {"hrs": 3600.0, "mins": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}[unit]
    return float(value) * scale
