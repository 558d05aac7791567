"""Keeps one control-plane component running, as kubelet keeps a static pod running.

kube-scheduler exits on purpose when its cache turns out corrupted (a pod seen again on another node
after a missed delete, e.g. across an etcd compaction) and relies on its supervisor to start it again;
without one the local cluster silently stops scheduling. kube-controller-manager and kwok may exit the
same way. Usage: `python -m ome.devcluster.supervise -- BINARY ARGS...`.

The child stays in this process's group, so the cluster's teardown (SIGTERM, then SIGKILL, to the group)
ends both; a SIGTERM or SIGINT to this process is passed on and ends the loop.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType

MAX_BACKOFF = 10.0
STABLE_AFTER = 30.0
"""A child that ran this long before exiting is restarted at once again (backoff reset)."""


@dataclass
class Backoff:
    """Restart delays: 1 s doubling to MAX_BACKOFF while the child keeps exiting soon after start."""

    delay: float = 1.0
    history: list[float] = field(default_factory=list)

    def next(self, ran_for: float) -> float:
        if ran_for >= STABLE_AFTER:
            self.delay = 1.0
        wait = self.delay
        self.delay = min(self.delay * 2, MAX_BACKOFF)
        self.history.append(wait)
        return wait


def supervise(
    argv: Sequence[str],
    *,
    spawn: Callable[[Sequence[str]], subprocess.Popen[bytes]] = lambda a: subprocess.Popen(list(a)),  # noqa: S603
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
    stopping: Callable[[], bool] = lambda: False,
) -> int:
    """Runs `argv` until it exits while `stopping()` is true; returns that exit code."""
    backoff = Backoff()
    name = argv[0].rsplit("/", 1)[-1]
    while True:
        started = clock()
        child = spawn(argv)
        _current[0] = child
        code = child.wait()
        if stopping():
            return code
        wait = backoff.next(clock() - started)
        log(f"supervise: {name} exited with code {code}; starting it again in {wait:.0f}s")
        sleep(wait)
        if stopping():
            return code


_current: list[subprocess.Popen[bytes] | None] = [None]
_stop = [False]


def _forward(signum: int, _frame: FrameType | None) -> None:
    _stop[0] = True
    child = _current[0]
    if child is not None and child.poll() is None:
        child.send_signal(signum)


def main(args: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if args is None else args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m ome.devcluster.supervise -- BINARY [ARGS...]", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _forward)
    signal.signal(signal.SIGINT, _forward)
    return supervise(argv, stopping=lambda: _stop[0])


if __name__ == "__main__":
    sys.exit(main())
