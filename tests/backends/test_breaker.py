"""The per-oracle circuit breaker."""

from __future__ import annotations

import threading

import pytest

from ask_fable.backends.breaker import CircuitBreaker
from ask_fable.config import load_settings
from ask_fable.errors import CircuitOpen
from tests.fakes.clock import ManualClock


def make(**kw: object) -> tuple[CircuitBreaker, ManualClock]:
    clock = ManualClock()
    return CircuitBreaker(clock=clock, **kw), clock  # type: ignore[arg-type]


def fail(breaker: CircuitBreaker, key: str, n: int) -> None:
    for _ in range(n):
        breaker.before_call(key)
        breaker.record(key, False)


def test_stays_closed_below_min_samples() -> None:
    breaker, _ = make()
    fail(breaker, "glm", 4)
    breaker.before_call("glm")
    assert breaker.state("glm") == "closed"


def test_a_window_smaller_than_the_minimum_opens_once_it_is_full() -> None:
    """Before: a window of 3 never held the 5 outcomes the breaker waits for, so it never opened."""
    breaker, _ = make(window=3)
    fail(breaker, "glm", 2)
    assert breaker.state("glm") == "closed"
    fail(breaker, "glm", 1)
    assert breaker.state("glm") == "open"


def test_opens_at_threshold_with_min_samples_and_sheds() -> None:
    breaker, _ = make()
    fail(breaker, "glm", 5)
    assert breaker.state("glm") == "open"
    with pytest.raises(CircuitOpen) as info:
        breaker.before_call("glm")
    assert info.value.kind == "circuit_open" and "glm" in info.value.detail
    assert info.value.to_result()["retry_after_s"] == 300.0
    breaker.before_call("kimi")  # other keys are independent


def test_error_rate_below_threshold_stays_closed() -> None:
    breaker, _ = make(window=10)
    for i in range(20):
        breaker.record("glm", i % 3 != 0)  # one failure in three
    assert breaker.state("glm") == "closed"
    snap = breaker.snapshot()["glm"]
    assert snap["samples"] == 10 and 0 < snap["error_rate"] < 0.5


def test_window_forgets_old_outcomes() -> None:
    breaker, _ = make(window=5, min_samples=5)
    for ok in [False, False, True, True, True, True, True]:
        breaker.record("glm", ok)
    breaker.record("glm", False)
    breaker.record("glm", False)  # window: T T T F F → 0.4
    assert breaker.state("glm") == "closed"


def test_half_open_lets_exactly_one_probe_through() -> None:
    breaker, clock = make(cooldown=60)
    fail(breaker, "glm", 5)
    clock.advance(59)
    with pytest.raises(CircuitOpen):
        breaker.before_call("glm")
    clock.advance(1)
    breaker.before_call("glm")  # the probe
    assert breaker.state("glm") == "half_open"
    with pytest.raises(CircuitOpen):
        breaker.before_call("glm")  # a second caller while the probe runs


def test_probe_success_closes_and_clears_the_window() -> None:
    breaker, clock = make(cooldown=60)
    fail(breaker, "glm", 5)
    clock.advance(60)
    breaker.before_call("glm")
    breaker.record("glm", True)
    assert breaker.state("glm") == "closed"
    assert breaker.snapshot()["glm"]["samples"] == 0
    fail(breaker, "glm", 4)
    assert breaker.state("glm") == "closed"  # needs min_samples again


def test_probe_failure_reopens_for_another_cooldown() -> None:
    breaker, clock = make(cooldown=60)
    fail(breaker, "glm", 5)
    clock.advance(60)
    breaker.before_call("glm")
    breaker.record("glm", False)
    assert breaker.state("glm") == "open"
    assert breaker.snapshot()["glm"]["opened_at"] == clock.mono
    clock.advance(30)
    with pytest.raises(CircuitOpen):
        breaker.before_call("glm")
    clock.advance(30)
    breaker.before_call("glm")


def test_a_lost_probe_frees_its_slot_after_a_cooldown() -> None:
    breaker, clock = make(cooldown=60)
    fail(breaker, "glm", 5)
    clock.advance(60)
    breaker.before_call("glm")  # probe never reports back (cancelled)
    with pytest.raises(CircuitOpen):
        breaker.before_call("glm")  # one probe at a time
    clock.advance(60)
    breaker.before_call("glm")


def test_late_success_while_open_does_not_close() -> None:
    breaker, _ = make()
    fail(breaker, "glm", 5)
    breaker.record("glm", True)
    assert breaker.state("glm") == "open"


def test_disabled_breaker_never_sheds() -> None:
    breaker, _ = make(enabled=False)
    fail(breaker, "glm", 50)
    breaker.before_call("glm")
    assert breaker.snapshot() == {}


def test_snapshot_shape() -> None:
    breaker, _ = make()
    breaker.record("glm", True)
    breaker.record("glm", False, "upstream_error: GLM HTTP 500")
    assert breaker.snapshot() == {
        "glm": {"state": "closed", "samples": 2, "error_rate": 0.5, "opened_at": None,
                "last_error": "upstream_error: GLM HTTP 500"}
    }


def test_from_settings() -> None:
    settings = load_settings(
        breaker_window=7, breaker_threshold=0.8, breaker_cooldown=12, circuit_breaker=False
    )
    breaker = CircuitBreaker.from_settings(settings)
    assert (breaker.window, breaker.threshold, breaker.cooldown, breaker.enabled) == (7, 0.8, 12, False)


def test_concurrent_callers_get_one_probe() -> None:
    breaker, clock = make(cooldown=1)
    fail(breaker, "glm", 5)
    clock.advance(1)
    passed: list[int] = []
    barrier = threading.Barrier(8)

    def call(i: int) -> None:
        barrier.wait()
        try:
            breaker.before_call("glm")
            passed.append(i)
        except CircuitOpen:
            pass

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(passed) == 1


def test_released_probe_lets_the_next_caller_probe_at_once() -> None:
    """A half-open probe that ended without an outcome (refused, not configured, cancelled) frees its slot."""
    breaker, clock = make()
    fail(breaker, "glm", 5)
    clock.advance(300)
    assert breaker.before_call("glm") is True  # the probe
    with pytest.raises(CircuitOpen):
        breaker.before_call("glm")  # one probe at a time
    breaker.release("glm")
    assert breaker.state("glm") == "half_open"
    assert breaker.before_call("glm") is True  # a new probe, no second cooldown
    breaker.record("glm", True)
    assert breaker.state("glm") == "closed"
    assert breaker.before_call("glm") is False
    breaker.release("glm")  # nothing to free while closed
    assert breaker.state("glm") == "closed"
