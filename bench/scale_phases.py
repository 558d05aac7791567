"""The later sections of bench/bench_scale.py, each against a running manager process:

(d) churn: spec changes at a fixed rate, latency from each change to `status.observedGeneration` and to
    Ready at that generation (read from a watch, so no poll interval rounds the figures);
(e) memory: extra pods that the manager caches (they carry the InferenceService label and a scheduling
    gate, so nothing schedules or runs them), RSS before and after, per pod;
cold start: a fresh manager process over the converged services (and the extra pods): time to caches
    synced, to the first reconcile and to every service reconciled, its writes (0 expected), its RSS;
standby: a second manager under leader election, its RSS once synced, and the time from the leader's
    SIGKILL to the standby's first reconcile.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from ome.api import resources
from ome.devcluster.cluster import Cluster
from ome.framework import errors
from ome.framework.client import Client
from ome.resolution import naming

Obj = dict[str, Any]
EXTRA_NS = "bench-extra"
_RECONCILES = re.compile(r'^controller_runtime_reconcile_total\{controller="([^"]+)",result="[^"]+"\} (\S+)$')


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def metrics_text(url: str) -> str:
    with contextlib.suppress(OSError):
        with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - loopback
            return str(resp.read().decode())
    return ""


def reconciles(url: str, controller: str = "inferenceservice") -> int:
    """controller_runtime_reconcile_total of `controller`, summed over results (0 while unreachable)."""
    total = 0.0
    for line in metrics_text(url).splitlines():
        if (m := _RECONCILES.match(line)) and m.group(1) == controller:
            total += float(m.group(2))
    return int(total)


def cached(url: str, resource: str) -> int:
    for line in metrics_text(url).splitlines():
        if line.startswith(f'ome_informer_cached_objects{{resource="{resource}"}}'):
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.999999) - 1))]


# ---- (d) churn -------------------------------------------------------------------------------------
_QUEUE_SERIES = re.compile(r'^(workqueue_queue_duration_seconds|workqueue_work_duration_seconds|'
                           r'controller_runtime_reconcile_total)_?(sum|count)?\{([^}]*)\} (\S+)$')


class QueueFigures:
    """Per controller: reconciles, and seconds keys waited in the queue and were worked on (sums of the
    manager's histograms), so a window's difference says whether latency is queueing or work."""

    def __init__(self, values: dict[tuple[str, str], float]) -> None:
        self.values = values

    def __sub__(self, other: QueueFigures) -> QueueFigures:
        return QueueFigures({k: v - other.values.get(k, 0.0) for k, v in self.values.items()})

    def __str__(self) -> str:
        parts = []
        busiest = sorted({name for name, _ in self.values}, key=lambda c: -self.values.get((c, "work"), 0.0))
        for name in busiest:
            n = self.values.get((name, "reconciles"), 0.0)
            if n < 1:
                continue
            got = max(self.values.get((name, "got"), 0.0), 1.0)
            wait = self.values.get((name, "wait"), 0.0) / got
            work = self.values.get((name, "work"), 0.0)
            parts.append(f"{name} {n:.0f} reconciles, mean queue wait {wait:.2f} s, "
                         f"work {work:.1f} s ({1000 * work / got:.0f} ms each)")
        return "; ".join(parts)


def queue_figures(url: str) -> QueueFigures:
    values: dict[tuple[str, str], float] = {}
    for line in metrics_text(url).splitlines():
        m = _QUEUE_SERIES.match(line)
        if m is None:
            continue
        series, part, labels, value = m.groups()
        name = re.search(r'(?:name|controller)="([^"]+)"', labels)
        if name is None:
            continue
        key = {("workqueue_queue_duration_seconds", "sum"): "wait",
               ("workqueue_queue_duration_seconds", "count"): "got",
               ("workqueue_work_duration_seconds", "sum"): "work",
               ("controller_runtime_reconcile_total", None): "reconciles"}.get((series, part))
        if key is not None:
            values[(name.group(1), key)] = values.get((name.group(1), key), 0.0) + float(value)
    return QueueFigures(values)


def _ready_at(isvc: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (isvc.get("status") or {}).get("conditions") or [])


async def churn(client: Client, namespace: str, n: int, rate: float, seconds: float) -> Obj:
    """`rate` spec changes per second for `seconds` (service i % n, an engine annotation: the pods roll),
    then up to 60 s for the last ones to settle. Latencies in seconds from the patch's response."""
    _, rv = await client.list(resources.INFERENCE_SERVICES, namespace)
    sent: dict[tuple[str, int], float] = {}
    observed: dict[tuple[str, int], float] = {}
    ready: dict[tuple[str, int], float] = {}
    seen_gen: dict[str, int] = {}
    seen_ready: dict[str, int] = {}

    def note(name: str, gen: int, is_ready: bool) -> None:
        now = time.monotonic()
        for g in range(seen_gen.get(name, 0) + 1, gen + 1):
            observed.setdefault((name, g), now)
        seen_gen[name] = max(seen_gen.get(name, 0), gen)
        if is_ready:
            for g in range(seen_ready.get(name, 0) + 1, gen + 1):
                ready.setdefault((name, g), now)
            seen_ready[name] = max(seen_ready.get(name, 0), gen)

    async def catch_up() -> str:
        items, version = await client.list(resources.INFERENCE_SERVICES, namespace)
        for item in items:
            status = item.get("status") or {}
            note(item["metadata"]["name"], int(status.get("observedGeneration") or 0), _ready_at(item))
        return version

    async def watch(version: str) -> None:
        while True:  # a watch the loaded apiserver ends (timeout, 410, dropped) is opened again
            with contextlib.suppress(errors.ApiError):
                async for kind, obj in client.watch(resources.INFERENCE_SERVICES, namespace,
                                                    resource_version=version, timeout_seconds=60):
                    if kind not in ("ADDED", "MODIFIED"):
                        continue  # BOOKMARK carries no name
                    version = obj["metadata"].get("resourceVersion") or version
                    status = obj.get("status") or {}
                    note(obj["metadata"]["name"], int(status.get("observedGeneration") or 0), _ready_at(obj))
            with contextlib.suppress(errors.ApiError):
                version = await catch_up()

    for item in (await client.list(resources.INFERENCE_SERVICES, namespace))[0]:
        status = item.get("status") or {}
        seen_gen[item["metadata"]["name"]] = int(status.get("observedGeneration") or 0)
        seen_ready[item["metadata"]["name"]] = seen_gen[item["metadata"]["name"]] if _ready_at(item) else 0
    watcher = asyncio.create_task(watch(rv))
    started = time.monotonic()
    pending: set[asyncio.Task[None]] = set()

    token = f"{time.time():.0f}"  # a value no earlier run set: every patch is a change (a new generation)

    async def change(i: int) -> None:
        name = f"svc-{i % n}"
        patch = {"spec": {"engine": {"annotations": {"bench.ome.io/churn": f"{token}-{i}"}}}}
        with contextlib.suppress(errors.ApiError):
            updated = await client.patch(resources.INFERENCE_SERVICES, name, patch, namespace)
            sent.setdefault((name, int(updated["metadata"]["generation"])), time.monotonic())

    total = int(rate * seconds)
    for i in range(total):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(change(i))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)
    issued = time.monotonic() - started
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(k in ready for k in sent):  # noqa: ASYNC110 - a poll
        await asyncio.sleep(0.5)
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError, errors.ApiError):
        await watcher
    to_gen = [max(0.0, observed[k] - t) for k, t in sent.items() if k in observed]
    to_ready = [max(0.0, ready[k] - t) for k, t in sent.items() if k in ready]
    return {"changes": len(sent), "asked": total, "rate": len(sent) / issued if issued else 0.0,
            "gen": to_gen, "ready": to_ready, "missing_gen": len(sent) - len(to_gen),
            "missing_ready": len(sent) - len(to_ready)}


