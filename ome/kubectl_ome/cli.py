"""`kubectl-ome`: the OME kubectl plugin (`kubectl ome ...` runs it).

One parser per command group (the `cmd_*` modules register theirs); the global connection flags can
come before or after the command. Output goes to stdout, previews and prompts to stderr, errors as one
`error: <message>` line. Exit codes: 0 success, 1 general error, 2 assertion unmet, 3 mutation conflict.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any, Final

import structlog

from ome.framework import errors, log_setup
from ome.kubectl_ome import (
    cmd_accelerator,
    cmd_admin,
    cmd_cluster,
    cmd_get,
    cmd_instance,
    cmd_migration,
    cmd_misc,
    cmd_placement,
    cmd_quota,
    cmd_rollout,
    cmd_runtime,
    cmd_scale,
    cmd_status,
    cmd_traffic,
    cmd_wait,
)
from ome.kubectl_ome.connection import Options, connect, context_namespace, kubeconfig_path, resolve_namespace
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import GENERAL, UNMET, CliError, Unmet
from ome.kubectl_ome.guarded import REQUEST_TIMEOUT, Terminal
from ome.kubectl_ome.output import colourize, now_utc, use_colour
from ome.kubectl_ome.parsing import Parser, UsageError, connection_parent

__all__ = ["build_parser", "context_namespace", "kubeconfig_path", "main", "resolve_namespace"]

TIMEOUT: Final = 30.0
"""Seconds for a whole read command (`wait`, `logs --follow` and the actions set their own)."""
_OWN_DEADLINE: Final = frozenset({"wait", "logs"})
_ACTIONS: Final = frozenset(
    {
        ("rollout", "pause"),
        ("rollout", "resume"),
        ("rollout", "promote"),
        ("rollout", "rollback"),
        ("rollout", "repin"),
        ("instance", "release-held"),
        ("migration", "start"),
        ("scale", None),
        ("runtime", "sync"),
        ("traffic", "drain"),
        ("traffic", "undrain"),
    }
)


CACHE_DIR_HELP: Final = (
    "Accepted for kubectl compatibility and unused: kubectl-ome keeps no discovery or HTTP cache, "
    "every command reads the API server live"
)
COMPRESSION_HELP: Final = "Ask the API server for uncompressed responses (Accept-Encoding: identity)"


def _document_flags(parser: argparse.ArgumentParser) -> None:
    """What --cache-dir and --disable-compression do here, in their --help (the flags are kubectl's)."""
    for flag, text in (("--cache-dir", CACHE_DIR_HELP), ("--disable-compression", COMPRESSION_HELP)):
        action = parser._option_string_actions.get(flag)
        if action is not None:
            action.help = text


def disable_compression(client: Any) -> None:
    """kubectl's --disable-compression (client-go's DisableCompression): every request says
    `Accept-Encoding: identity`, so aiohttp does not ask for gzip."""
    transport = client._transport
    headers = transport._headers

    async def identity(accept: str, content_type: str | None) -> dict[str, str]:
        out: dict[str, str] = await headers(accept, content_type)
        out["Accept-Encoding"] = "identity"
        return out

    transport._headers = identity


def build_parser() -> Parser:
    flags = connection_parent()
    _document_flags(flags)
    parser = Parser(
        prog="kubectl-ome",
        description="kubectl-ome: why an InferenceService is or isn't ready, and guarded actions on it",
        parents=[flags],
        epilog="Example:\n  kubectl ome status chat -n prod",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for module in (
        cmd_status,
        cmd_instance,
        cmd_rollout,
        cmd_runtime,
        cmd_scale,
        cmd_migration,
        cmd_wait,
        cmd_get,
        cmd_misc,
        cmd_cluster,
        cmd_quota,
        cmd_traffic,
        cmd_placement,
        cmd_accelerator,
        cmd_admin,
    ):
        module.register(commands, [flags])
    return parser


def _key(args: argparse.Namespace) -> tuple[str, str | None]:
    return args.command, getattr(args, "subcommand", None)


async def run(args: argparse.Namespace, stdin: IO[str], stderr: IO[str], stdout: IO[str]) -> str:
    opts = Options.from_args(args)
    action = _key(args) in _ACTIONS
    try:
        conn = await connect(opts, per_request_timeout=REQUEST_TIMEOUT if action else None)
    except CliError:
        if args.command != "version":
            raise
        # `version` still prints both values: the Operator is unknown with the reason.
        return cmd_misc.version_text(stdout, cmd_misc.client_version(),
                                     "unknown (resolve kubernetes-client: Unavailable)")
    if getattr(args, "disable_compression", False):
        disable_compression(conn.client)
    ctx = Ctx(conn, Terminal(stdin, stderr, now_utc), stdout)
    try:
        if args.command in _OWN_DEADLINE or action:
            return str(await args.handler(ctx, args))
        try:
            return str(await asyncio.wait_for(args.handler(ctx, args), TIMEOUT))
        except TimeoutError:
            if args.command == "status":
                raise CliError("status read was cancelled or timed out") from None
            raise
    finally:
        await conn.client.close()


def describe(exc: BaseException) -> str:
    """One line for any failure; never a traceback."""
    if isinstance(exc, CliError):
        return str(exc)
    if isinstance(exc, errors.Forbidden | errors.Unauthorized):
        return f"{exc.reason.lower() or 'forbidden'}: {exc.message}"
    if isinstance(exc, errors.TransportError):
        return f"cannot reach the API server: {exc.message or exc}"
    if isinstance(exc, errors.ApiError):
        return f"API request failed: {exc}"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return f"read was cancelled or timed out (limit {TIMEOUT:.0f}s)"
    return f"{type(exc).__name__}: {exc}"


def _write(stream: IO[str], text: str, *, colour: bool) -> bool:
    try:
        stream.write(colourize(text) if text and colour and use_colour(stream) else text)
        stream.flush()
    except BrokenPipeError:
        return False
    return True


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """The framework's info logs (request retries, ...) stay off the CLI's stdout and stderr: only errors
    from its loggers show, and whatever logging setup was in place comes back afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, structlog.is_configured(), structlog.get_config())
    if not saved[2]:
        log_setup.configure_logging(format="console", level="error")
    root.setLevel(max(root.level, logging.ERROR))
    framework = logging.getLogger("ome")
    level = framework.level
    framework.setLevel(logging.ERROR)
    try:
        yield
    finally:
        framework.setLevel(level)
        root.setLevel(saved[1])
        if not saved[2]:
            root.handlers[:] = saved[0]
            structlog.reset_defaults()


TRAFFIC_FLAGS: Final = "invalid traffic action flags; use --help"


def usage_message(argv: Sequence[str], exc: UsageError) -> str:
    """argparse's message, except for `traffic drain|undrain`, whose flag errors have one fixed text."""
    words = [a for a in argv if not a.startswith("-")]
    if words[:1] == ["traffic"] and any(w in ("drain", "undrain") for w in words[1:3]):
        return TRAFFIC_FLAGS
    return str(exc)


def main(argv: Sequence[str] | None = None) -> int:
    with quiet_logs():
        return _main(argv)


def _main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"error: {usage_message(argv if argv is not None else sys.argv[1:], exc)}", file=sys.stderr)
        return GENERAL
    except SystemExit as exc:  # --help printed its text
        return 0 if exc.code in (0, None) else GENERAL
    try:
        out = asyncio.run(run(args, sys.stdin, sys.stderr, sys.stdout))
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return GENERAL
    except Unmet as exc:
        _write(sys.stdout, exc.output, colour=getattr(args, "output", "table") in ("table", "wide"))
        if exc.message:
            print(f"error: {exc.message}", file=sys.stderr)
        return UNMET
    except CliError as exc:
        print(f"error: {describe(exc)}", file=sys.stderr)
        return exc.code
    except Exception as exc:
        print(f"error: {describe(exc)}", file=sys.stderr)
        return GENERAL
    tabular = getattr(args, "output", "table") in ("table", "wide")
    return 0 if _write(sys.stdout, out, colour=tabular) else GENERAL


if __name__ == "__main__":
    sys.exit(main())
