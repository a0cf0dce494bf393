"""How ModeContext settles the circuit breaker: the error class decides, in one place."""

from __future__ import annotations

import pytest

from ask_fable import errors
from ask_fable.backends.breaker import CircuitBreaker
from ask_fable.config import load_settings
from ask_fable.core.modes.base import ModeContext
from ask_fable.core.tracing import Console, TraceRecorder
from ask_fable.errors import AskFableError
from tests.fakes.fake_oracle import FakeOracle

#: More failures than the breaker needs to open (5 samples at a 0.5 error rate).
CALLS = 8


def _every_error_class() -> list[type[AskFableError]]:
    found, pending = [], [AskFableError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda cls: cls.__name__)


def _context(breaker: CircuitBreaker, **settings: object) -> ModeContext:
    return ModeContext(load_settings(**settings), TraceRecorder("t"), Console(True, False), breaker=breaker)


def test_config_states_never_count_as_failures() -> None:
    """not_configured, binary_missing, bad_args, context_too_large and circuit_open are config states."""
    for cls in (errors.NotConfigured, errors.BinaryMissing, errors.BadArgs, errors.ContextTooLarge,
                errors.CircuitOpen):
        assert cls.counts_as_failure is False, cls.__name__
    for cls in (errors.OracleTimeout, errors.UpstreamError):
        assert cls.counts_as_failure is True, cls.__name__


@pytest.mark.parametrize("cls", _every_error_class(), ids=lambda cls: cls.__name__)
async def test_the_error_class_alone_decides_whether_the_breaker_counts_it(cls: type[AskFableError]) -> None:
    """8 calls failing with one error class open the breaker exactly when the class counts as a failure."""
    breaker = CircuitBreaker(window=10, threshold=0.5, cooldown=300)
    oracle = FakeOracle("glm")
    for _ in range(CALLS):
        oracle.enqueue_error(cls(f"{cls.__name__} from the backend"))
    mctx = _context(breaker)
    outcomes = [await mctx.call_oracle(oracle, mctx.request("system", "prompt")) for _ in range(CALLS)]
    shed = [o for o in outcomes if o.kind == "circuit_open" and cls is not errors.CircuitOpen]
    expected = "open" if cls.counts_as_failure else "closed"
    assert breaker.state(oracle.breaker_key) == expected
    assert bool(shed) is cls.counts_as_failure
    assert len(oracle.calls) == (5 if cls.counts_as_failure else CALLS)


async def test_refusals_never_count() -> None:
    """A model refusing 8 times is not a sick backend: the breaker stays closed and the next call goes out."""
    breaker = CircuitBreaker(window=10, threshold=0.5, cooldown=300)
    oracle = FakeOracle("glm")
    for _ in range(CALLS):
        oracle.enqueue("REFUSED: not a software question")
    mctx = _context(breaker)
    outcomes = [await mctx.call_oracle(oracle, mctx.request("system", "prompt")) for _ in range(CALLS + 1)]
    assert [o.status for o in outcomes] == ["refused"] * CALLS + ["ok"]
    assert breaker.state(oracle.breaker_key) == "closed" and len(oracle.calls) == CALLS + 1


async def test_an_open_breaker_quotes_the_last_failure_redacted() -> None:
    """The shed outcome names the last real error (redacted) and carries retry_after_s."""
    key = "sk-PLANTED-mode-0123456789abcdef"
    breaker = CircuitBreaker(window=10, threshold=0.5, cooldown=300)
    oracle = FakeOracle("glm")
    for _ in range(5):
        oracle.enqueue_error(errors.UpstreamError(f"GLM HTTP 500: overloaded for {key}"))
    mctx = _context(breaker, glm_api_key=key)
    for _ in range(5):
        await mctx.call_oracle(oracle, mctx.request("system", "prompt"))
    shed = await mctx.call_oracle(oracle, mctx.request("system", "prompt"))
    assert shed.status == "circuit_open"
    assert "last error: upstream_error: GLM HTTP 500: overloaded" in (shed.detail or "")
    assert key not in (shed.detail or "")
    assert shed.retry_after_s is not None and 0 < shed.retry_after_s <= 300