# ---- time to Ready, from a watch ---------------------------------------------------------------------
async def follow(
    client: Client,
    res: resources.Resource,
    namespace: str,
    on_object: Callable[[Obj, float], None],
    done: Callable[[], bool],
    *,
    started: float,
    timeout: float,
    what: str,
    check: Callable[[], None] | None = None,
) -> None:
    """Calls `on_object(object, seconds since started)` for every `res` in `namespace`, listed once and
    then from a watch, until `done()`. A watch is what a client waiting for many objects does: polling a
    list of 1,000 objects every 250 ms cost the apiserver more CPU than the waiting measured (each list
    encodes them all; a watch encodes each change once), and more for custom resources than built-in
    ones. `check` runs whenever a watch ends (every 10 s at the latest), e.g. to see the manager is alive."""
    async def relist() -> str:
        items, version = await retry_transient(lambda: client.list(res, namespace), f"list {res.plural}")
        now = time.monotonic() - started
        for item in items:
            on_object(item, now)
        return version

    version = await relist()
    while not done():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"{what} after {timeout:.0f} s")
        if check is not None:
            check()
        try:
            stream = client.watch(res, namespace, resource_version=version, timeout_seconds=10)
            async with contextlib.aclosing(stream) as events:  # closed at once when done() ends the wait
                async for kind, obj in events:
                    version = obj.get("metadata", {}).get("resourceVersion") or version
                    if kind in ("ADDED", "MODIFIED"):
                        on_object(obj, time.monotonic() - started)
                        if done():
                            return
        except errors.ApiError:  # expired resourceVersion (410), a dropped stream: list again
            version = await relist()


