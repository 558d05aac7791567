"""Soak: the manager under steady churn for --minutes, its RSS sampled to show it does not leak.

On a fresh local cluster in the `scale` profile (bench_scale's helpers): `ome-manager` as a process under its
own user, N InferenceServices applied and Ready, then spec changes (an engine annotation: the pods roll) at
a fixed rate for --minutes. Every --interval seconds: the manager's VmRSS (/proc/<pid>/status), its CPU
share over the interval, the objects its informers hold (`ome_informer_cached_objects`), its work queues'
depth and its reconciles. Printed: the samples, the growth from the first sample after --warmup-minutes to
the last, a least-squares slope (KiB/min) over those samples, and whether the growth is under 5% (issue 20).

The Python heap: the manager runs with a `sitecustomize` hook (a directory on its PYTHONPATH, nothing in the
manager's code) that, on SIGUSR1, collects garbage and writes the count of live gc-tracked objects by type;
the bench asks at the end of the warm-up and at the end, and prints the types that grew most. With
OME_SOAK_TRACEMALLOC=1 in the environment the hook also starts tracemalloc in the manager (slower, more
memory) and the bench prints the source lines whose allocations grew most between the two dumps. With
OME_SOAK_GARBAGE=1 the collector keeps what it frees (DEBUG_SAVEALL: a diagnostic run, memory grows) and the
end dump counts the cyclic garbage made since the warm-up by type: what a periodic full collection frees. With
OME_SOAK_TRIM_PROBE=1 the last dump also asks glibc to return its free heap pages (malloc_trim) and
reports the RSS after: memory the C heap holds free is fragmentation, not live objects. With --census both
dumps also take a census of what holds the memory (heap_census.py: each informer store's objects and
indexes, the manager's largest containers, large buffers by referrer), printed at the end.

    python bench/bench_soak.py --n 100 --minutes 20 [--mode OMENative] [--churn-rate 5]
    python bench/bench_soak.py --n 10 --minutes 1        # a quick smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale as bs  # noqa: E402
import heap_census  # noqa: E402
import scale_phases as phases  # noqa: E402

from ome.devcluster.cluster import Cluster  # noqa: E402
from ome.framework.client import Client  # noqa: E402

Obj = dict[str, Any]
NAMESPACE = "bench-soak"
GROWTH_TARGET = 0.05
"""Issue 20: RSS growth under 5% over the soak."""
GC_DUMP_ENV = "OME_SOAK_GC_DUMP"
BENCH = Path(__file__).resolve().parent
TRIM_PROBE_ENV = "OME_SOAK_TRIM_PROBE"

# Loaded by the manager's interpreter at start (site imports `sitecustomize` from its path). On SIGUSR1:
# a full collection, then live gc-tracked objects counted by type, written atomically as JSON. The signal
# only sets a flag in C; the handler runs between bytecodes of the event loop's thread, so it never races
# the manager's own code.
_SITECUSTOMIZE = f'''\
import os as _os
import signal as _signal

_PATH = _os.environ.get({GC_DUMP_ENV!r})


def _ome_soak_gc_dump(signum, frame):
    import gc, sys
    gc.collect()
    garbage = None
    if gc.get_debug() & gc.DEBUG_SAVEALL:  # OME_SOAK_GARBAGE: what the collector freed since the last dump
        garbage = _type_counts(gc.garbage)
        gc.set_debug(0)  # so that the cleared cycles are freed now, not saved again
        gc.garbage.clear()
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
    objects = gc.get_objects()
    counts = _type_counts(objects)
    total = len(objects)
    census = None
    if _os.path.exists(_PATH + ".census"):  # what holds the memory (bench/heap_census.py)
        if {str(BENCH)!r} not in sys.path:
            sys.path.insert(0, {str(BENCH)!r})
        import heap_census
        census = heap_census.census(objects)
    del objects
    body = {{"objects": total, "blocks": sys.getallocatedblocks(), "types": dict(counts), "rss_kib": _rss(),
            "allocators": _allocators()}}
    if garbage is not None:
        body["garbage"] = dict(garbage.most_common(30))
    if census is not None:
        body["census"] = census
    if _os.path.exists(_PATH + ".trim"):  # what the C heap holds free: RSS after returning it
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        body["rss_trimmed_kib"] = _rss()
    import tracemalloc
    if tracemalloc.is_tracing():
        global _LAST
        body["traced_kib"] = tracemalloc.get_traced_memory()[0] // 1024
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        if _LAST is not None:
            body["lines"] = [f"{{d.size_diff / 1024:+9.0f}} KiB {{d.count_diff:+8d}}  {{d.traceback[0]}}"
                             for d in snap.compare_to(_LAST, "lineno")[:25]]
        _LAST = snap
    _write_json(_PATH, body)


def _type_counts(objects):
    import collections
    return collections.Counter(f"{{type(o).__module__}}.{{type(o).__qualname__}}" for o in objects)


def _write_json(path, body):  # atomically: the bench polls for the file
    import json
    with open(path + ".tmp", "w") as out:
        json.dump(body, out)
    _os.replace(path + ".tmp", path)


def _load_mallinfo2():
    # glibc's heap figures; loaded once, since a ctypes Structure class made per call is itself garbage.
    import ctypes
    class _Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                    "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    try:
        fn = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):  # not glibc, or glibc before 2.33
        return None
    fn.restype = _Info
    return fn


def _allocators():
    # Where the bytes sit: glibc's heap (mallinfo2: in use, free inside the heap, mmapped chunks) and
    # pymalloc's arenas (sys._debugmallocstats, which writes to fd 2 only, so it is caught there).
    import re, sys, tempfile
    out = {{}}
    if _MALLINFO2 is not None:
        info = _MALLINFO2()
        out.update(heap_in_use_kib=info.uordblks // 1024, heap_free_kib=info.fordblks // 1024,
                   mmapped_kib=info.hblkhd // 1024)
    saved = _os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        _os.dup2(tmp.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            _os.dup2(saved, 2)
            _os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    for key, pattern in (("arenas", r"# arenas allocated current\\s*=\\s*([\\d,]+)"),
                         ("pymalloc_used_kib", r"# bytes in allocated blocks\\s*=\\s*([\\d,]+)"),
                         ("pymalloc_free_kib", r"# bytes in available blocks\\s*=\\s*([\\d,]+)")):
        if m := re.search(pattern, text):
            value = int(m.group(1).replace(",", ""))
            out[key] = value if key == "arenas" else value // 1024
    return out


def _rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


_LAST = None
if _os.environ.get("OME_SOAK_GARBAGE"):
    import gc as _gc
    _gc.set_debug(_gc.DEBUG_SAVEALL)
if _os.environ.get("OME_SOAK_TRACEMALLOC"):
    import tracemalloc as _tracemalloc
    _tracemalloc.start()

def _ome_soak_alloc_probe(signum, frame):
    _write_json(_PATH + ".alloc", {{"rss_kib": _rss(), "allocators": _allocators()}})


if _PATH:
    _MALLINFO2 = _load_mallinfo2()
    _signal.signal(_signal.SIGUSR1, _ome_soak_gc_dump)
    _signal.signal(_signal.SIGUSR2, _ome_soak_alloc_probe)
    with open(f"{{_PATH}}.{{_os.getpid()}}.hooked", "w"):  # SIGUSR1's default would end the process
        pass
'''


@dataclasses.dataclass
class Sample:
    t: float
    """seconds since the churn started"""
    rss_kib: int
    cpu_s: float
    """the manager's CPU seconds so far (user + system)"""
    cached: dict[str, int]
    depth: int
    """work queue depth, all controllers"""
    reconciles: int
    """reconciles so far, all controllers"""
    allocators: Obj = dataclasses.field(default_factory=dict)
    """the hook's allocator figures at this sample (SIGUSR2), {} without the hook"""


