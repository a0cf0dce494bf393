"""The council's members: the quorum, the straggler wait, and which deadline cut whom."""

from __future__ import annotations

import anyio
import pytest

from ask_fable.core.modes.council import run_council
from ask_fable.core.modes.fan_out import StragglerRule, quorum_size
from ask_fable.errors import BinaryMissing, UpstreamError
from tests.fakes.fake_oracle import FakeOracle, FakeResolver, make_mctx


@pytest.mark.parametrize(
    ("members", "without_answer", "quorum"),
    [(1, 0, 1), (2, 0, 1), (3, 0, 2), (3, 1, 1), (4, 0, 2), (5, 0, 3), (8, 0, 4), (8, 3, 3), (3, 3, 1)],
)
def test_quorum_is_half_of_the_members_still_able_to_answer(
    members: int, without_answer: int, quorum: int
) -> None:
    """Half of the members that have not already finished without an answer, rounded up, at least one."""
    assert quorum_size(members, without_answer) == quorum


def test_straggler_wait_is_a_multiple_of_the_slowest_answer_with_a_floor() -> None:
    """The wait grows with the slowest answer so far and never drops below the floor."""
    rule = StragglerRule(factor=2.0, floor=2.0)
    assert rule.wait(0.3) == 2.0
    assert rule.wait(30.0) == 60.0
    assert rule.describe() == "2× the slowest answer, at least 2s"


def _resolver(*tokens: str) -> FakeResolver:
    resolver = FakeResolver([FakeOracle(token) for token in tokens])
    resolver.add(FakeOracle("fable")).enqueue("fable synthesis", recommendation="apply")
    return resolver


@pytest.mark.parametrize("without_answer", ["error", "refusal", "not_installed"])
async def test_a_member_without_an_answer_shrinks_the_quorum(without_answer: str) -> None:
    """With one member failed, refused or not installed, one answer of the other two is a quorum:
    the hung one is cut as a straggler."""
    resolver = _resolver("minimax", "glm", "deepseek")
    resolver["minimax"].enqueue("minimax answer", recommendation="apply")
    if without_answer == "error":
        resolver["glm"].enqueue_error(UpstreamError("glm HTTP 500"))
    elif without_answer == "refusal":
        resolver["glm"].enqueue("REFUSED: not an engineering question")
    else:
        resolver["glm"].unavailable = BinaryMissing("glm is not installed")
    resolver["deepseek"].enqueue_hang()
    mctx, progress = make_mctx(council_straggler_floor=0.2)
    with anyio.fail_after(10):
        outcome = await run_council("Q?", "", ["minimax", "glm", "deepseek"], mctx, resolver=resolver)
    by_token = {s["token"]: s for s in outcome.fields.wire()["sources"]}
    assert by_token["deepseek"]["status"] == by_token["deepseek"]["kind"] == "straggler"
    assert "after 1/3 members had answered" in by_token["deepseek"]["detail"]
    assert outcome.fields.wire()["quorum"] == "1/3"
    assert any(message == "cut as stragglers: deepseek (still running 0.2s after 1/3 had answered)"
               for _, _, message in progress.events)
    assert [e.attrs for e in mctx.trace.events if e.name == "council.quorum"] == [
        {"answered": 1, "asked": 3, "straggler_wait_s": 0.2}]


async def test_a_slow_member_is_waited_for_until_the_quorum() -> None:
    """One fast answer of three is no quorum: the slow members are waited for, and the last one gets
    the straggler wait measured from the slowest answer, not the fastest."""
    resolver = _resolver("minimax", "glm", "deepseek")
    resolver["minimax"].enqueue("fast", recommendation="apply")
    resolver["glm"].enqueue("slow", recommendation="apply", delay=1.0)
    resolver["deepseek"].enqueue("slower", recommendation="apply", delay=1.2)
    mctx, _ = make_mctx(council_straggler_floor=0.1, council_straggler_factor=1.0)
    with anyio.fail_after(10):
        outcome = await run_council("Q?", "", ["minimax", "glm", "deepseek"], mctx, resolver=resolver)
    assert outcome.fields.wire()["quorum"] == "3/3"
    assert {s["status"] for s in outcome.fields.wire()["sources"]} == {"ok"}


async def test_a_member_never_started_is_reported_as_such() -> None:
    """Past ``max_parallel`` members queue for a slot; one still queued at the cut never ran."""
    resolver = _resolver("minimax", "glm", "deepseek", "codex")
    resolver["minimax"].enqueue("first", recommendation="apply")
    resolver["glm"].enqueue("second", recommendation="apply")
    resolver["deepseek"].enqueue_hang()
    mctx, _ = make_mctx(max_parallel=1, council_straggler_floor=0.2)
    with anyio.fail_after(10):
        outcome = await run_council("Q?", "", ["minimax", "glm", "deepseek", "codex"], mctx,
                                    resolver=resolver)
    by_token = {s["token"]: s for s in outcome.fields.wire()["sources"]}
    assert by_token["deepseek"]["status"] == by_token["codex"]["status"] == "straggler"
    assert by_token["deepseek"]["detail"].startswith("still running after")
    assert by_token["codex"]["detail"].startswith("never started (no free slot)")
    assert not resolver["codex"].calls


async def test_the_council_bound_still_cuts_when_the_straggler_wait_would_end_later() -> None:
    """A straggler wait ending past the members' share of the council bound is not armed: the
    bound cuts the member as a timeout."""
    resolver = _resolver("minimax", "glm", "deepseek")
    resolver["deepseek"].enqueue_hang()
    mctx, progress = make_mctx(council_timeout=0.6, council_straggler_floor=5)
    with anyio.fail_after(10):
        outcome = await run_council("Q?", "", ["minimax", "glm", "deepseek"], mctx, resolver=resolver)
    late = next(s for s in outcome.fields.wire()["sources"] if s["token"] == "deepseek")
    assert late["status"] == late["kind"] == "timeout"
    assert not any("straggler" in message for _, _, message in progress.events)


async def test_a_straggler_never_counts_against_the_circuit_breaker() -> None:
    """A member cut as a straggler again and again leaves its breaker without a single sample."""
    from ask_fable.backends.breaker import CircuitBreaker
    from ask_fable.core.modes.base import ModeContext
    from ask_fable.core.tracing import Console, TraceRecorder

    breaker = CircuitBreaker(min_samples=1)
    resolver = _resolver("minimax", "glm", "deepseek")
    for _ in range(3):
        resolver["deepseek"].enqueue_hang()
        mctx, _ = make_mctx(council_straggler_floor=0.05)
        mctx = ModeContext(mctx.settings, TraceRecorder("t"), Console(True, False), breaker=breaker)
        with anyio.fail_after(10):
            outcome = await run_council("Q?", "", ["minimax", "glm", "deepseek"], mctx, resolver=resolver)
        assert outcome.fields.wire()["quorum"] == "2/3"
    deepseek = resolver["deepseek"].breaker_key
    assert breaker.state(deepseek) == "closed" and deepseek not in breaker.snapshot()
    assert breaker.snapshot()[resolver["minimax"].breaker_key]["samples"] == 3
