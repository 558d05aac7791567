"""Certificate work in a short-lived child process, so the manager never maps an X.509 library.

`cryptography` costs a long-lived process about 6 MiB of RSS (its Rust extension carries its own
OpenSSL) for work done at start and then hourly: making a self-signed pair, checking and renewing the
webhook's serving Secret. Each such step runs in a child interpreter (this module's `main`; by hand:
`python -m ome.framework.crypto_child <task>`): JSON in on stdin, JSON out on stdout, a message on
stderr and exit status 1 when it fails. Only the tasks named in `TASKS` run; each is a function from a
payload dict to a result dict.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

Payload = Mapping[str, Any]
Result = dict[str, Any]

TASKS: Final[Mapping[str, str]] = {
    "self-signed": "ome.framework.certs:self_signed_task",
    "serving-check": "ome.webhooks.cert_material:check_task",
    "serving-generate": "ome.webhooks.cert_material:generate_task",
}
TIMEOUT: Final = 120.0
"""Seconds a task may take (RSA key generation on a loaded 2-core machine stays far below)."""
_SOURCE_ROOT: Final = str(Path(__file__).resolve().parents[2])


class CryptoChildError(RuntimeError):
    """The child failed: its message, or why it could not run."""


def _command(task: str) -> list[str]:
    if task not in TASKS:
        raise CryptoChildError(f"unknown certificate task {task!r}")
    # The child imports ome from where this process did, installed or not; appended, so nothing on that
    # path shadows the standard library.
    bootstrap = (f"import sys; sys.path.append({_SOURCE_ROOT!r}); "
                 f"from {__name__} import main; sys.exit(main())")
    return [sys.executable, "-c", bootstrap, task]


def _result(task: str, code: int | None, out: bytes, err: bytes) -> Result:
    if code != 0:
        message = err.decode(errors="replace").strip() or f"exit status {code}"
        raise CryptoChildError(f"certificate task {task} failed: {message}")
    try:
        result = json.loads(out)
    except ValueError as exc:
        raise CryptoChildError(f"certificate task {task} printed no result: {exc}") from None
    if not isinstance(result, dict):
        raise CryptoChildError(f"certificate task {task} printed {type(result).__name__}, not an object")
    return result


async def run(task: str, payload: Payload, *, timeout: float = TIMEOUT) -> Result:
    """Run `task` in a child process and return its result."""
    proc = await asyncio.create_subprocess_exec(
        *_command(task), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(json.dumps(payload).encode()), timeout)
    except BaseException:  # a timeout or a cancelled caller leaves no child behind
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    return _result(task, proc.returncode, out, err)


def run_sync(task: str, payload: Payload, *, timeout: float = TIMEOUT) -> Result:
    """`run` for the manager's start, before its event loop."""
    done = subprocess.run(_command(task), input=json.dumps(payload).encode(), capture_output=True,
                          timeout=timeout, check=False)
    return _result(task, done.returncode, done.stdout, done.stderr)


def self_signed(
    ca_common_name: str, common_name: str, *, dns_names: Sequence[str] = (), ip_addresses: Sequence[str] = ()
) -> tuple[bytes, bytes, bytes]:
    """(CA, certificate, key) PEM: a new CA and a serving certificate for the names, made in a child."""
    made = run_sync("self-signed", {"ca_common_name": ca_common_name, "common_name": common_name,
                                    "dns_names": list(dns_names), "ip_addresses": list(ip_addresses)})
    return made["ca"].encode(), made["cert"].encode(), made["key"].encode()


def _task(name: str) -> Callable[[Payload], Result]:
    module, _, function = TASKS[name].partition(":")
    found: Callable[[Payload], Result] = getattr(importlib.import_module(module), function)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] not in TASKS:
        print(f"usage: python -m {__name__} {{{','.join(TASKS)}}} < payload.json", file=sys.stderr)
        return 2
    try:
        result = _task(args[0])(json.load(sys.stdin))
    except Exception as exc:  # the parent raises it as CryptoChildError
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
