"""bench/bench_soak.py stays importable (with bench_scale and scale_phases, which it imports) and its
figures are right: the metrics it reads, the growth verdict, the slope, and the manager's gc hook."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def hooked(soak: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The dump path of a gc hook installed for the subprocesses a test starts (env restored after)."""
    dump = tmp_path / "gc.json"
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.delenv(soak.GC_DUMP_ENV, raising=False)  # restored (removed) after the test
    soak.install_gc_hook(tmp_path / "hook", dump)
    return dump


METRICS = """\
# HELP ome_informer_cached_objects Objects held by informer stores.
# TYPE ome_informer_cached_objects gauge
ome_informer_cached_objects{resource="pods"} 120.0
ome_informer_cached_objects{resource="deployments.apps"} 100.0
workqueue_depth{name="inferenceservice"} 7.0
workqueue_depth{name="autoscaler"} 3.0
controller_runtime_reconcile_total{controller="inferenceservice",result="success"} 40.0
controller_runtime_reconcile_total{controller="inferenceservice",result="error"} 2.0
controller_runtime_reconcile_total{controller="autoscaler",result="success"} 8.0
workqueue_adds_total{name="inferenceservice"} 999.0
"""


def test_parse_metrics(soak: ModuleType) -> None:
    cached, depth, reconciles = soak.parse_metrics(METRICS)
    assert cached == {"pods": 120, "deployments.apps": 100}
    assert depth == 10
    assert reconciles == 50


def test_vm_rss(soak: ModuleType) -> None:
    assert soak.vm_rss_kib("Name:\tpython\nVmHWM:\t  9000 kB\nVmRSS:\t  8192 kB\n") == 8192
    with pytest.raises(ValueError):
        soak.vm_rss_kib("Name:\tpython\n")
    assert soak.vm_rss_kib(Path("/proc/self/status").read_text()) > 0


def test_slope(soak: ModuleType) -> None:
    assert soak.slope([0, 1, 2, 3], [10, 12, 14, 16]) == pytest.approx(2.0)
    assert soak.slope([0, 1, 2], [5, 5, 5]) == pytest.approx(0.0)
    assert soak.slope([1.0], [3.0]) != soak.slope([1.0], [3.0])  # nan: one point has no slope


def _samples(soak: ModuleType, rss: list[int], every: float = 30.0) -> list:
    return [soak.Sample(t=i * every, rss_kib=r, cpu_s=float(i), cached={"pods": 1}, depth=0, reconciles=i)
            for i, r in enumerate(rss)]


def test_growth_is_measured_from_the_end_of_the_warm_up(soak: ModuleType) -> None:
    # The first minute doubles (caches filling); after it, 100000 -> 104000 KiB is 4%: met.
    samples = _samples(soak, [50000, 80000, 100000, 101000, 102000, 103000, 104000])
    s = soak.summarize(samples, warmup_s=60)
    assert s["first"].rss_kib == 100000 and s["last"].rss_kib == 104000
    assert s["growth"] == pytest.approx(0.04)
    assert s["met"] is True
    assert s["slope_kib_min"] == pytest.approx(2000.0)  # 1000 KiB per 30 s sample
    assert s["peak_kib"] == 104000


def test_the_working_set_is_in_place_once_the_cached_count_stops_moving(soak: ModuleType) -> None:
    # Revisions fill their history limit until the sixth sample; RSS follows them, then stays flat.
    counts = [1789, 1941, 2096, 2314, 2476, 2500, 2512, 2511, 2513]
    rss = [87900, 88900, 90300, 92100, 92500, 93400, 93600, 93700, 93700]
    samples = [soak.Sample(t=i * 60.0, rss_kib=r, cpu_s=0.0, cached={"controllerrevisions.apps": c}, depth=0,
                           reconciles=0) for i, (c, r) in enumerate(zip(counts, rss, strict=True))]
    assert soak.summarize(samples, 0)["met"] is False  # +6.6% from the first sample
    start = soak.working_set_start(samples, 0)
    assert start is not None and start.t == 5 * 60.0  # 2500 is within 1% of 2513; 2476 is not
    settled = soak.summarize(samples, start.t)
    assert settled["growth"] == pytest.approx(93700 / 93400 - 1) and settled["met"] is True
    assert soak.working_set_start(samples, 8 * 60.0) is None  # the last sample alone settles nothing
    moving = [dataclasses.replace(x, cached={"pods": i}) for i, x in enumerate(samples)]
    assert soak.working_set_start(moving, 0) is None  # a count that never settles