# ---- pure: figures from samples ------------------------------------------------------------------------
_CACHED = re.compile(r'^ome_informer_cached_objects\{resource="([^"]+)"\} (\S+)$')
_DEPTH = re.compile(r"^workqueue_depth\{[^}]*\} (\S+)$")
_RECONCILES = re.compile(r"^controller_runtime_reconcile_total\{[^}]*\} (\S+)$")


def parse_metrics(text: str) -> tuple[dict[str, int], int, int]:
    """(objects cached by resource, work queue depth summed, reconciles summed) from /metrics."""
    cached: dict[str, int] = {}
    depth = reconciles = 0.0
    for line in text.splitlines():
        if m := _CACHED.match(line):
            cached[m.group(1)] = int(float(m.group(2)))
        elif m := _DEPTH.match(line):
            depth += float(m.group(1))
        elif m := _RECONCILES.match(line):
            reconciles += float(m.group(1))
    return cached, int(depth), int(reconciles)


def vm_rss_kib(status_text: str) -> int:
    """VmRSS in KiB from the text of /proc/<pid>/status."""
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ValueError("no VmRSS line")


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (nan with fewer than two distinct xs)."""
    if len(xs) < 2:
        return math.nan
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return math.nan
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


WORKING_SET_TOLERANCE = 0.01
"""The cache's working set is in place once its object count stays within this share of the last one."""


