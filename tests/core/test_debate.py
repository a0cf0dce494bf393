"""The debate: claims ledger, dispositions, revisions, and every server-side resolution."""

from __future__ import annotations

import json

import anyio
import pytest

from ask_fable.contract import DebateResult
from ask_fable.core.modes.debate import parse_claims, run_debate
from ask_fable.core.sidecar import parse_sidecar
from ask_fable.errors import BadArgs, OracleTimeout, UpstreamError
from tests.fakes.fake_oracle import FakeOracle, FakeResolver, make_mctx

SCENARIO = "Under 10k concurrent writers the single lock serializes every request and p99 latency triples."


def block(tag: str, data: object) -> str:
    return f"```{tag}\n{json.dumps(data)}\n```"


CLAIMS = block("claims", [{"id": "C1", "claim": "One lock is enough."},
                          {"id": "C2", "claim": "Writes are rare."}])


def concede(ident: str, reason: str = "") -> dict[str, str]:
    return {"id": ident, "disposition": "concede", **({"reason": reason} if reason else {})}


def contest(ident: str, scenario: str) -> dict[str, str]:
    return {"id": ident, "disposition": "contest", "scenario": scenario}


def _resolver() -> FakeResolver:
    return FakeResolver([
        FakeOracle("fable", model="claude-fable-5-1"),
        FakeOracle("minimax", model="MiniMax-M3"),
        FakeOracle("opus", model="claude-opus-5"),
    ])


def _validate(fields: dict[str, object]) -> DebateResult:
    return DebateResult.model_validate({"status": "ok", "answer": "x", **fields})


def _propose(resolver: FakeResolver, rec: str = "apply") -> None:
    resolver["fable"].enqueue(f"Use one global lock.\n\n{CLAIMS}", recommendation=rec)


def _dispose(resolver: FakeResolver, items: list[dict[str, str]], rec: str, token: str = "minimax") -> None:
    resolver[token].enqueue(f"My review.\n\n{block('dispositions', items)}", recommendation=rec)


def _revise(resolver: FakeResolver, items: list[dict[str, str]], rec: str, confidence: str = "high") -> None:
    resolver["fable"].enqueue(f"Revised position.\n\n{block('revisions', items)}", recommendation=rec,
                              confidence=confidence)


async def test_opponent_conceding_everything_is_conceded_without_a_ruling() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [concede("C1", "the write rate measured is tiny"),
                        concede("C2", "logs show under one write per second")],
             "apply")
    mctx, progress = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, proposer="fable", opponent="m3", adjudicator="opus",
                               resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.debate is not None
    assert result.debate.resolution == "conceded"
    assert result.debate.low_effort_opposition is False
    assert result.debate.decisive_argument is None
    assert [t.role for t in result.turns or []] == ["proposer", "opponent"]
    assert not resolver["opus"].calls
    assert result.answered_by == "fable"
    assert "```claims" not in outcome.text and "Use one global lock." in outcome.text
    assert progress.events[-1][0] == progress.events[-1][1]


async def test_conceding_with_no_reasons_is_low_effort_opposition() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [concede("C1"), concede("C2")], "apply")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", resolver=resolver)
    assert outcome.fields.wire()["debate"]["resolution"] == "conceded"
    assert outcome.fields.wire()["debate"]["low_effort_opposition"] is True


async def test_revised_contests_with_agreeing_sides_converge() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [concede("C1", "fine for a single node deployment"),
                        contest("C2", SCENARIO)], "apply")
    _revise(resolver, [{"id": "C2", "response": "revise", "note": "shard the lock per tenant"}], "apply")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.debate is not None and result.debate.resolution == "converged"
    assert result.debate.contested_claims_remaining == 0
    assert result.debate.recommendation_drift == ["apply", "apply", "apply"]
    assert outcome.text.startswith("Revised position.")
    revise_prompt = resolver["fable"].calls[1].prompt
    assert SCENARIO in revise_prompt and "contest" in revise_prompt


