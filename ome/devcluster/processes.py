"""Starting, probing and stopping component processes, each in its own process group."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from ome.devcluster.components import Component


class ComponentError(RuntimeError):
    """A component failed to start; the message names it and shows the tail of its log."""

    def __init__(self, component: str, reason: str, log: Path) -> None:
        super().__init__(f"{component} {reason}; last lines of {log}:\n{tail(log)}")
        self.component = component


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# Processes this interpreter started: poll() gives an exact answer (and the exit code) for them; /proc
# is the fallback for processes started by an earlier `ome-dev` invocation.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def start(component: Component, log: Path) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(  # noqa: S603 - argv built from our own paths
            component.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # own process group: teardown kills the group, survives our exit
        )
    _CHILDREN[proc.pid] = proc
    return proc.pid


def exit_code(pid: int) -> int | None:
    proc = _CHILDREN.get(pid)
    return None if proc is None else proc.poll()


def is_running(pid: int, binary: str | None = None) -> bool:
    """True while `pid` is alive (and, when given, still runs `binary`: pids get reused)."""
    if (proc := _CHILDREN.get(pid)) is not None:
        return proc.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            _reap(pid)
            return False
        if binary is not None:
            return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() == binary
    except (OSError, IndexError):
        return False
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


_INSECURE = ssl.create_default_context()
_INSECURE.check_hostname = False
_INSECURE.verify_mode = ssl.CERT_NONE  # component health ports serve self-signed certs on loopback


def probe(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=_INSECURE) as resp:  # noqa: S310
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_healthy(component: Component, pid: int, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    binary = component.argv[0]
    while time.monotonic() < deadline:
        if not is_running(pid, binary):
            raise ComponentError(component.name, f"exited during startup (exit code {exit_code(pid)})", log)
        if component.health_url is None or probe(component.health_url):
            return
        time.sleep(0.1)
    raise ComponentError(component.name, f"not healthy after {timeout:.0f}s", log)


def stop(pid: int, binary: str | None, grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after `grace` seconds."""
    if not is_running(pid, binary):
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not is_running(pid):
                return
            time.sleep(0.05)
