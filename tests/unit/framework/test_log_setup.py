from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from ome.framework.log_setup import configure_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_carry_bound_context_and_respect_the_level(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "info")
    log = structlog.get_logger("test")
    with structlog.contextvars.bound_contextvars(controller="isvc", reconcile_id="abc"):
        log.info("Reconciled", replicas=2)
        log.debug("hidden")
    logging.getLogger("aiohttp").warning("from stdlib")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert len(lines) == 2
    first, second = lines
    assert first["event"] == "Reconciled" and first["replicas"] == 2
    assert (first["controller"], first["reconcile_id"], first["level"]) == ("isvc", "abc", "info")
    assert first["timestamp"].endswith("Z")
    assert (second["event"], second["logger"], second["level"]) == ("from stdlib", "aiohttp", "warning")


def test_json_exceptions_are_structured(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "info")
    try:
        raise ValueError("bad spec")
    except ValueError:
        structlog.get_logger("test").exception("Reconciler error")
    [line] = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert record["exception"][0]["exc_type"] == "ValueError"
    assert "locals" not in record["exception"][0]["frames"][0]


def test_console_format_is_not_json(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("console", "debug")
    structlog.get_logger("test").debug("visible", key="value")
    err = capsys.readouterr().err
    assert "visible" in err and "key" in err
    with pytest.raises(json.JSONDecodeError):
        json.loads(err.splitlines()[0])


def test_unknown_level_is_rejected() -> None:
    with pytest.raises(ValueError):
        configure_logging("json", "loud")