def working_set_start(samples: list[Sample], warmup_s: float) -> Sample | None:
    """The first sample at or after the warm-up from which every later sample caches within
    WORKING_SET_TOLERANCE of the last sample's objects: until then the cache still fills (an
    OMENative replica's ControllerRevisions fill their history limit over the first minutes), which is
    growth with a bound, not a leak. None: the count never settled."""
    steady = [s for s in samples if s.t >= warmup_s]
    if not steady:
        return None
    final = sum(steady[-1].cached.values())
    start: Sample | None = None
    for sample in steady:
        if abs(sum(sample.cached.values()) - final) <= WORKING_SET_TOLERANCE * final:
            start = start or sample
        else:
            start = None
    return start if start is not steady[-1] else None


def summarize(samples: list[Sample], warmup_s: float) -> Obj:
    """Growth from the first sample at or after the warm-up to the last, and the slope over them."""
    steady = [s for s in samples if s.t >= warmup_s] or samples[-1:]
    first, last = steady[0], steady[-1]
    growth = (last.rss_kib - first.rss_kib) / first.rss_kib
    per_min = slope([s.t / 60 for s in steady], [float(s.rss_kib) for s in steady])
    return {"first": first, "last": last, "growth": growth, "slope_kib_min": per_min,
            "samples": len(steady), "met": growth < GROWTH_TARGET,
            "peak_kib": max(s.rss_kib for s in samples)}


def gc_growth(before: Obj, after: Obj, limit: int = 15) -> list[tuple[str, int, int]]:
    """The types whose live count grew most: (type, count before, count after)."""
    b, a = before.get("types", {}), after.get("types", {})
    grown = sorted(((k, b.get(k, 0), v) for k, v in a.items() if v > b.get(k, 0)),
                   key=lambda row: row[1] - row[2])
    return grown[:limit]


def sample_rows(samples: list[Sample], warmup_s: float) -> list[str]:
    base = next((s for s in samples if s.t >= warmup_s), samples[0])
    alloc = any(s.allocators for s in samples)
    head = (f"{'t min':>7}{'RSS MiB':>10}{'vs warm KiB':>13}{'CPU %':>8}{'cached':>9}{'queue':>7}"
            f"{'reconciles':>12}" + (f"{'heap used/free':>16}{'pymalloc used/free':>20}{'arenas':>8}"
                                     if alloc else ""))
    rows = [head, "-" * len(head)]
    prev: Sample | None = None
    for s in samples:
        if prev is not None and s.t > prev.t:
            cpu = f"{100 * (s.cpu_s - prev.cpu_s) / (s.t - prev.t):.1f}"
            done = str(s.reconciles - prev.reconciles)
        else:
            cpu, done = "-", "-"
        delta = f"{s.rss_kib - base.rss_kib:+d}" if s.t >= warmup_s else "(warm-up)"
        rows.append(f"{s.t / 60:>7.1f}{s.rss_kib / 1024:>10.1f}{delta:>13}{cpu:>8}"
                    f"{sum(s.cached.values()):>9}{s.depth:>7}{done:>12}"
                    + (_allocator_columns(s) if alloc else ""))
        prev = s
    return rows


