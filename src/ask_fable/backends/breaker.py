"""Per-oracle circuit breaker: stop calling a chronically failing backend for a cooldown.

States per key (an oracle token)::

    closed ──(error rate ≥ threshold over ≥ min_samples of the last `window` outcomes)──▶ open
    open ──(cooldown elapsed; the next before_call is the single probe)──▶ half_open
    half_open ──probe ok──▶ closed (window cleared)      half_open ──probe failed──▶ open

Callers record only real call outcomes: a success, or a failure whose error class has
``AskFableError.counts_as_failure`` set (timeouts, upstream errors). A ``refused`` answer (the model
worked) and config states (``not_configured``, ``binary_missing``, ``bad_args``,
``context_too_large``, ``circuit_open`` itself) say nothing about the backend's health and are never
recorded. A recorded failure carries a short description, and a shed call's :class:`CircuitOpen`
names the last one, with ``retry_after_s`` until the next probe. In memory and per process;
thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.errors import CircuitOpen

if TYPE_CHECKING:
    from ask_fable.config import Settings

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


@dataclass
class _Circuit:
    outcomes: deque[bool]  # True = failure
    state: str = CLOSED
    opened_at: float | None = None
    probe_started: float | None = None
    #: ``kind: detail`` of the last recorded failure (already redacted by the caller).
    last_error: str | None = None


class CircuitSnapshot(TypedDict):
    """One key's circuit as :meth:`CircuitBreaker.snapshot` reports it."""

    state: str
    samples: int
    error_rate: float
    #: When it opened, on the clock's monotonic time.
    opened_at: float | None
    last_error: str | None


class CircuitBreaker:
    """Tracks the last ``window`` outcomes per key and sheds calls while a key is open."""

    def __init__(
        self,
        window: int = 20,
        threshold: float = 0.5,
        cooldown: float = 300,
        enabled: bool = True,
        min_samples: int = 5,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.window = max(1, int(window))
        self.threshold = float(threshold)
        self.cooldown = float(cooldown)
        self.enabled = enabled
        # A window smaller than the minimum would never hold enough outcomes to open: it opens once full.
        self.min_samples = max(1, min(int(min_samples), self.window))
        self._clock = clock
        self._lock = threading.Lock()
        self._circuits: dict[str, _Circuit] = {}

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock = SYSTEM_CLOCK) -> CircuitBreaker:
        """A breaker configured by ``ASK_FABLE_CIRCUIT_BREAKER`` / ``_BREAKER_*``, on ``clock``."""
        return cls(
            window=settings.breaker_window,
            threshold=settings.breaker_threshold,
            cooldown=settings.breaker_cooldown,
            enabled=settings.circuit_breaker,
            clock=clock,
        )

    def _circuit(self, key: str) -> _Circuit:
        circuit = self._circuits.get(key)
        if circuit is None:
            circuit = self._circuits[key] = _Circuit(outcomes=deque(maxlen=self.window))
        return circuit

    def before_call(self, key: str) -> bool:
        """Raise :class:`CircuitOpen` if ``key`` is shedding; otherwise let the call through.

        After the cooldown exactly one caller at a time is let through as the half-open probe;
        ``True`` tells that caller it is the probe. A probe whose outcome is not recorded (refused,
        not configured, cancelled) must :meth:`release` its slot; one that never reports back at all
        frees it after another cooldown.
        """
        if not self.enabled:
            return False
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None or circuit.state == CLOSED:
                return False
            now = self._clock.monotonic()
            if circuit.state == OPEN:
                assert circuit.opened_at is not None
                if now - circuit.opened_at >= self.cooldown:
                    circuit.state = HALF_OPEN
                    circuit.probe_started = now
                    return True
                retry = self.cooldown - (now - circuit.opened_at)
            else:  # half-open: one probe in flight
                started = circuit.probe_started
                if started is None or now - started >= self.cooldown:
                    circuit.probe_started = now
                    return True
                retry = self.cooldown - (now - started)
            samples = len(circuit.outcomes)
            failed = sum(circuit.outcomes)
            last = circuit.last_error
        retry = max(0.0, retry)
        why = f"; last error: {last}" if last else ""
        raise CircuitOpen(
            f"circuit open for {key}: open after {failed} failures in the last {samples} calls{why}; "
            f"next probe in {retry:.0f}s",
            retry_after_s=round(retry, 1),
        )

    def record(self, key: str, ok: bool, error: str | None = None) -> None:
        """Record one real call outcome for ``key`` (see the module docstring for what not to record).

        ``error`` describes a failure (``kind: detail``, redacted, short); the next shed call quotes it.
        """
        if not self.enabled:
            return
        with self._lock:
            circuit = self._circuit(key)
            if not ok and error:
                circuit.last_error = _shorten(error)
            if circuit.state == HALF_OPEN:
                if ok:
                    circuit.state = CLOSED
                    circuit.outcomes.clear()
                    circuit.opened_at = None
                    circuit.last_error = None
                else:
                    circuit.state = OPEN
                    circuit.opened_at = self._clock.monotonic()
                    circuit.outcomes.append(True)
                circuit.probe_started = None
                return
            circuit.outcomes.append(not ok)
            if circuit.state == OPEN:
                return  # a late result of a call started before opening: no state change
            samples = len(circuit.outcomes)
            if samples >= self.min_samples and sum(circuit.outcomes) / samples >= self.threshold:
                circuit.state = OPEN
                circuit.opened_at = self._clock.monotonic()

    def release(self, key: str) -> None:
        """Free ``key``'s half-open probe slot without an outcome: the probe ended in a way that says
        nothing about the backend's health, so the next caller may probe at once."""
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is not None and circuit.state == HALF_OPEN:
                circuit.probe_started = None

    def state(self, key: str) -> str:
        """``closed``, ``open`` or ``half_open`` for ``key``."""
        with self._lock:
            circuit = self._circuits.get(key)
            return CLOSED if circuit is None else circuit.state

    def snapshot(self) -> dict[str, CircuitSnapshot]:
        """Per key: ``state``, ``samples``, ``error_rate``, ``opened_at`` (the clock's monotonic time) and
        ``last_error``."""
        with self._lock:
            out: dict[str, CircuitSnapshot] = {}
            for key, circuit in self._circuits.items():
                samples = len(circuit.outcomes)
                out[key] = {
                    "state": circuit.state,
                    "samples": samples,
                    "error_rate": round(sum(circuit.outcomes) / samples, 4) if samples else 0.0,
                    "opened_at": circuit.opened_at,
                    "last_error": circuit.last_error,
                }
            return out


#: Longest failure description an open breaker quotes.
LAST_ERROR_CHARS = 160


def _shorten(text: str) -> str:
    """One line of at most :data:`LAST_ERROR_CHARS` characters."""
    line = " ".join(text.split())
    return line if len(line) <= LAST_ERROR_CHARS else line[: LAST_ERROR_CHARS - 1] + "…"
