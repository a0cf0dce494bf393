"""The council: parallel members, anonymized synthesis, consensus, deadlines and fallbacks."""

from __future__ import annotations

import itertools

import anyio
import pytest

from ask_fable.contract import CouncilResult
from ask_fable.core.modes.council import run_council
from ask_fable.errors import BinaryMissing, NotConfigured, OracleTimeout, UpstreamError
from tests.fakes.fake_oracle import FakeOracle, FakeResolver, make_mctx


def _panel(*specs: tuple[str, str | None]) -> FakeResolver:
    """Members answering with the given recommendations, plus fable and opus as synthesizers."""
    resolver = FakeResolver()
    for token, rec in specs:
        oracle = resolver.add(FakeOracle(token, model=f"{token.upper()}-MODEL-9"))
        if rec is not None:
            oracle.enqueue(f"{token} analysis", recommendation=rec)
    for token in ("fable", "opus"):
        if token not in resolver.oracles:
            resolver.add(FakeOracle(token, model=f"claude-{token}-5"))
    return resolver


def _validate(outcome_fields: dict[str, object], text: str = "x") -> CouncilResult:
    return CouncilResult.model_validate({"status": "ok", "answer": text, **outcome_fields})


async def test_members_run_in_parallel() -> None:
    resolver = FakeResolver([FakeOracle(t) for t in ("minimax", "glm", "deepseek", "fable")])
    for token in ("minimax", "glm", "deepseek"):
        resolver[token].enqueue(f"{token} answer", recommendation="apply", delay=0.2)
    mctx, _ = make_mctx()
    with anyio.fail_after(5):
        await run_council("Is this cache safe?", "", ["minimax", "glm", "deepseek"], mctx, resolver=resolver)
    calls = [resolver[t].calls[0] for t in ("minimax", "glm", "deepseek")]
    latest_start = max(c.started for c in calls)
    earliest_end = min(c.ended or 0 for c in calls)
    assert latest_start < earliest_end, "every member started before the first one finished"


async def test_max_parallel_bounds_the_fan_out() -> None:
    members = [f"ollama:m{i}" for i in range(4)]
    resolver = FakeResolver([FakeOracle(t) for t in [*members, "fable"]])
    for token in members:
        resolver[token].enqueue("ok", recommendation="apply", delay=0.05)
    mctx, _ = make_mctx(max_parallel=1)
    await run_council("Is this cache safe?", "", members, mctx, resolver=resolver)
    spans = sorted((resolver[t].calls[0].started, resolver[t].calls[0].ended or 0) for t in members)
    assert all(prev[1] <= nxt[0] for prev, nxt in itertools.pairwise(spans))


async def test_synthesizer_sees_an_anonymized_panel_with_its_own_family_last() -> None:
    resolver = _panel(("opus", None), ("minimax", None), ("codex", None))
    resolver["opus"].enqueue("Answer one: keep the lock.", recommendation="apply")
    resolver["minimax"].enqueue("As MINIMAX-MODEL-9 I say answer two.", recommendation="apply")
    resolver["codex"].enqueue("Answer three, speaking as Codex.", recommendation="apply")
    mctx, _ = make_mctx()
    outcome = await run_council("Is the lock fine?", "ctx", ["opus", "minimax", "codex"], mctx,
                                resolver=resolver)
    prompt = resolver["fable"].calls[0].prompt
    for name in ("opus", "minimax", "codex", "MINIMAX-MODEL-9", "CODEX-MODEL-9", "claude-opus-5"):
        assert name.lower() not in prompt.lower()
    assert "Expert A" in prompt and "Expert C" in prompt
    assert "speaking as [model]" in prompt
    positions = [prompt.index(text) for text in ("answer two", "Answer three", "Answer one")]
    # Members keep their order, except opus (fable's own family) which moves last.
    assert positions == sorted(positions)
    assert "pick a side" in resolver["fable"].calls[0].system.lower()
    assert outcome.fields.wire()["synthesizer"] == "fable"