def _allocator_columns(s: Sample) -> str:
    a = s.allocators

    def pair(used: str, free: str) -> str:
        return f"{a[used] / 1024:.1f}/{a[free] / 1024:.1f}" if used in a and free in a else "-"

    heap, small = pair("heap_in_use_kib", "heap_free_kib"), pair("pymalloc_used_kib", "pymalloc_free_kib")
    return f"{heap:>16}{small:>20}{a.get('arenas', '-'):>8}"


# ---- against the manager process -----------------------------------------------------------------------
async def take_sample(pid: int, metrics_url: str, t: float, dump: Path | None = None) -> Sample:
    text = await asyncio.to_thread(phases.metrics_text, metrics_url)
    cached, depth, reconciles = parse_metrics(text)
    rss = vm_rss_kib(Path(f"/proc/{pid}/status").read_text())
    allocators = (await alloc_probe(pid, dump)).get("allocators", {}) if dump else {}
    return Sample(t, rss, bs.cpu_seconds(pid), cached, depth, reconciles, allocators)


async def alloc_probe(pid: int, dump: Path, timeout: float = 10) -> Obj:
    """The hook's allocator figures (SIGUSR2: no collection, no object walk, a few milliseconds), {}
    without the hook or an answer."""
    return await _ask_hook(pid, dump, signal.SIGUSR2, Path(f"{dump}.alloc"), timeout, poll=0.05)


async def _ask_hook(pid: int, dump: Path, sig: signal.Signals, answer: Path, timeout: float, *,
                    poll: float) -> Obj:
    """Signal the manager and read the file its hook writes; {} if the hook is not loaded (the signal's
    default action would end the manager) or it did not answer within `timeout`."""
    if not Path(f"{dump}.{pid}.hooked").exists():
        return {}
    answer.unlink(missing_ok=True)
    os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if answer.exists():
            return dict(json.loads(answer.read_text()))
        await asyncio.sleep(poll)
    return {}


async def gc_dump(pid: int, path: Path, timeout: float = 120, *, trim: bool = False,
                  census: bool = False) -> Obj:
    """The manager's live objects by type (the sitecustomize hook, SIGUSR1), {} without the hook or an
    answer. `trim`: the hook then also reports the RSS after malloc_trim; `census`: what holds the memory
    (heap_census.py)."""
    for flag, wanted in (("trim", trim), ("census", census)):
        Path(f"{path}.{flag}").unlink(missing_ok=True)
        if wanted:
            Path(f"{path}.{flag}").touch()
    return await _ask_hook(pid, path, signal.SIGUSR1, path, timeout, poll=0.5)


async def sample_loop(proc: Any, metrics_url: str, minutes: float, interval: float, warmup_s: float,
                      dump: Path, *, census: bool = False) -> tuple[list[Sample], Obj, Obj]:
    samples: list[Sample] = []
    warm: Obj = {}
    started = time.monotonic()
    k = 0
    while True:
        at = started + k * interval
        if (delay := at - time.monotonic()) > 0:
            await asyncio.sleep(delay)
        if proc.poll() is not None:
            raise SystemExit(f"manager exited ({proc.returncode}) during the soak")
        s = await take_sample(proc.pid, metrics_url, time.monotonic() - started, dump)
        samples.append(s)
        phases.log(f"soak {s.t / 60:5.1f} min: RSS {s.rss_kib / 1024:.1f} MiB, cached "
                   f"{sum(s.cached.values())}, queue {s.depth}")
        if not warm and s.t >= warmup_s:
            warm = await gc_dump(proc.pid, dump, census=census)
        if s.t >= minutes * 60 - 1:
            break
        k += 1
    return samples, warm, await gc_dump(proc.pid, dump, trim=bool(os.environ.get(TRIM_PROBE_ENV)),
                                        census=census)


