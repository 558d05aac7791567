"""A failed pass's frames are cleared once its error is handled, so what they held goes with the last
reference, not at the cyclic collector's next full collection."""

from __future__ import annotations

import gc
import sys
import traceback
import weakref
from collections.abc import Iterator

import pytest

from ome.framework.failed_frames import clear_failed_frames


class Payload:
    """Stands for what a reconcile's frames hold: cached objects, rendered children."""


@pytest.fixture
def no_collector() -> Iterator[None]:
    """Only reference counting frees objects here: a cycle stays until someone breaks it."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def fail_holding(refs: list[weakref.ref[Payload]]) -> None:
    payload = Payload()
    refs.append(weakref.ref(payload))
    results: list[BaseException] = [RuntimeError("conflict")]  # as gather(..., return_exceptions=True)
    raise results[0]  # this frame now refers to the error whose traceback refers to this frame


def test_a_frame_that_holds_its_own_error_is_a_cycle(no_collector: None) -> None:
    """The premise: without clearing, the payload outlives every reference to the error."""
    refs: list[weakref.ref[Payload]] = []
    try:
        fail_holding(refs)
    except RuntimeError:
        pass
    assert refs[0]() is not None
    gc.collect()
    assert refs[0]() is None


def test_clearing_breaks_the_cycle(no_collector: None) -> None:
    refs: list[weakref.ref[Payload]] = []
    try:
        fail_holding(refs)
    except RuntimeError as exc:
        clear_failed_frames(exc)
    assert refs[0]() is None


def test_causes_and_contexts_are_cleared_too(no_collector: None) -> None:
    refs: list[weakref.ref[Payload]] = []

    def wrap_cause() -> None:
        try:
            fail_holding(refs)
        except RuntimeError as exc:
            raise ValueError("wrapped") from exc

    def wrap_context() -> None:
        try:
            wrap_cause()
        except ValueError:
            raise KeyError("during handling")  # noqa: B904 (the implicit context is the point)

    try:
        wrap_context()
    except KeyError as exc:
        assert isinstance(exc.__context__, ValueError) and exc.__context__.__cause__ is not None
        clear_failed_frames(exc)
    assert refs[0]() is None


def test_the_handlers_running_frame_is_skipped_and_the_error_still_formats() -> None:
    """The traceback starts at the handler's own frame, which is running: `frame.clear()` raises there,
    and clearing must go on past it rather than fail the handler."""
    try:
        fail_holding([])
    except RuntimeError as exc:
        assert exc.__traceback__ is not None and exc.__traceback__.tb_frame is sys._getframe()
        clear_failed_frames(exc)
        text = "".join(traceback.format_exception(exc))
    assert "fail_holding" in text and "raise results[0]" in text