@pytest.mark.parametrize(("judge", "expected"), [
    ("codex", ["MINIMAX", "OPUS", "DEEPSEEK", "FABLE"]),
    ("deepseek", ["MINIMAX", "OPUS", "DEEPSEEK", "FABLE"]),
    ("glm", ["MINIMAX", "OPUS", "DEEPSEEK", "FABLE"]),
    ("opus", ["MINIMAX", "DEEPSEEK", "OPUS", "FABLE"]),
])
async def test_fables_answer_is_last_whoever_synthesizes(judge: str, expected: list[str]) -> None:
    """The judge's own lab moves towards the end, and Fable's answer is always the last one read."""
    resolver = _panel(("fable", None), ("minimax", None), ("opus", None), ("deepseek", None), ("glm", None),
                      ("codex", None))
    for token in ("fable", "minimax", "opus", "deepseek"):
        resolver[token].enqueue(f"{token.upper()}-VIEW", recommendation="apply")
    resolver[judge].enqueue("the ruling", recommendation="apply")
    mctx, _ = make_mctx()
    members = ["fable", "minimax", "opus", "deepseek"]
    outcome = await run_council("Is the lock fine?", "", members, mctx, synthesizer=judge, resolver=resolver)
    assert outcome.fields.wire()["synthesizer"] == judge
    prompt = resolver[judge].calls[-1].prompt
    assert sorted(expected, key=lambda name: prompt.index(f"{name}-VIEW")) == expected