def install_gc_hook(directory: Path, dump: Path) -> None:
    """The manager started after this (bench_scale.manager_process copies os.environ) loads the hook."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(directory), os.environ.get("PYTHONPATH")) if p)
    os.environ[GC_DUMP_ENV] = str(dump)


async def run(args: argparse.Namespace, cluster: Cluster) -> Obj:
    gpu_nodes = max(4, math.ceil(args.n / 300))
    info = cluster.up(profile="scale", gpu_nodes=gpu_nodes, log=phases.log)
    manager_kc = cluster.user_kubeconfig(bs.MANAGER_USER, cluster.state_dir / "manager.kubeconfig")
    dump = cluster.state_dir / "soak-gc.json"
    install_gc_hook(cluster.state_dir / "soak-hook", dump)
    out: Obj = {"load": os.getloadavg()}
    warmup_s = 60 * min(args.warmup_minutes, args.minutes / 2)
    async with await Client.from_kubeconfig(str(info.kubeconfig)) as admin:
        await bs.setup(admin, gpu_nodes)
        await bs._namespace(admin, NAMESPACE)
        phases.log(f"soak: {args.n} {args.mode} InferenceServices")
        with bs.manager_process(manager_kc, cluster.logs / "ome-manager.log", args.manager_arg) as mgr:
            out["rollout"] = await bs.managed(admin, cluster, mgr.proc, args.n, args.mode, NAMESPACE)
            phases.log(f"soak: {args.churn_rate:g} changes/s for {args.minutes:g} min")
            churn = asyncio.create_task(phases.churn(admin, NAMESPACE, args.n, args.churn_rate,
                                                     args.minutes * 60))
            try:
                samples, warm, end = await sample_loop(mgr.proc, mgr.metrics_url, args.minutes, args.interval,
                                                       warmup_s, dump, census=args.census)
            except BaseException:
                churn.cancel()
                raise
            phases.log("soak: waiting for the last changes to settle (at most 60 s)")
            out["churn"] = await churn
    out.update(samples=samples, warm_gc=warm, end_gc=end, warmup_s=warmup_s)
    return out


def print_report(args: argparse.Namespace, out: Obj) -> None:
    samples: list[Sample] = out["samples"]
    warmup_s: float = out["warmup_s"]
    load = "/".join(f"{x:.1f}" for x in out["load"])
    rollout = out["rollout"]
    print(f"\nbench_soak: N={args.n} {args.mode}, {args.churn_rate:g} changes/s for {args.minutes:g} min, "
          f"cluster profile scale, {os.cpu_count()} cores (load average at start {load}), manager flags: "
          f"{' '.join(args.manager_arg) or 'defaults'}")
    print(f"rollout: all {args.n} Ready in {rollout['times'][-1]:.1f} s, peak RSS {rollout['rss']:.0f} MiB")
    print("\n".join(sample_rows(samples, warmup_s)))
    s = summarize(samples, warmup_s)
    first, last = s["first"], s["last"]
    verdict = "met" if s["met"] else "NOT met"
    print(f"RSS from {first.t / 60:.1f} min (after the warm-up) to {last.t / 60:.1f} min: "
          f"{first.rss_kib / 1024:.1f} -> {last.rss_kib / 1024:.1f} MiB, growth {100 * s['growth']:+.2f}%, "
          f"slope {s['slope_kib_min']:+.1f} KiB/min over {s['samples']} samples "
          f"(peak {s['peak_kib'] / 1024:.1f} MiB); target growth < {100 * GROWTH_TARGET:.0f}%: {verdict}")
    settled = working_set_start(samples, warmup_s)
    if settled is not None and settled is not first:
        w = summarize(samples, settled.t)
        print(f"RSS with the cache's working set in place (objects within "
              f"{100 * WORKING_SET_TOLERANCE:.0f}% of the end's from {settled.t / 60:.1f} min): "
              f"{w['first'].rss_kib / 1024:.1f} -> {w['last'].rss_kib / 1024:.1f} MiB, growth "
              f"{100 * w['growth']:+.2f}%, slope {w['slope_kib_min']:+.1f} KiB/min; target growth < "
              f"{100 * GROWTH_TARGET:.0f}%: {'met' if w['met'] else 'NOT met'}")
    resources = sorted(set(first.cached) | set(last.cached))
    print("cached objects, warm-up -> end: " + ", ".join(
        f"{r} {first.cached.get(r, 0)} -> {last.cached.get(r, 0)}" for r in resources))
    c = out["churn"]
    print(f"churn: {c['changes']} of {c['asked']} changes accepted ({c['rate']:.2f}/s); change -> "
          f"observedGeneration p50 {phases.pct(c['gen'], .5):.2f} s p99 {phases.pct(c['gen'], .99):.2f} s, "
          f"-> Ready p50 {phases.pct(c['ready'], .5):.2f} s p99 {phases.pct(c['ready'], .99):.2f} s "
          f"(not seen within 60 s of the end: {c['missing_gen']} / {c['missing_ready']}); manager CPU "
          f"{last.cpu_s - samples[0].cpu_s:.1f} s, {last.reconciles - samples[0].reconciles} reconciles")
    warm, end = out["warm_gc"], out["end_gc"]
    if not warm or not end:
        print("python heap: the manager did not answer SIGUSR1 (no gc counts)")
        return
    print(f"python heap, warm-up -> end: gc-tracked objects {warm['objects']} -> {end['objects']} "
          f"({end['objects'] - warm['objects']:+d}), allocated blocks {warm['blocks']} -> {end['blocks']} "
          f"({end['blocks'] - warm['blocks']:+d}); types that grew most:")
    for name, before, after in gc_growth(warm, end):
        print(f"  {after - before:>+8d}  {before:>8} -> {after:<8} {name}")
    print(f"RSS at the dumps, warm-up -> end: {_dump_memory(warm)} -> {_dump_memory(end)}")
    if end.get("garbage"):
        print("cyclic garbage the collector freed, warm-up -> end (OME_SOAK_GARBAGE), by type:")
        print("\n".join(f"  {count:>8}  {name}" for name, count in end["garbage"].items()))
    if warm.get("allocators") and end.get("allocators"):
        print("allocators, warm-up -> end: " + allocator_growth(warm["allocators"], end["allocators"]))
    if end.get("lines"):
        print("allocations that grew most, warm-up -> end (tracemalloc, by source line):")
        print("\n".join(f"  {line}" for line in end["lines"]))
    for label, dump in (("warm-up", warm), ("end", end)):
        if dump.get("census"):
            print(f"what holds the memory at the {label} (--census):")
            print(heap_census.format_census(dump["census"]))


ALLOCATOR_FIGURES = (
    ("heap_in_use_kib", "glibc heap in use"), ("heap_free_kib", "glibc heap free"),
    ("mmapped_kib", "glibc mmapped"), ("pymalloc_used_kib", "pymalloc blocks in use"),
    ("pymalloc_free_kib", "pymalloc blocks free"),
)


def allocator_growth(before: Obj, after: Obj) -> str:
    """Each allocator figure the hook reported, before -> after (MiB; arenas as a count)."""
    parts = [f"{label} {before[key] / 1024:.1f} -> {after[key] / 1024:.1f} MiB"
             for key, label in ALLOCATOR_FIGURES if key in before and key in after]
    if "arenas" in before and "arenas" in after:
        parts.append(f"pymalloc arenas {before['arenas']} -> {after['arenas']}")
    return ", ".join(parts)


def _dump_memory(dump: Obj) -> str:
    """RSS at a heap dump, with the traced Python heap (tracemalloc) and the RSS once the C heap
    returned its free pages (OME_SOAK_TRIM_PROBE) when the run took them."""
    text = f"{dump.get('rss_kib', 0) / 1024:.1f} MiB"
    if "rss_trimmed_kib" in dump:
        text += f" ({dump['rss_trimmed_kib'] / 1024:.1f} after malloc_trim)"
    if "traced_kib" in dump:
        text += f" (traced heap {dump['traced_kib'] / 1024:.1f})"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100, help="InferenceServices")
    parser.add_argument("--mode", choices=("RawDeployment", "OMENative"), default="RawDeployment")
    parser.add_argument("--minutes", type=float, default=20.0, help="how long the churn runs")
    parser.add_argument("--churn-rate", type=float, default=5.0, help="spec changes per second")
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--warmup-minutes", type=float, default=2.0,
                        help="growth is measured from the first sample after this (at most half the soak)")
    parser.add_argument("--state-dir", type=Path, help="the cluster's directory (default: temporary)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    parser.add_argument("--manager-arg", action="append", default=[], help="extra ome-manager flag (repeat)")
    parser.add_argument("--census", action="store_true",
                        help="take a census of what holds the manager's memory at both heap dumps")
    args = parser.parse_args()
    results = phases.on_fresh_cluster(args.state_dir, "ome-bench-soak-", args.keep,
                                      lambda cluster: run(args, cluster))
    print_report(args, results)


if __name__ == "__main__":
    main()