# ---- (e) memory with extra pods -------------------------------------------------------------------
def extra_pod(k: int, template: Obj) -> Obj:
    """A pod like the engine's (same spec and labels), under its own service name, held unscheduled."""
    spec = {**template.get("spec", {}), "schedulingGates": [{"name": "bench.ome.io/hold"}]}
    spec.pop("nodeName", None)
    labels = {**(template.get("metadata") or {}).get("labels", {}),
              naming.ISVC_LABEL: f"extra-{k // 10}"}
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"extra-{k}", "namespace": EXTRA_NS, "labels": labels,
                         "annotations": annotations},
            "spec": spec}


async def create_extra_pods(client: Client, count: int, template: Obj, in_flight: int = 64) -> float:
    """Creates `count` pods (at most `in_flight` at once); returns the seconds it took."""
    gate = asyncio.Semaphore(in_flight)
    started = time.monotonic()

    async def one(k: int) -> None:
        async with gate:
            for _ in range(5):
                try:
                    await client.create(resources.PODS, extra_pod(k, template), EXTRA_NS)
                    return
                except errors.AlreadyExists:
                    return
                except errors.ApiError:
                    await asyncio.sleep(1)

    await asyncio.gather(*(one(k) for k in range(count)))
    return time.monotonic() - started


async def wait_cached(metrics_url: str, resource: str, at_least: int, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if cached(metrics_url, resource) >= at_least:
            return time.monotonic() - started
        await asyncio.sleep(0.5)
    return float("nan")


async def settled_rss(pid: int, seconds: float = 10.0) -> float:
    """VmRSS once it stopped moving (by 1 MiB in 2 s) or after `seconds`."""
    last = rss_mib(pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await asyncio.sleep(2)
        now = rss_mib(pid)
        if abs(now - last) < 1:
            return now
        last = now
    return last


# ---- cold start and standby -----------------------------------------------------------------------
async def cold_start(proc: subprocess.Popen[bytes], started: float, ready_url: str, metrics_url: str,
                     n: int, timeout: float = 300) -> Obj:
    """From `started` (the fresh process's spawn): caches synced (/readyz), the first reconcile of the
    inferenceservice controller, and n reconciles (every service seen once); with the manager's CPU
    seconds at each, which a loaded machine stretches far less than the times.

    /readyz is polled every 0.1 s until it answers; /metrics only after that and every 0.25 s, since each
    scrape costs the manager tens of milliseconds of CPU, which a tighter poll would add to what it measures.
    """
    up = synced = first = every = float("nan")
    cpu: Obj = {}
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"cold-start manager exited ({proc.returncode})")
        elapsed = time.monotonic() - started
        if synced != synced:
            status = _status(ready_url)
            if up != up and status:  # imports done, configuration read, probes serving
                up, cpu["up"] = elapsed, cpu_seconds(proc.pid)
            if status == 200:
                synced, cpu["synced"] = elapsed, cpu_seconds(proc.pid)
            else:
                await asyncio.sleep(0.1)
                continue
        done = reconciles(metrics_url)
        if first != first and done > 0:
            first, cpu["first"] = elapsed, cpu_seconds(proc.pid)
        if done >= n:
            every, cpu["all"] = elapsed, cpu_seconds(proc.pid)
            break
        await asyncio.sleep(0.25)
    return {"up": up, "synced": synced, "first": first, "all": every, "cpu": cpu}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of `pid` and its live descendants (a supervised component runs as a child)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError, ValueError):
            total += cpu_seconds(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return total


def cluster_cpu(cluster: Cluster) -> dict[str, float]:
    """CPU seconds so far of each control-plane process of `cluster`, by component name."""
    return {name: tree_cpu_seconds(pid) for name, pid in cluster.pids().items()}


def cpu_delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {name: after[name] - before.get(name, 0.0) for name in after}


def format_cpu(spent: dict[str, float], seconds: float) -> str:
    """`name 12.3` per component, then the total and its share of the machine over `seconds`."""
    total = sum(spent.values())
    cores = total / seconds if seconds > 0 else math.nan
    return (", ".join(f"{name} {value:.1f}" for name, value in spent.items())
            + f"; total {total:.1f} CPU s over {seconds:.1f} s ({cores:.2f} of {os.cpu_count()} cores)")


_SAMPLE = re.compile(r'^([a-z_]+)\{([^}]*)\} (\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def apiserver_counts(cluster: Cluster) -> collections.Counter[str]:
    """From the apiserver's /metrics: requests by `verb resource[/subresource]`, and the watch events it
    sent (`watch events <kind>`) and their JSON/protobuf bytes (`watch KiB <kind>`), all clients together."""
    return parse_apiserver_metrics(cluster.admin_api(timeout=30).text("/metrics"))


def parse_apiserver_metrics(text: str) -> collections.Counter[str]:
    """See apiserver_counts."""
    counts: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels, value = match.group(1), dict(_LABEL.findall(match.group(2))), float(match.group(3))
        if name == "apiserver_request_total":
            sub = f"/{labels['subresource']}" if labels.get("subresource") else ""
            counts[f"{labels.get('verb', '?')} {labels.get('resource', '?')}{sub}"] += int(value)
        elif name == "apiserver_watch_events_total":
            counts[f"watch events {labels.get('kind') or labels.get('resource', '?')}"] += int(value)
        elif name == "apiserver_watch_events_sizes_sum":
            counts[f"watch KiB {labels.get('kind') or labels.get('resource', '?')}"] += int(value / 1024)
    return counts


def format_counts(counts: collections.Counter[str], top: int = 14) -> str:
    """The largest request counts, then the watch events and bytes by kind, largest first."""
    requests = [(k, v) for k, v in counts.items() if not k.startswith("watch ") and v > 0]
    events = [(k[len("watch events "):], v) for k, v in counts.items() if k.startswith("watch events ") and v]
    sizes = {k[len("watch KiB "):]: v for k, v in counts.items() if k.startswith("watch KiB ")}
    head = ", ".join(f"{k} {v}" for k, v in sorted(requests, key=lambda kv: -kv[1])[:top])
    watched = ", ".join(f"{kind} {v} ({sizes.get(kind, 0) / 1024:.1f} MiB)"
                        for kind, v in sorted(events, key=lambda kv: -kv[1])[:top])
    return f"requests: {head}\n    watch events sent: {watched}"


def _status(url: str) -> int:
    """The HTTP status of a GET (an error status too); 0 while nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def leading(url: str) -> bool:
    """leader_election_master_status of the manager at `url` is 1."""
    return any(line.startswith("leader_election_master_status{") and line.rsplit(" ", 1)[1].startswith("1")
               for line in metrics_text(url).splitlines())


async def handover(leader: subprocess.Popen[bytes], standby_metrics: str,
                   timeout: float = 120) -> tuple[float, float]:
    """SIGKILL the leader (its Lease is not handed back); seconds until the standby holds the Lease and
    until it reconciles."""
    before = reconciles(standby_metrics)
    leader.send_signal(signal.SIGKILL)
    leader.wait()
    killed = time.monotonic()
    acquired = math.nan
    while time.monotonic() - killed < timeout:
        if math.isnan(acquired) and leading(standby_metrics):
            acquired = time.monotonic() - killed
        if reconciles(standby_metrics) > before:
            return acquired, time.monotonic() - killed
        await asyncio.sleep(0.1)
    return acquired, math.nan


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)



T = TypeVar("T")

TRANSIENT = (errors.ServerTimeout, errors.TransportError, errors.TooManyRequests, errors.ServerError)


async def retry_transient(call: Callable[[], Coroutine[Any, Any, T]], what: str, attempts: int = 10) -> T:
    """`call()` again when the loaded apiserver answered with a timeout, a 429 or a 5xx (backing off up
    to 5 s); the bench stops with `what` after `attempts`."""
    for attempt in range(attempts):
        try:
            return await call()
        except TRANSIENT:
            await asyncio.sleep(min(5.0, 0.5 * 2**attempt))
    raise SystemExit(f"could not {what} ({attempts} tries)")


def on_fresh_cluster(state_dir: Path | None, prefix: str, keep: bool,
                     body: Callable[[Cluster], Coroutine[Any, Any, T]]) -> T:
    """Runs `body` against a cluster started from an empty store (a temporary directory unless given),
    torn down afterwards unless `keep`."""
    state = state_dir or Path(tempfile.mkdtemp(prefix=prefix))
    cluster = Cluster(state)
    cluster.down(quiet=True)  # fresh: `up` then starts from an empty store
    try:
        return asyncio.run(body(cluster))
    finally:
        if not keep:
            cluster.down(quiet=True)
            if state_dir is None:
                shutil.rmtree(state, ignore_errors=True)
