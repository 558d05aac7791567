"""The control-plane supervisor starts a component again when it exits on its own (kube-scheduler exits on
a corrupted cache), stops with its owner, and backs off while a component keeps crashing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ome.devcluster import cluster, components, supervise


class FakeChild:
    def __init__(self, code: int) -> None:
        self.code = code

    def wait(self) -> int:
        return self.code


def test_a_component_that_exits_is_started_again_until_its_owner_stops_it() -> None:
    codes = iter([1, 1, 0])
    spawned: list[Sequence[str]] = []
    stop = [False]

    def spawn(argv: Sequence[str]) -> FakeChild:
        spawned.append(argv)
        code = next(codes)
        if code == 0:
            stop[0] = True  # the owner's SIGTERM ended this run
        return FakeChild(code)

    slept: list[float] = []
    logs: list[str] = []
    code = supervise.supervise(["/bin/kube-scheduler", "--v=2"], spawn=spawn,  # type: ignore[arg-type]
                               sleep=slept.append, clock=lambda: 0.0, log=logs.append, stopping=lambda: stop[0])
    assert code == 0
    assert spawned == [["/bin/kube-scheduler", "--v=2"]] * 3
    assert slept == [1.0, 2.0]
    assert logs[0] == "supervise: kube-scheduler exited with code 1; starting it again in 1s"


def test_backoff_doubles_to_its_cap_and_resets_after_a_stable_run() -> None:
    b = supervise.Backoff()
    assert [b.next(0.0) for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert b.next(supervise.STABLE_AFTER) == 1.0


def test_the_local_cluster_supervises_scheduler_controller_manager_and_kwok() -> None:
    comp = components.Component("kube-scheduler", ["/b/kube-scheduler", "--x"], "https://127.0.0.1:1/healthz")
    wrapped = cluster.supervised(comp)
    assert wrapped.argv == [sys.executable, "-m", "ome.devcluster.supervise", "--", "/b/kube-scheduler", "--x"]
    assert wrapped.health_url == comp.health_url and wrapped.name == comp.name
    source = Path(cluster.__file__).read_text()
    for name in ("kcm", "scheduler", "kwok"):
        assert f"supervised({name})" in source


def test_a_real_crashing_process_is_restarted_and_a_sigterm_ends_both(tmp_path: Path) -> None:
    # The child exits 1 on its first run and waits on its second; each run prints a line (read blocking,
    # no polling), then a SIGTERM to the supervisor ends the child and the supervisor.
    marker = tmp_path / "runs"
    script = (
        "import pathlib, sys, time\n"
        f"p = pathlib.Path({str(marker)!r})\n"
        "n = int(p.read_text()) if p.exists() else 0\n"
        "p.write_text(str(n + 1))\n"
        "print(f'run {n + 1}', flush=True)\n"
        "sys.exit(1) if n == 0 else time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "ome.devcluster.supervise", "--", sys.executable, "-c", script],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().strip() == "run 1"
        assert proc.stdout.readline().strip() == "run 2"
        assert "exited with code 1; starting it again in 1s" in proc.stderr.readline()
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stdout.read() == ""  # no third run after the SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