def test_growth_of_five_percent_is_not_met(soak: ModuleType) -> None:
    s = soak.summarize(_samples(soak, [100000, 100000, 102000, 105000]), warmup_s=0)
    assert s["growth"] == pytest.approx(0.05)
    assert s["met"] is False


def test_gc_growth_orders_by_increase(soak: ModuleType) -> None:
    before = {"types": {"builtins.dict": 100, "builtins.list": 50, "x.Gone": 5}}
    after = {"types": {"builtins.dict": 130, "builtins.list": 40, "x.New": 60}}
    assert soak.gc_growth(before, after) == [("x.New", 0, 60), ("builtins.dict", 100, 130)]


@pytest.mark.parametrize("ask", ["gc_dump", "alloc_probe"])
def test_the_hook_is_never_signalled_in_a_process_without_it(soak: ModuleType, tmp_path: Path, ask: str) -> None:
    """Without the hook's mark SIGUSR1 or SIGUSR2 would end the manager: no signal, no figures."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert asyncio.run(getattr(soak, ask)(sleeper.pid, tmp_path / "gc.json", timeout=1)) == {}
        assert sleeper.poll() is None, "the process was signalled"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_sample_rows(soak: ModuleType) -> None:
    rows = soak.sample_rows(_samples(soak, [1024, 2048, 3072]), warmup_s=30)
    assert len(rows) == 2 + 3
    assert "(warm-up)" in rows[2]
    assert rows[3].split()[:3] == ["0.5", "2.0", "+0"]
    assert rows[4].split()[:3] == ["1.0", "3.0", "+1024"]


def test_gc_hook_dumps_live_objects_on_sigusr1(soak: ModuleType, hooked: Path) -> None:
    """The hook the manager loads: a process that gets SIGUSR1 writes its gc-tracked objects by type."""
    dump = hooked
    assert os.environ[soak.GC_DUMP_ENV] == str(dump)
    code = ("import os, signal\n"
            "class Leaky: pass\n"
            "kept = [Leaky() for _ in range(321)]\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n")
    done = subprocess.run([sys.executable, "-c", code + "print(os.getpid())\n"], check=True,
                          env=dict(os.environ), timeout=60, capture_output=True, text=True)
    assert Path(f"{dump}.{done.stdout.strip()}.hooked").exists(), "the hook marks the process it loaded in"
    body = json.loads(dump.read_text())
    assert body["types"]["__main__.Leaky"] == 321
    assert body["objects"] >= 321 and body["blocks"] > 0


def test_gc_hook_with_tracemalloc_names_the_lines_that_grew(hooked: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """OME_SOAK_TRACEMALLOC: the second dump lists the source lines whose allocations grew since the first."""
    dump = hooked
    monkeypatch.setenv("OME_SOAK_TRACEMALLOC", "1")
    code = ("import os, signal\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n"
            "kept = [bytearray(1000) for _ in range(2000)]  # the growth\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ), timeout=60)
    lines = json.loads(dump.read_text())["lines"]
    assert "<string>:3" in lines[0] and "KiB" in lines[0]


def test_gc_hook_reports_where_the_bytes_sit(soak: ModuleType, hooked: Path, tmp_path: Path) -> None:
    """The dump splits memory by allocator: pymalloc's blocks (small objects) and glibc's heap (large ones)."""
    dump = hooked
    code = ("import os, signal, json\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n"
            f"first = json.load(open({str(dump)!r}))\n"
            "small = [object() for _ in range(200_000)]  # pymalloc: ~3 MiB of 16-byte blocks\n"
            "large = [bytearray(4000) for _ in range(2000)]  # glibc's heap: ~8 MiB\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n"
            f"json.dump(first, open({str(tmp_path / 'first.json')!r}, 'w'))\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ), timeout=60)
    before = json.loads((tmp_path / "first.json").read_text())["allocators"]
    after = json.loads(dump.read_text())["allocators"]
    assert after["pymalloc_used_kib"] - before["pymalloc_used_kib"] >= 2 * 1024
    assert after["arenas"] > before["arenas"]
    if "heap_in_use_kib" in after:  # glibc only
        assert after["heap_in_use_kib"] - before["heap_in_use_kib"] >= 7 * 1024
    text = soak.allocator_growth(before, after)
    assert "pymalloc blocks in use" in text and "pymalloc arenas" in text


def test_allocator_growth_names_only_the_figures_both_dumps_have(soak: ModuleType) -> None:
    before = {"heap_in_use_kib": 1024, "arenas": 10}
    after = {"heap_in_use_kib": 3072, "heap_free_kib": 512, "arenas": 12}
    assert soak.allocator_growth(before, after) == "glibc heap in use 1.0 -> 3.0 MiB, pymalloc arenas 10 -> 12"


def test_alloc_probe_answers_sigusr2_without_a_collection(soak: ModuleType, hooked: Path) -> None:
    """Each sample asks the hook for the allocator figures alone (SIGUSR2); the rows then show them."""
    dump = hooked
    code = "import sys, time\nprint('up', flush=True)\nsys.stdin.readline()\n"
    proc = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
        body = asyncio.run(soak.alloc_probe(proc.pid, dump, timeout=30))
    finally:
        proc.communicate("\n", timeout=30)
    assert body["rss_kib"] > 0 and body["allocators"]["arenas"] > 0
    assert not dump.exists(), "no gc dump for a sample"
    samples = _samples(soak, [1024, 2048])
    samples[1].allocators = body["allocators"]
    rows = soak.sample_rows(samples, warmup_s=0)
    assert "arenas" in rows[0] and rows[3].split()[-1] == str(body["allocators"]["arenas"])
    assert rows[2].split()[-1] == "-"


def test_gc_hook_with_garbage_counts_the_cycles_freed_since_the_last_dump(
        hooked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OME_SOAK_GARBAGE: the dump names the cyclic garbage made since the previous one, by type."""
    dump = hooked
    monkeypatch.setenv("OME_SOAK_GARBAGE", "1")
    code = ("import gc, os, signal\n"
            "class Cyclic: pass\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n"
            "for _ in range(500):\n"
            "    c = Cyclic(); c.me = c\n"
            "del c\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n"
            "assert not gc.garbage, 'the dump frees what it counted'\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ), timeout=60)
    assert json.loads(dump.read_text())["garbage"]["__main__.Cyclic"] == 500


def test_gc_hook_takes_a_census_when_asked(soak: ModuleType, hooked: Path) -> None:
    """With `<dump>.census` present the dump also says what holds the memory (bench/heap_census.py):
    here an informer-like store of 300 objects under `ome.`; without the file there is no census."""
    dump = hooked
    code = ("import os, signal\n"
            "from ome.framework.store import Store\n"
            "from ome.api import resources\n"
            "class Informer:\n"
            "    def __init__(self):\n"
            "        self.store, self.resource, self.label_selector = Store(), resources.PODS, 'app=x'\n"
            "Informer.__module__ = 'ome.fake'\n"
            "informer = Informer()\n"
            "for i in range(300):\n"
            "    informer.store.upsert({'kind': 'Pod', 'metadata': {'name': f'p{i}', 'namespace': 'n'}})\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.environ["PYTHONPATH"], str(ROOT)]))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
    assert "census" not in json.loads(dump.read_text())
    Path(f"{dump}.census").touch()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
    stores = json.loads(dump.read_text())["census"]["stores"]
    assert [s["objects"] for s in stores if s["store"] == "pods app=x"] == [300]