async def test_remaining_contests_with_movement_are_adjudicated_anonymously() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO),
                        contest("C2", SCENARIO + " Also on failover.")],
             "reject")
    _revise(resolver, [{"id": "C1", "response": "hold", "note": "we never exceed 100 writers"},
                       {"id": "C2", "response": "concede"}], "apply")
    ruling = block("ruling", {"winner": "B", "decisive_argument": "the failover scenario breaks C1"})
    resolver["opus"].enqueue(f"Final: shard the lock.\n\n{ruling}", recommendation="investigate")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.debate is not None
    assert result.debate.resolution == "adjudicated"
    assert result.debate.decisive_argument == "the failover scenario breaks C1"
    assert result.debate.material_disagreement is True
    assert result.debate.contested_claims_remaining == 1
    assert result.debate.adjudicator_independent is True
    assert {c.id: c.status for c in result.debate.claims} == {"C1": "contested", "C2": "withdrawn"}
    assert result.answered_by == "opus"
    assert "```ruling" not in outcome.text
    prompt = resolver["opus"].calls[0].prompt
    assert "Position A" in prompt and "Critic B" in prompt
    for name in ("fable", "minimax", "claude-fable-5-1", "MiniMax-M3"):
        assert name.lower() not in prompt.lower()


async def test_both_sides_digging_in_is_a_stalemate_with_downgraded_confidence() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO),
                        concede("C2", "agreed, writes are rare in the logs")],
             "reject")
    _revise(resolver, [{"id": "C1", "response": "hold", "note": "not our load"}], "apply")
    ruling = block("ruling", {"winner": "split", "decisive_argument": "load is unknown"})
    resolver["opus"].enqueue(f"Measure first.\n\n{ruling}", recommendation="investigate", confidence="high")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", resolver=resolver)
    assert outcome.fields.wire()["debate"]["resolution"] == "stalemate"
    _, sidecar = parse_sidecar(outcome.text)
    assert sidecar is not None and sidecar.confidence == "medium"
    assert outcome.fields.wire()["debate"]["decisive_argument"] == "load is unknown"


async def test_rebuttal_round_concession_resolves_the_contest() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO),
                        concede("C2", "agreed, writes are rare in the logs")],
             "investigate")
    _revise(resolver, [{"id": "C1", "response": "hold", "note": "the lock is per process"}], "apply")
    _dispose(resolver, [concede("C1", "per-process lock answers it")], "apply")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", rounds=2, resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.debate is not None and result.debate.rounds == 2
    assert [t.role for t in result.turns or []] == ["proposer", "opponent", "revision", "rebuttal"]
    assert result.debate.resolution == "converged"
    assert result.debate.claims[0].status == "resolved"


async def test_rebuttal_maintaining_an_unmoved_contest_is_a_stalemate() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO)], "reject")
    _revise(resolver, [{"id": "C1", "response": "hold", "note": "no"}], "apply")
    _dispose(resolver, [contest("C1", "still " + SCENARIO)], "reject")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", rounds=2, resolver=resolver)
    assert outcome.fields.wire()["debate"]["resolution"] == "stalemate"
    assert [t["role"] for t in outcome.fields.wire()["turns"]][-1] == "adjudicator"


async def test_unavailable_opponent_degrades_to_a_single_critic() -> None:
    resolver = _resolver()
    _propose(resolver)
    resolver["opus"].enqueue("Critic: C2 fails under bursts.", recommendation="investigate")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, opponent="glm", adjudicator="opus",
                               resolver=resolver)
    result = _validate(outcome.fields.wire())
    assert result.debate is not None and result.debate.resolution == "degraded_single_critic"
    assert [(t.role, t.status) for t in result.turns or []] == [
        ("proposer", "ok"), ("opponent", "not_configured"), ("critic", "ok")]
    assert "glm" in (result.note or "") and outcome.text.startswith("Critic:")


async def test_unstructured_replies_are_handled_and_adjudicated() -> None:
    resolver = _resolver()
    resolver["fable"].enqueue("Position:\n1. The cache never goes stale here.\n2. TTLs are short enough "
                              "for every reader.", recommendation="apply")
    resolver["minimax"].enqueue("I disagree with most of this but will not use your format. " * 5,
                                recommendation="reject")
    resolver["opus"].enqueue("Ruling in prose only.", recommendation="investigate")
    mctx, _ = make_mctx()
    outcome = await run_debate("Cache?", "", mctx, adjudicator="opus", resolver=resolver)
    debate = outcome.fields.wire()["debate"]
    assert [c["claim"] for c in debate["claims"]] == ["The cache never goes stale here.",
                                                       "TTLs are short enough for every reader."]
    assert {c["status"] for c in debate["claims"]} == {"unaddressed"}
    assert debate["resolution"] == "adjudicated" and debate.get("decisive_argument") is None
    assert "could not be parsed" in outcome.fields.wire()["note"]


def test_claims_fall_back_to_the_first_paragraph() -> None:
    claims = parse_claims("Just do it.\n\nMore prose.")
    assert [(c.id, c.claim) for c in claims] == [("C1", "Just do it.")]


