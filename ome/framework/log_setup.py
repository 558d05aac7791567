"""structlog setup: JSON lines in production, readable console output on a terminal.

`ome-manager` takes controller-runtime's zap flags (`--zap-encoder`, `--zap-log-level`,
`--zap-stacktrace-level`, `--zap-time-encoding`, `--zap-devel`; reference/operate-ome/
controller-manager-flags.md §Logging): `add_zap_flags` declares them, `zap_options` resolves them (an
explicit flag beats --zap-devel's development defaults), `configure_from_zap_flags` applies them.

Context bound with `structlog.contextvars` (the controller binds `controller`,
`namespace`, `name`, `reconcile_id` per reconcile) is merged into every record, so a
reconciler's own log calls carry them without passing a logger around. Standard
library logging (aiohttp, kubernetes-asyncio) goes through the same renderer.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import structlog
from structlog.typing import Processor

__all__ = ["LogFormat", "ZapOptions", "add_zap_flags", "configure_from_zap_flags", "configure_logging",
           "format_time", "zap_options"]

LogFormat = Literal["json", "console", "auto"]

# zap's level names as controller-runtime's flag takes them, in Python's numbers ("panic" is the top).
ZAP_LEVELS: Final = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                     "error": logging.ERROR, "panic": logging.CRITICAL}
TIME_ENCODINGS: Final = ("epoch", "millis", "nanos", "iso8601", "rfc3339", "rfc3339nano")


@dataclass(frozen=True, slots=True)
class ZapOptions:
    encoder: Literal["json", "console"] = "json"
    level: int = logging.INFO
    stacktrace_level: int = logging.ERROR
    time_encoding: str = "rfc3339"


def _zap_level(value: str) -> str:
    """debug, info, error, panic, or an integer above 0 (a more verbose V-level: debug here)."""
    if value in ("debug", "info", "error", "panic") or (value.isdigit() and int(value) > 0):
        return value
    raise argparse.ArgumentTypeError(f'invalid log level "{value}" (want debug, info, error, panic or an '
                                     "integer above 0)")


def add_zap_flags(p: argparse.ArgumentParser) -> None:
    from ome.cmd.flags import BoolFlag  # noqa: PLC0415 - the framework does not import ome.cmd at load

    p.add_argument("--zap-encoder", choices=("json", "console"), default=None,
                   help="log format: json or console (default json; console with --zap-devel)")
    p.add_argument("--zap-log-level", type=_zap_level, default=None,
                   help="lowest level logged: debug, info, error, panic, or an integer above 0 for more "
                        "verbose levels (default info; debug with --zap-devel)")
    p.add_argument("--zap-stacktrace-level", choices=("info", "error", "panic"), default=None,
                   help="lowest level that logs a stack trace (default error; warn with --zap-devel)")
    p.add_argument("--zap-time-encoding", choices=TIME_ENCODINGS, default="rfc3339",
                   help="timestamp format")
    p.add_argument("--zap-devel", action=BoolFlag,
                   help="development defaults: console format, debug level, stack traces from warn")
    # Earlier names of this project, kept so existing scripts keep working; not in --help.
    p.add_argument("--log-format", dest="zap_encoder", choices=("json", "console"), help=argparse.SUPPRESS)
    p.add_argument("--log-level", dest="zap_log_level", type=_zap_level, help=argparse.SUPPRESS)


def zap_options(args: argparse.Namespace) -> ZapOptions:
    devel = bool(args.zap_devel)
    level = args.zap_log_level or ("debug" if devel else "info")
    return ZapOptions(
        encoder=args.zap_encoder or ("console" if devel else "json"),
        level=logging.DEBUG if level.isdigit() else ZAP_LEVELS[level],
        stacktrace_level=ZAP_LEVELS[args.zap_stacktrace_level or ("warn" if devel else "error")],
        time_encoding=args.zap_time_encoding,
    )


def configure_from_zap_flags(args: argparse.Namespace) -> None:
    options = zap_options(args)
    configure_logging(options.encoder, logging.getLevelName(options.level),
                      time_encoding=options.time_encoding, stacktrace_level=options.stacktrace_level)


def format_time(ns: int, encoding: str) -> str | float | int:
    """A timestamp (nanoseconds since the epoch) as zap's time encoders write it, in UTC."""
    if encoding == "epoch":
        return ns / 1e9
    if encoding == "millis":
        return ns / 1e6
    if encoding == "nanos":
        return ns
    moment = datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.UTC)
    base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = ns % 1_000_000_000
    if encoding == "iso8601":
        return f"{base}.{fraction // 1_000_000:03d}Z"
    if encoding == "rfc3339":
        return f"{base}Z"
    if encoding == "rfc3339nano":
        digits = f"{fraction:09d}".rstrip("0")
        return f"{base}.{digits}Z" if digits else f"{base}Z"
    raise ValueError(f"unknown time encoding {encoding!r}")


def _timestamper(encoding: str, now_ns: Callable[[], int]) -> Processor:
    def stamp(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event["timestamp"] = format_time(now_ns(), encoding)
        return event

    return stamp


def _stacktrace_from(threshold: int) -> Processor:
    names = logging.getLevelNamesMapping()

    def add_stack(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if names.get(str(event.get("level", "")).upper(), 0) >= threshold:
            event.setdefault("stack_info", True)
        return event

    return add_stack


def configure_logging(format: LogFormat = "auto", level: str = "info", *, time_encoding: str | None = None,
                      stacktrace_level: int | None = None, now_ns: Callable[[], int] = time.time_ns) -> None:
    """Configure structlog and stdlib logging once, at process start.

    `format="auto"` picks console when stderr is a terminal, JSON otherwise.
    `level` is a name such as "debug" or "INFO". `time_encoding` is one of zap's (None: ISO 8601 with
    microseconds); records at `stacktrace_level` or above carry a stack trace (None: only when asked).
    """
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    if time_encoding is not None and time_encoding not in TIME_ENCODINGS:
        raise ValueError(f"unknown time encoding {time_encoding!r}")
    use_console = format == "console" or (format == "auto" and sys.stderr.isatty())
    stamper: Processor = (structlog.processors.TimeStamper(fmt="iso", utc=True) if time_encoding is None
                          else _timestamper(time_encoding, now_ns))
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        stamper,
        *([] if stacktrace_level is None else [_stacktrace_from(stacktrace_level)]),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Processor
    if use_console:
        renderer = structlog.dev.ConsoleRenderer()
    else:
        # Tracebacks as JSON, not one long string; without locals, which may hold tokens and secrets.
        transformer = structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
        shared.append(structlog.processors.ExceptionRenderer(transformer))
        renderer = structlog.processors.JSONRenderer()

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,  # stdlib records get the same fields as ours
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