async def test_council_bound_reserves_time_for_the_synthesis() -> None:
    resolver = _panel(("minimax", "apply"), ("glm", "apply"), ("deepseek", None))
    resolver["deepseek"].enqueue_hang()
    resolver["fable"].enqueue("fable synthesis", recommendation="apply", delay=0.1)
    mctx, _ = make_mctx(council_timeout=0.9)
    with anyio.fail_after(5):
        outcome = await run_council("Q?", "", ["minimax", "glm", "deepseek"], mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert outcome.text.startswith("fable synthesis")
    assert result.synthesizer == "fable" and result.synthesis is not None and not result.synthesis.fallback
    assert result.note is None and result.quorum == "2/3"
    late = next(s for s in result.sources or [] if s.token == "deepseek")
    assert late.kind == "timeout" and "cancelled" in (late.detail or "")
    assert "act on the synthesis" in (result.recommended_next_action or "")


async def test_members_see_only_the_question_and_context() -> None:
    resolver = _panel(("minimax", "apply"), ("glm", "reject"))
    mctx, _ = make_mctx()
    await run_council("Is the lock fine?", "the code", ["minimax", "glm"], mctx, resolver=resolver)
    member_prompt = resolver["glm"].calls[0].prompt
    assert "the code" in member_prompt and "Expert" not in member_prompt
    assert "minimax analysis" not in member_prompt


@pytest.mark.parametrize(
    ("recs", "consensus", "material"),
    [
        (["apply", "apply", "apply"], "strong", False),
        (["apply", "apply", "investigate"], "partial", False),
        (["apply", "apply", "reject"], "divergent", True),
        (["apply", "investigate", "needs_more_context"], "divergent", False),
        (["apply", None, None], "unknown", False),
    ],
)
async def test_consensus_from_member_recommendations(
    recs: list[str | None], consensus: str, material: bool
) -> None:
    tokens = ["minimax", "glm", "deepseek"]
    resolver = _panel(*zip(tokens, recs, strict=True))
    for token, rec in zip(tokens, recs, strict=True):
        if rec is None:
            resolver[token].enqueue(f"{token} prose without a sidecar")
    mctx, _ = make_mctx()
    outcome = await run_council("Should we shard?", "", tokens, mctx, resolver=resolver)
    assert outcome.fields.wire()["consensus"] == consensus
    assert outcome.fields.wire()["material_disagreement"] is material
    assert outcome.audit.consensus == consensus
    result = _validate(outcome.fields.wire())
    assert [s.recommendation for s in result.sources or []] == recs
    if consensus != "strong":
        assert result.confidence != "high"
    if material:
        assert "do not average" in resolver["fable"].calls[0].prompt


async def test_unavailable_members_are_reported_and_skipped() -> None:
    resolver = _panel(("minimax", "apply"), ("deepseek", "apply"))
    resolver.add(FakeOracle("gemini", unavailable=BinaryMissing("agy is not installed")))
    mctx, _ = make_mctx()
    outcome = await run_council("Q?", "", ["minimax", "glm", "gemini", "deepseek"], mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    by_token = {s.token: s for s in result.sources or []}
    assert by_token["glm"].status == "not_configured"
    assert by_token["gemini"].status == "binary_missing" and by_token["gemini"].kind == "binary_missing"
    assert result.quorum == "2/4" and result.degraded is True
    assert result.effective_models == ["minimax", "deepseek"]
    assert result.confidence in ("medium", "low")
    assert "2 of 4" in (result.recommended_next_action or "")
    assert not resolver["gemini"].calls


async def test_council_deadline_keeps_answers_and_synthesizes() -> None:
    resolver = _panel(("minimax", "apply"), ("glm", None))
    resolver["glm"].enqueue_hang()
    mctx, _ = make_mctx(council_timeout=0.3)
    with anyio.fail_after(5):
        outcome = await run_council("Q?", "", ["minimax", "glm"], mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    glm = next(s for s in result.sources or [] if s.token == "glm")
    assert glm.status == "timeout" and glm.kind == "timeout"
    assert result.quorum == "1/2" and result.degraded
    assert "one opinion" in (result.recommended_next_action or "")
    assert outcome.text.startswith("minimax analysis")
    assert any(m.token == "glm" and m.status == "timeout" for m in mctx.members)


async def test_all_timeout_council_is_a_timeout_error_with_sources() -> None:
    resolver = _panel(("minimax", None), ("glm", None))
    resolver["minimax"].enqueue_hang()
    resolver["glm"].enqueue_hang()
    mctx, _ = make_mctx(council_timeout=0.2)
    with anyio.fail_after(5), pytest.raises(OracleTimeout) as info:
        await run_council("Q?", "", ["minimax", "glm"], mctx, resolver=resolver)
    result = info.value.to_result()
    assert result["kind"] == "timeout" and result["quorum"] == "0/2"
    assert {s["token"] for s in result["sources"]} == {"minimax", "glm"}


async def test_all_failed_council_errors_with_each_members_kind() -> None:
    resolver = _panel(("minimax", None))
    resolver["minimax"].enqueue_error(UpstreamError("mmx exited 1"))
    mctx, _ = make_mctx()
    with pytest.raises(UpstreamError) as info:
        await run_council("Q?", "", ["minimax", "glm"], mctx, resolver=resolver)
    kinds = {s["token"]: s["kind"] for s in info.value.extra["sources"]}
    assert kinds == {"minimax": "upstream_error", "glm": "not_configured"}


async def test_unconfigured_only_council_is_not_configured() -> None:
    mctx, _ = make_mctx()
    with pytest.raises(NotConfigured):
        await run_council("Q?", "", ["glm", "deepseek"], mctx, resolver=FakeResolver())


async def test_synthesizer_ladder_falls_back_and_says_which_ran() -> None:
    resolver = _panel(("minimax", "apply"), ("glm", "apply"))
    resolver.add(FakeOracle("codex", unavailable=BinaryMissing("codex is not installed")))
    resolver["fable"].enqueue_error(UpstreamError("overloaded"))
    resolver["opus"].enqueue("opus synthesis", recommendation="apply")
    mctx, _ = make_mctx()
    outcome = await run_council("Q?", "", ["minimax", "glm"], mctx, synthesizer="gpt", resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.synthesizer == "opus"
    assert result.synthesis is not None
    assert result.synthesis.requested == "codex" and result.synthesis.used == "opus"
    assert result.synthesis.fallback is True
    assert [t.token for t in result.synthesis.tried] == ["codex", "fable", "opus"]
    assert outcome.text.startswith("opus synthesis")
    assert outcome.audit.synth_fallback is True


async def test_every_synthesizer_failing_returns_the_best_member_answer_flagged() -> None:
    resolver = _panel(("minimax", "investigate"), ("glm", "apply"), ("deepseek", "apply"))
    resolver["fable"].enqueue_error(UpstreamError("down"))
    resolver["opus"].enqueue_error(UpstreamError("down"))
    resolver["glm"].queue.clear()
    resolver["glm"].enqueue("glm analysis", recommendation="apply", confidence="low")
    mctx, _ = make_mctx()
    outcome = await run_council("Q?", "", ["minimax", "glm", "deepseek"], mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.synthesis is not None and result.synthesis.fallback and result.synthesis.used is None
    assert outcome.text.startswith("deepseek analysis")  # majority view, most confident
    assert result.confidence == "low"
    assert "deepseek" in (result.note or "")


async def test_twin_group_expands_and_progress_is_reported() -> None:
    resolver = _panel(("fable", "apply"), ("opus", "apply"))
    resolver["fable"].enqueue("fable synthesis", recommendation="apply")
    mctx, progress = make_mctx()
    outcome = await run_council("Q?", "", ["twins"], mctx, resolver=resolver)
    assert outcome.fields.wire()["effective_models"] == ["fable", "opus"]
    assert outcome.fields.wire()["consensus"] == "strong" and outcome.fields.wire()["confidence"] == "high"
    totals = {total for _, total, _ in progress.events}
    assert totals == {3}
    # start, first answer, the quorum (1 of 2) starting the straggler wait, second answer, synthesis
    assert [done for done, _, _ in progress.events] == [0, 1, 1, 2, 2, 3]
    assert progress.events[2][2].startswith("quorum 1/2: waiting up to")


async def test_all_members_refusing_is_the_councils_refusal() -> None:
    resolver = _panel(("minimax", None), ("glm", None))
    resolver["minimax"].enqueue("REFUSED: exploit development")
    resolver["glm"].enqueue("REFUSED: exploit development")
    mctx, _ = make_mctx()
    outcome = await run_council("Q?", "", ["minimax", "glm"], mctx, resolver=resolver)
    assert outcome.text.startswith("REFUSED")
    assert outcome.fields.wire()["quorum"] == "0/2"


def test_scrubbing_keeps_topic_mentions_of_a_token() -> None:
    from ask_fable.core.modes.council import scrub_names

    text = "As Gemini I suggest the Gemini API retry header; Gemini 3.1 Pro (High) agrees."
    assert scrub_names(text, ["gemini", "Gemini 3.1 Pro (High)"]) == (
        "As [model] I suggest the Gemini API retry header; [model] agrees."
    )


async def test_council_deadline_bounds_synthesis_and_falls_back_to_the_best_member() -> None:
    resolver = _panel(("minimax", "apply"), ("glm", "apply"))
    resolver["fable"].enqueue_hang()
    mctx, _ = make_mctx(council_timeout=0.5)
    with anyio.fail_after(5):
        outcome = await run_council("Q?", "", ["minimax", "glm"], mctx, resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.synthesis is not None and result.synthesis.fallback and result.synthesis.used is None
    assert outcome.text.startswith("minimax analysis") and result.confidence == "low"
    assert "wall-clock" in (result.note or "")
    synth_request = resolver["fable"].calls[0].request
    assert synth_request.timeout <= 0.5 and synth_request.max_tokens is None
    assert resolver["opus"].calls == []


@pytest.mark.parametrize(("text", "expected"), [
    ("I'm Claude, and the lock is fine.", "I'm [model], and the lock is fine."),
    ("As an OpenAI model, I would shard it.", "As [model], I would shard it."),
    ("Gemini here. Shard the lock.", "[model] here. Shard the lock."),
    ("As Claude, I recommend sharding.", "As [model], I recommend sharding."),
    ("I am a large language model trained by Google.", "I am a large language model trained by [lab]."),
    ("I am DeepSeek-V3, made by DeepSeek.", "I am [model], made by [lab]."),
    ("This is Grok. Use a lock.", "This is [model]. Use a lock."),
    ("As a Moonshot AI assistant I disagree.", "As [model] I disagree."),
    ("I was built by Zhipu AI to help.", "I was built by [lab] to help."),
])
def test_scrubbing_removes_self_identification(text: str, expected: str) -> None:
    from ask_fable.core.modes.council import scrub_names

    assert scrub_names(text, []) == expected


def test_scrubbing_keeps_ordinary_lab_and_product_mentions() -> None:
    from ask_fable.core.modes.council import scrub_names

    text = ("Call the OpenAI API; as Google recommends, back off. Claude Code reads ~/.claude. Use Gemini "
            "here and GPT-4 there. Anthropic's x-api-key header. DeepSeek pricing is low. This is Google's "
            "approach, as GPT-4 does too. BERT was developed by Google; xAI, MiniMax and Zhipu ship models.")
    assert scrub_names(text, []) == text


async def test_synthesizer_never_sees_a_members_self_identification() -> None:
    resolver = _panel(("minimax", None), ("glm", None))
    resolver["minimax"].enqueue("I'm MiniMax-M3, made by MiniMax. Use the OpenAI API.",
                                recommendation="apply")
    resolver["glm"].enqueue("As a Zhipu AI model, I agree.", recommendation="apply")
    mctx, _ = make_mctx()
    await run_council("Q?", "", ["minimax", "glm"], mctx, resolver=resolver)
    prompt = resolver["fable"].calls[0].prompt
    assert "I'm [model], made by [lab]. Use the OpenAI API." in prompt and "As [model], I agree." in prompt
    assert "Zhipu" not in prompt and "MiniMax" not in prompt