async def test_adjudicator_in_the_pair_is_flagged_and_the_transcript_is_kept_out_of_fields() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO)], "reject")
    _revise(resolver, [{"id": "C1", "response": "hold", "note": "x"}], "apply")
    resolver["fable"].enqueue("My ruling.", recommendation="apply")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, resolver=resolver)
    assert outcome.fields.wire()["debate"]["adjudicator_independent"] is False
    assert "not third-party" in outcome.fields.wire()["note"]
    assert "transcript" not in outcome.fields.wire()
    assert outcome.transcript is not None
    assert SCENARIO in outcome.transcript and "## adjudicator" in outcome.transcript


async def test_failing_adjudicator_falls_back_down_the_ladder() -> None:
    resolver = _resolver()
    resolver.add(FakeOracle("codex")).enqueue_error(UpstreamError("codex crashed"))
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO)], "reject")
    _revise(resolver, [{"id": "C1", "response": "revise", "note": "shard"}], "apply")
    resolver["fable"].enqueue("Fable ruling.", recommendation="apply")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="codex", resolver=resolver)
    roles = [(t["role"], t["model"], t["status"]) for t in outcome.fields.wire()["turns"]][-2:]
    assert roles == [("adjudicator", "codex", "error"), ("adjudicator", "fable", "ok")]
    assert outcome.fields.wire()["answered_by"] == "fable"


@pytest.mark.parametrize("role", ["proposer", "opponent", "adjudicator"])
async def test_groups_are_refused_in_debate_roles(role: str) -> None:
    mctx, _ = make_mctx()
    with pytest.raises(BadArgs, match="group"):
        await run_debate("Q?", "", mctx, resolver=_resolver(), **{role: "twin"})


async def test_rounds_must_be_one_or_two() -> None:
    mctx, _ = make_mctx()
    with pytest.raises(BadArgs):
        await run_debate("Q?", "", mctx, rounds=3, resolver=_resolver())


async def test_failing_proposer_fails_the_debate() -> None:
    resolver = _resolver()
    resolver["fable"].enqueue_error(UpstreamError("down"))
    mctx, _ = make_mctx()
    with pytest.raises(UpstreamError):
        await run_debate("Q?", "", mctx, resolver=resolver)


async def test_debate_deadline_is_a_timeout_with_partial_turns() -> None:
    resolver = _resolver()
    _propose(resolver)
    resolver["minimax"].enqueue_hang()
    mctx, _ = make_mctx()
    with anyio.fail_after(5), pytest.raises(OracleTimeout) as info:
        await run_debate("Q?", "", mctx, adjudicator="opus", resolver=resolver, deadline=0.3)
    assert [t["role"] for t in info.value.extra["turns"]] == ["proposer"]


@pytest.mark.parametrize("verdict", ["maintain", "uphold", "stand", "still contest", "unclear"])
async def test_rebuttal_keeping_the_contest_without_a_reason_never_converges(verdict: str) -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO),
                        concede("C2", "agreed, writes are rare in the logs")], "apply")
    _revise(resolver, [{"id": "C1", "response": "revise", "note": "shard the lock"}], "apply")
    _dispose(resolver, [{"id": "C1", "disposition": verdict}], "apply")
    resolver["opus"].enqueue(f"Shard it.\n\n{block('ruling', {'winner': 'A'})}", recommendation="apply")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", rounds=2, resolver=resolver)
    debate = outcome.fields.wire()["debate"]
    assert debate["resolution"] != "converged"
    assert debate["claims"][0]["rebuttal"] == "contest" and debate["claims"][0]["status"] == "contested"
    assert [t["role"] for t in outcome.fields.wire()["turns"]][-1] == "adjudicator"


async def test_failed_revision_is_adjudicated_not_a_stalemate() -> None:
    resolver = _resolver()
    _propose(resolver)
    _dispose(resolver, [contest("C1", SCENARIO)], "reject")
    resolver["fable"].enqueue_error(UpstreamError("revision down"))
    resolver["opus"].enqueue(f"Reject.\n\n{block('ruling', {'winner': 'B'})}", recommendation="reject")
    mctx, _ = make_mctx()
    outcome = await run_debate("Lock design?", "", mctx, adjudicator="opus", resolver=resolver)
    assert outcome.fields.wire()["debate"]["resolution"] == "adjudicated"
    assert outcome.fields.wire()["answered_by"] == "opus"
