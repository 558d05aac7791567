from __future__ import annotations

from ome.framework.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations

from .fakeclock import FakeClock


def test_unknown_key_is_satisfied() -> None:
    assert ControllerExpectations().satisfied("ns/a")


def test_creations_must_all_be_observed() -> None:
    exp = ControllerExpectations(clock=FakeClock())
    exp.expect_creations("ns/a", 2)
    assert not exp.satisfied("ns/a")
    exp.creation_observed("ns/a")
    assert not exp.satisfied("ns/a")
    assert exp.pending("ns/a") == (1, 0)
    exp.creation_observed("ns/a")
    assert exp.satisfied("ns/a")


def test_deletions_must_all_be_observed_and_extra_observations_are_harmless() -> None:
    exp = ControllerExpectations(clock=FakeClock())
    exp.expect_deletions("ns/a", 1)
    exp.creation_observed("ns/a")  # an unrelated create does not satisfy a delete
    assert not exp.satisfied("ns/a")
    exp.deletion_observed("ns/a")
    exp.deletion_observed("ns/a")
    assert exp.satisfied("ns/a")


def test_expectations_expire_after_five_minutes() -> None:
    clock = FakeClock()
    exp = ControllerExpectations(clock=clock)
    exp.expect_creations("ns/a", 3)
    clock.step(EXPECTATIONS_TIMEOUT)
    assert not exp.satisfied("ns/a"), "exactly at the TTL: still waiting"
    clock.step(0.001)
    assert exp.satisfied("ns/a")


def test_setting_again_resets_counts_and_timestamp() -> None:
    clock = FakeClock()
    exp = ControllerExpectations(clock=clock)
    exp.expect_creations("ns/a", 1)
    clock.step(EXPECTATIONS_TIMEOUT - 1)
    exp.expect_creations("ns/a", 2)
    clock.step(2)
    assert not exp.satisfied("ns/a")
    assert exp.pending("ns/a") == (2, 0)


def test_raise_adds_without_resetting_the_timestamp() -> None:
    clock = FakeClock()
    exp = ControllerExpectations(clock=clock)
    exp.expect_creations("ns/a", 1)
    clock.step(EXPECTATIONS_TIMEOUT - 1)
    exp.raise_expectations("ns/a", adds=2)
    assert exp.pending("ns/a") == (3, 0)
    clock.step(2)
    assert exp.satisfied("ns/a")


def test_delete_forgets_the_key_and_keys_are_independent() -> None:
    exp = ControllerExpectations(clock=FakeClock())
    exp.expect_creations("ns/a", 1)
    exp.expect_creations("ns/b", 1)
    exp.delete("ns/a")
    assert exp.satisfied("ns/a")
    assert not exp.satisfied("ns/b")
    exp.creation_observed("ns/a")  # observing a forgotten key must not create a record
    assert exp.pending("ns/a") == (0, 0)
