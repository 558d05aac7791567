"""structlog setup: JSON lines in production, readable console output on a terminal.

Context bound with `structlog.contextvars` (the controller binds `controller`,
`namespace`, `name`, `reconcile_id` per reconcile) is merged into every record, so a
reconciler's own log calls carry them without passing a logger around. Standard
library logging (aiohttp, kubernetes-asyncio) goes through the same renderer.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog
from structlog.typing import Processor

__all__ = ["LogFormat", "configure_logging"]

LogFormat = Literal["json", "console", "auto"]


def configure_logging(format: LogFormat = "auto", level: str = "info") -> None:
    """Configure structlog and stdlib logging once, at process start.

    `format="auto"` picks console when stderr is a terminal, JSON otherwise.
    `level` is a name such as "debug" or "INFO".
    """
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    use_console = format == "console" or (format == "auto" and sys.stderr.isatty())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
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
