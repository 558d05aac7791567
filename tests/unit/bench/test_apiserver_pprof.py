"""bench/apiserver_pprof.py: the apiserver's CPU profile over a phase of unknown length is taken in
chunks, the one in flight at the phase's end left out, and merged into seconds per request path."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from types import ModuleType

from ome.devcluster import components
from ome.devcluster.pki import Pki

H = "k8s.io/apiserver/pkg/endpoints/handlers."
TOP = f"""File: kube-apiserver
Type: cpu
Duration: 80.01s, Total samples = 1.36mins (102.04%)
Showing nodes accounting for 49.97s, 61.20% of 81.65s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%     28.19s 34.53%  k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1
     0.01s 0.012% 0.012%     12.05s 14.76%  {H}(*patcher).patchResource.func2
         0     0%     0%      1.17s  1.43%  {H}PatchResource.func1
     0.02s 0.024% 0.036%      5.53s  6.77%  {H}CreateResource.createHandler.func1.2
         0     0%     0%      2.36s  2.89%  {H}CreateResource.createHandler.func1
         0     0%     0%      8.46s 10.36%  k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager).Update
         0     0%     0%     830ms  1.02%  k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager).Apply
     3.05s  3.74%  3.78%      3.05s  3.74%  runtime.spanClass.sizeclass (inline)
"""


def test_chunks_are_kept_while_the_phase_runs_and_the_one_in_flight_is_dropped(
    pprof: ModuleType, tmp_path: Path,
) -> None:
    asked: asyncio.Queue[int] = asyncio.Queue()
    answer: asyncio.Queue[bytes] = asyncio.Queue()

    async def fetch(seconds: int) -> bytes:
        asked.put_nowait(seconds)
        return await answer.get()

    async def scenario() -> object:
        async with pprof.record(fetch, tmp_path / "out", "floor", chunk=7) as kept:
            assert await asked.get() == 7
            answer.put_nowait(b"one")
            assert await asked.get() == 7  # the next chunk is asked for once the first is written
            answer.put_nowait(b"two")
            assert await asked.get() == 7  # the third is in flight when the phase ends
            answer.put_nowait(b"three")  # answered only once the phase has ended: waited for, not kept
        return kept

    kept = asyncio.run(scenario())
    assert asked.empty()
    assert [p.name for p in kept.files] == ["floor-000.pprof", "floor-001.pprof"]  # type: ignore[attr-defined]
    assert [p.read_bytes() for p in kept.files] == [b"one", b"two"]  # type: ignore[attr-defined]
    assert kept.seconds == 14  # type: ignore[attr-defined]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["floor-000.pprof", "floor-001.pprof"]


def test_a_failing_fetch_ends_the_recording_and_is_reported_not_raised(
    pprof: ModuleType, tmp_path: Path,
) -> None:
    answers: list[bytes | Exception] = [b"one", RuntimeError("HTTP 404: 404 page not found")]
    failed = asyncio.Event()

    async def fetch(seconds: int) -> bytes:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            failed.set()
            raise answer
        return answer

    async def scenario() -> object:
        async with pprof.record(fetch, tmp_path, "manager", chunk=10) as kept:
            await failed.wait()
        return kept

    kept = asyncio.run(scenario())
    assert kept.error == "HTTP 404: 404 page not found"  # type: ignore[attr-defined]
    assert kept.seconds == 10  # type: ignore[attr-defined]
    line = pprof.format_summary(kept, 12.0, 1.0, {"create": 0.5})
    assert line.endswith("(stopped early: HTTP 404: 404 page not found)")
    nothing = pprof.Recording(error="HTTP 404: 404 page not found")
    assert pprof.format_summary(nothing, 12.0, 0.0, {}) == (
        "apiserver CPU profile unavailable: HTTP 404: 404 page not found")


def test_top_output_is_read_as_cumulative_seconds_per_function(pprof: ModuleType) -> None:
    total, cum = pprof.parse_top(TOP)
    assert round(total, 2) == 81.6
    assert cum[f"{H}(*patcher).patchResource.func2"] == 12.05
    assert round(cum["k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager).Apply"], 6) == 0.83
    assert cum["runtime.spanClass.sizeclass (inline)"] == 3.05


def test_a_verb_adds_its_handler_and_its_finisher_goroutines(pprof: ModuleType) -> None:
    parts = pprof.categorize(pprof.parse_top(TOP)[1])
    assert round(parts["patch/apply"], 2) == 13.22
    assert round(parts["create"], 2) == 7.89
    assert round(parts["managed fields"], 2) == 9.29
    assert parts["update"] == 0.0  # absent from this profile
    assert list(parts) == [label for label, _ in pprof.CATEGORIES]


def test_summarize_merges_the_chunks_with_go_tool_pprof(pprof: ModuleType, tmp_path: Path) -> None:
    argv_file = tmp_path / "argv"
    top = tmp_path / "top.txt"
    top.write_text(TOP)
    go = tmp_path / "go"
    go.write_text(f"#!/bin/sh\necho \"$@\" > {argv_file}\ncat {top}\n")
    go.chmod(go.stat().st_mode | stat.S_IEXEC)
    chunks = [tmp_path / "manager-000.pprof", tmp_path / "manager-001.pprof"]
    total, parts = pprof.summarize(chunks, go=str(go))
    assert argv_file.read_text().split() == ["tool", "pprof", "-top", "-cum", "-nodecount=100000",
                                             *map(str, chunks)]
    assert round(total, 2) == 81.6 and round(parts["create"], 2) == 7.89
    kept = pprof.Recording(files=chunks, chunk=10)
    line = pprof.format_summary(kept, 23.4, total, parts)
    assert line.startswith("apiserver CPU profile, 20 s sampled (phase 23 s): 81.6 CPU s; create 7.9, update 0.0,")


def test_only_the_scale_profile_serves_the_apiservers_pprof() -> None:
    ports = components.Ports(2379, 2380, 6443, 10257, 10259, 10247)
    pki = Pki(Path("/s/pki"))
    default = components.kube_apiserver(Path("/b"), Path("/s"), pki, ports).argv
    scale = components.kube_apiserver(Path("/b"), Path("/s"), pki, ports, profile="scale").argv
    assert "--profiling=false" in default and "--profiling=true" not in default
    assert "--profiling=true" in scale and "--profiling=false" not in scale
