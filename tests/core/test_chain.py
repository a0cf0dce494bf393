"""The chain: ordered stages, anti-anchoring critique, skipped stages, fallback, drift, deadline."""

from __future__ import annotations

import anyio
import pytest

from ask_fable.contract import ChainResult
from ask_fable.core.modes.chain import run_chain
from ask_fable.errors import BadArgs, OracleTimeout, UpstreamError
from tests.fakes.fake_oracle import FakeOracle, FakeResolver, make_mctx


def _resolver(*tokens: str) -> FakeResolver:
    return FakeResolver([FakeOracle(t, model=f"{t.upper()}-X") for t in tokens])


def _validate(fields: dict[str, object]) -> ChainResult:
    return ChainResult.model_validate({"status": "ok", "answer": "x", **fields})


async def test_stages_run_in_order_with_draft_critique_decide_roles() -> None:
    resolver = _resolver("minimax", "glm", "fable")
    resolver["minimax"].enqueue("Draft: use a mutex.", recommendation="investigate")
    resolver["glm"].enqueue("Critique: a mutex deadlocks here; use a channel.", recommendation="apply")
    resolver["fable"].enqueue("Decision: channel.", recommendation="apply")
    mctx, progress = make_mctx()
    outcome = await run_chain("How to guard the map?", "code", "m3 > glm > fable", mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.pipeline == ["minimax", "glm", "fable"]
    assert [s.role for s in result.stages or []] == ["draft", "critique", "decide"]
    assert result.answered_by == "fable" and result.answered == 3 and result.requested == 3
    assert result.recommendation_drift == ["investigate", "apply", "apply"]
    assert result.material_drift is False
    assert outcome.text.startswith("Decision: channel.")
    critique = resolver["glm"].calls[0]
    assert "independently" in critique.system and "Draft: use a mutex." in critique.prompt
    decide = resolver["fable"].calls[0]
    assert "Peer 1" in decide.prompt and "Peer 2" in decide.prompt
    assert "minimax" not in decide.prompt.lower() and "glm" not in decide.prompt.lower()
    assert resolver["minimax"].calls[0].ended <= critique.started  # type: ignore[operator]
    assert [done for done, _, _ in progress.events] == [0, 1, 2, 3, 4]


async def test_repeats_and_twin_expand_in_place() -> None:
    resolver = _resolver("minimax", "fable", "opus")
    mctx, _ = make_mctx()
    outcome = await run_chain("Q?", "", ["m3", "twin", "fable"], mctx, resolver=resolver)
    assert outcome.fields.wire()["pipeline"] == ["minimax", "fable", "opus", "fable"]
    assert len(resolver["fable"].calls) == 2


async def test_a_failed_middle_stage_is_skipped_and_recorded() -> None:
    resolver = _resolver("minimax", "fable")
    resolver["minimax"].enqueue("Draft A.", recommendation="apply")
    mctx, _ = make_mctx()
    outcome = await run_chain("Q?", "", "m3 > glm > fable", mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    statuses = [(s.model, s.status, s.kind) for s in result.stages or []]
    assert statuses[1] == ("glm", "not_configured", "not_configured")
    assert result.answered == 2 and result.requested == 3
    assert "Draft A." in resolver["fable"].calls[0].prompt


async def test_first_stage_failing_makes_the_next_stage_draft() -> None:
    resolver = _resolver("glm", "fable")
    resolver["glm"].enqueue_error(UpstreamError("502"))
    mctx, _ = make_mctx()
    outcome = await run_chain("Q?", "", "glm > m3 > fable", mctx, resolver=resolver)
    roles = [(s["model"], s["role"], s["status"]) for s in outcome.fields.wire()["stages"]]
    assert roles == [("glm", "draft", "error"), ("minimax", "draft", "not_configured"),
                     ("fable", "decide", "ok")]


async def test_failed_final_stage_is_reconciled_by_fable_with_a_fallback_note() -> None:
    resolver = _resolver("minimax", "glm", "codex", "fable")
    resolver["minimax"].enqueue("Draft.", recommendation="apply")
    resolver["glm"].enqueue("Critique.", recommendation="reject")
    resolver["codex"].enqueue_error(UpstreamError("codex crashed"))
    resolver["fable"].enqueue("Reconciled.", recommendation="reject")
    mctx, _ = make_mctx()
    outcome = await run_chain("Q?", "", "m3 > glm > codex", mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.fallback and "fable" in result.fallback and "codex" in result.fallback
    assert result.answered_by == "fable"
    assert result.stages is not None and result.stages[-1].role == "fallback"
    assert result.recommendation_drift == ["apply", "reject", "reject"]
    assert result.material_drift is True
    assert outcome.text.startswith("Reconciled.")


async def test_no_fallback_answer_returns_the_last_survivor() -> None:
    resolver = _resolver("minimax", "fable")
    resolver["minimax"].enqueue("Only draft.", recommendation="apply")
    resolver["fable"].enqueue_error(UpstreamError("down"))
    mctx, _ = make_mctx()
    outcome = await run_chain("Q?", "", "m3 > fable", mctx, resolver=resolver)
    assert outcome.text.startswith("Only draft.")
    assert "last surviving stage" in outcome.fields.wire()["fallback"]
    assert [s["model"] for s in outcome.fields.wire()["stages"]] == ["minimax", "fable", "opus"]


async def test_chain_deadline_is_a_timeout_with_partial_stages() -> None:
    resolver = _resolver("minimax", "glm", "fable")
    resolver["minimax"].enqueue("Draft.", recommendation="apply")
    resolver["glm"].enqueue_hang()
    mctx, _ = make_mctx()
    with anyio.fail_after(5), pytest.raises(OracleTimeout) as info:
        await run_chain("Q?", "", "m3 > glm > fable", mctx, resolver=resolver, deadline=0.3)
    result = info.value.to_result()
    assert result["kind"] == "timeout"
    assert [s["model"] for s in result["stages"]] == ["minimax"]
    assert result["answered"] == 1 and result["requested"] == 3


async def test_every_stage_failing_is_an_error() -> None:
    mctx, _ = make_mctx()
    with pytest.raises(UpstreamError, match="no chain stage answered"):
        await run_chain("Q?", "", "glm > deepseek", mctx, resolver=FakeResolver())


async def test_bad_pipeline_is_bad_args() -> None:
    mctx, _ = make_mctx()
    with pytest.raises(BadArgs):
        await run_chain("Q?", "", "m3 > nope", mctx, resolver=FakeResolver())


async def test_modes_leave_max_tokens_to_each_backend() -> None:
    """Single, chain and debate requests carry no max_tokens: each backend applies its own default,
    and OpenRouter/Atlas receive none unless a request sets it."""
    from ask_fable.core.modes.debate import run_debate
    from ask_fable.core.modes.single import run_single

    resolver = _resolver("glm", "fable", "minimax", "opus")
    mctx, _ = make_mctx(max_tokens=4321)
    await run_single(resolver["glm"], "Q?", "", mctx)
    await run_chain("Q?", "", ["glm", "fable"], mctx, resolver=resolver)
    await run_debate("Q?", "", mctx, proposer="glm", opponent="minimax", adjudicator="opus",
                     resolver=resolver)
    tokens = ("glm", "fable", "minimax", "opus")
    requests = [call.request for token in tokens for call in resolver[token].calls]
    assert len(requests) >= 4
    assert all(request.max_tokens is None for request in requests)
