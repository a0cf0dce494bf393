"""The debate: a proposer's claims ledger attacked by an opponent, revised, then ruled on.

Turns (each sequential, all under ``chain_deadline(turns)``)::

    proposer   commits to a position and lists its load-bearing claims       (```claims```)
    opponent   concedes each claim or contests it with a failure scenario   (```dispositions```)
    revision   the proposer concedes, revises or holds each contested claim (```revisions```)
    rebuttal   rounds=2 only: the opponent concedes or maintains each contest
    ruling     a third party, shown the pair anonymized, rules on the merits (```ruling```)

The resolution is computed here from the ledger (see :func:`consensus.debate_resolution`), not
asked of a model. A conceded or converged debate needs no ruling. An unavailable opponent degrades
to a single critic pass. Replies that break the expected structure are tolerated: claims fall back
to the answer's list items, unparseable dispositions leave claims ``unaddressed``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import anyio

from ask_fable.config import Settings
from ask_fable.contract import DebateBlock, DebateFields, DebateTurn, LedgerClaim
from ask_fable.core.modes.base import MemberOutcome, ModeContext, ModeOutcome, outcome_error
from ask_fable.core.modes.consensus import DebateResolution, debate_resolution, downgrade, material_split
from ask_fable.core.modes.council import scrub_names
from ask_fable.core.modes.role_prompts import (
    DEBATE_ADJUDICATOR,
    DEBATE_OPPONENT,
    DEBATE_PROPOSER,
    DEBATE_REBUTTAL,
    DEBATE_REVISE,
    DEBATE_SINGLE_CRITIC,
)
from ask_fable.core.modes.steps import setup_action, step_fields
from ask_fable.core.prompts import system_prompt, user_prompt
from ask_fable.core.sidecar import parse_sidecar
from ask_fable.core.tokens import (
    CLAUDE_FALLBACKS,
    Resolver,
    dedupe,
    default_resolver,
    resolve_oracle,
    single_token,
)
from ask_fable.errors import BadArgs, OracleTimeout
from ask_fable.stores.records import ModeAudit

LEDGER_TAGS = ("claims", "dispositions", "revisions", "ruling")
_FENCE = re.compile(r"```[ \t]*(?P<tag>[\w-]*)[ \t]*\n(?P<body>.*?)\n?```", re.DOTALL)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(?P<text>\S.{10,})$", re.MULTILINE)
MAX_CLAIMS = 8
#: A contest scenario shorter than this is not a concrete failure scenario.
MIN_SCENARIO_CHARS = 40


@dataclass
class Claim:
    """One load-bearing claim and everything said about it."""

    id: str
    claim: str
    disposition: str = "unaddressed"  # concede | contest | unaddressed (opponent, first pass)
    scenario: str = ""
    response: str | None = None  # concede | revise | hold (proposer revision)
    note: str = ""
    rebuttal: str | None = None  # concede | contest (opponent, rounds=2)
    rebuttal_text: str = ""

    @property
    def status(self) -> str:
        """conceded | withdrawn | revised | resolved | contested | unaddressed."""
        if self.disposition == "concede":
            return "conceded"
        if self.disposition != "contest":
            return "unaddressed"
        if self.rebuttal == "concede":
            return "resolved"
        if self.response == "concede":
            return "withdrawn"
        if self.rebuttal == "contest":
            return "contested"
        return "revised" if self.response == "revise" else "contested"

    def ledger_entry(self) -> LedgerClaim:
        """The ledger line returned in the debate block."""
        return LedgerClaim(id=self.id, claim=self.claim, disposition=self.disposition, response=self.response,
                           rebuttal=self.rebuttal, status=self.status)


# --- parsing ---------------------------------------------------------------------------------------


def _json_blocks(text: str) -> list[tuple[str, Any]]:
    """Every fenced block that parses as JSON, with its tag (lower-cased)."""
    found = []
    for match in _FENCE.finditer(text):
        try:
            found.append((match.group("tag").lower(), json.loads(match.group("body"))))
        except ValueError:
            continue
    return found


def ledger_block(text: str, tag: str) -> Any:
    """The JSON of the block tagged ``tag``; failing that, of a block holding ``{tag: …}``, or of an
    untagged/json block with the right shape (a list for ledgers, an object for a ruling)."""
    blocks = _json_blocks(text)
    for found_tag, data in blocks:
        if found_tag == tag:
            return data.get(tag, data) if isinstance(data, dict) and tag != "ruling" else data
    for found_tag, data in blocks:
        if isinstance(data, dict) and tag in data and found_tag in ("", "json"):
            return data[tag]
    want = dict if tag == "ruling" else list
    for found_tag, data in blocks:
        if found_tag in ("", "json") and isinstance(data, want):
            return data
    return None


def strip_ledger_blocks(text: str) -> str:
    """``text`` without its claims/dispositions/revisions/ruling blocks (the sidecar stays)."""

    def drop(match: re.Match[str]) -> str:
        return "" if match.group("tag").lower() in LEDGER_TAGS else match.group(0)

    return re.sub(r"\n{3,}", "\n\n", _FENCE.sub(drop, text)).strip()


def _norm_id(value: Any, fallback: int) -> str:
    text = str(value).strip().upper() if value not in (None, "") else ""
    if text.isdigit():
        text = f"C{text}"
    return text or f"C{fallback}"


def parse_claims(answer: str) -> list[Claim]:
    """The proposer's claims: its ``claims`` block, else its list items, else the whole position."""
    data = ledger_block(answer, "claims")
    claims: list[Claim] = []
    if isinstance(data, list):
        for index, item in enumerate(data, start=1):
            if isinstance(item, dict):
                text = str(item.get("claim") or item.get("text") or "").strip()
                ident = _norm_id(item.get("id"), index)
            else:
                text, ident = str(item).strip(), f"C{index}"
            if text:
                claims.append(Claim(ident, text))
    if not claims:
        prose = strip_ledger_blocks(parse_sidecar(answer)[0])
        items = [m.group("text").strip() for m in _LIST_ITEM.finditer(prose)]
        claims = [Claim(f"C{i}", text) for i, text in enumerate(items, start=1)]
        if not claims:
            first = prose.strip().split("\n\n", 1)[0].strip()
            claims = [Claim("C1", first[:500] or "the proposed position")]
    return claims[:MAX_CLAIMS]


def _verdict(value: Any, options: dict[str, tuple[str, ...]]) -> str | None:
    text = str(value or "").strip().lower()
    for verdict, prefixes in options.items():
        if text.startswith(prefixes):
            return verdict
    return None


_DISPOSITIONS = {"concede": ("conce", "accept", "agree", "holds"),
                 "contest": ("contest", "disput", "reject", "challeng", "object", "refut")}
#: In a rebuttal, "maintain"/"uphold"/"stand"/"still contest" keep the contest alive.
_REBUTTALS = {"concede": _DISPOSITIONS["concede"],
              "contest": (*_DISPOSITIONS["contest"], "maintain", "uphold", "stand", "still")}
_RESPONSES = {"concede": ("conce", "withdraw", "drop", "accept"),
              "revise": ("revis", "narrow", "amend", "fix", "modif"),
              "hold": ("hold", "maintain", "defend", "keep", "stand")}


def _items_by_claim(data: Any, claims: list[Claim]) -> dict[str, dict[str, Any]]:
    """Ledger entries keyed by claim id (entries without ids map to claims in order)."""
    if not isinstance(data, list):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            continue
        if item.get("id") not in (None, ""):
            out[_norm_id(item.get("id"), index + 1)] = item
        elif index < len(claims):
            out[claims[index].id] = item
    return out


def apply_dispositions(text: str, claims: list[Claim], *, rebuttal: bool = False) -> bool:
    """Record the opponent's dispositions on ``claims``; False when none could be parsed."""
    items = _items_by_claim(ledger_block(text, "dispositions"), claims)
    for claim in claims:
        item = items.get(claim.id)
        if item is None:
            continue
        scenario = str(item.get("scenario") or item.get("reason") or item.get("note") or "").strip()
        raw = item.get("disposition") or item.get("verdict") or item.get("rebuttal")
        if rebuttal:
            if claim.disposition == "contest":
                # Anything short of a clear concession keeps the contest open.
                claim.rebuttal = _verdict(raw, _REBUTTALS) or "contest"
                claim.rebuttal_text = scenario
            continue
        verdict = _verdict(raw, _DISPOSITIONS)
        if verdict is None and scenario:
            verdict = "contest"
        if verdict:
            claim.disposition, claim.scenario = verdict, scenario
    return bool(items)


def apply_revisions(text: str, claims: list[Claim]) -> bool:
    """Record the proposer's responses to contested claims; False when none could be parsed."""
    items = _items_by_claim(ledger_block(text, "revisions"), claims)
    for claim in claims:
        item = items.get(claim.id)
        if item is None or claim.disposition != "contest":
            continue
        claim.response = _verdict(item.get("response") or item.get("action"), _RESPONSES) or "hold"
        claim.note = str(item.get("note") or item.get("reason") or "").strip()
    return bool(items)


def parse_ruling(text: str) -> tuple[str | None, str | None]:
    """``(winner, decisive_argument)`` from the adjudicator's ``ruling`` block (None when absent)."""
    data = ledger_block(text, "ruling")
    if not isinstance(data, dict):
        return None, None
    winner = str(data.get("winner") or "").strip() or None
    argument = str(data.get("decisive_argument") or data.get("decisive") or "").strip() or None
    return winner, argument


def low_effort(claims: list[Claim], parsed: bool, opponent_text: str) -> bool:
    """True when the opposition did not really test the claims (rules in the module's tests)."""
    if not parsed:
        return len(parse_sidecar(opponent_text)[0]) < 200
    if all(c.disposition == "concede" for c in claims):
        return all(len(c.scenario) < 20 for c in claims)
    return any(c.disposition == "contest" and len(c.scenario) < MIN_SCENARIO_CHARS for c in claims)


# --- prompts ---------------------------------------------------------------------------------------


def _claims_text(claims: list[Claim]) -> str:
    return "\n".join(f"- {c.id}: {c.claim}" for c in claims)


def _ledger_text(claims: list[Claim], *, proposer: str = "proposer", opponent: str = "opponent") -> str:
    lines = []
    for c in claims:
        line = f"- {c.id}: {c.claim}\n  {opponent}: {c.disposition}"
        if c.scenario:
            line += f" — {c.scenario}"
        if c.response:
            line += f"\n  {proposer}: {c.response}" + (f" — {c.note}" if c.note else "")
        if c.rebuttal:
            line += f"\n  {opponent} rebuttal: {c.rebuttal}"
            line += f" — {c.rebuttal_text}" if c.rebuttal_text else ""
        lines.append(line)
    return "\n".join(lines)


def _body(outcome: MemberOutcome, names: list[str]) -> str:
    return scrub_names(strip_ledger_blocks(outcome.answer or ""), names).strip()


def with_confidence(text: str, confidence: str) -> str:
    """``text`` with its sidecar's confidence replaced (unchanged when it has no sidecar)."""
    answer, sidecar = parse_sidecar(text)
    if sidecar is None:
        return text
    data = sidecar.model_dump() | {"confidence": confidence}
    return f"{answer}\n\n```sidecar\n{json.dumps(data)}\n```"


def _turn(role: str, outcome: MemberOutcome, settings: Settings) -> DebateTurn:
    return DebateTurn(role=role, model=outcome.token, **step_fields(outcome, settings))


class _Debate:
    """One debate's state while it runs."""

    def __init__(self, question: str, context: str, mctx: ModeContext, resolver: Resolver) -> None:
        self.question, self.context, self.mctx, self.resolver = question, context, mctx, resolver
        self.turns: list[DebateTurn] = []
        self.transcript: list[str] = []
        self.drift: list[str | None] = []
        self.outcomes: dict[str, MemberOutcome] = {}
        self.names: list[str] = []
        self.step = 0
        self.total = 4

    async def ask(self, role: str, token: str, instructions: str, extra: str) -> MemberOutcome:
        """Ask ``token`` for one turn and record it (turn list, drift, transcript, progress)."""
        oracle = resolve_oracle(token, self.resolver)
        self.names += [oracle.token, oracle.model, oracle.model.rsplit("/", 1)[-1]]
        prompt = user_prompt(self.question, self.context) + (f"\n\n{extra}" if extra else "")
        request = self.mctx.request(system_prompt(instructions), prompt)
        outcome = await self.mctx.call_oracle(oracle, request, role=role)
        self.turns.append(_turn(role, outcome, self.mctx.settings))
        self.outcomes[role] = outcome
        if outcome.ok:
            self.drift.append(outcome.sidecar.recommendation if outcome.sidecar else None)
        body = outcome.reply.text if outcome.reply else f"({outcome.status}: {outcome.detail})"
        self.transcript.append(f"## {role} — {token} ({outcome.model}) — {outcome.status}\n\n{body.strip()}")
        self.step += 1
        await self.mctx.progress(self.step, self.total, f"{role} ({token}): {outcome.status}", echo=False)
        return outcome

    async def rule(self, ladder: list[str], instructions: str, extra: str, role: str) -> MemberOutcome | None:
        """The first usable ruling down ``ladder``, or None."""
        for token in ladder:
            outcome = await self.ask(role, token, instructions, extra)
            if outcome.ok:
                return outcome
        return None


async def run_debate(
    question: str,
    context: str,
    mctx: ModeContext,
    *,
    proposer: str = "fable",
    opponent: str = "minimax",
    adjudicator: str = "fable",
    rounds: int = 1,
    resolver: Resolver | None = None,
    deadline: float | None = None,
) -> ModeOutcome:
    """Stage a debate and decide its resolution from the claims ledger.

    Roles take one model token each (a group such as ``twin`` is ``bad_args``). ``rounds`` is 1 or 2.
    ``deadline`` overrides the wall-clock bound (default ``settings.chain_deadline(turns)``).
    The full transcript is returned in ``ModeOutcome.transcript``, not in the inline fields.
    """
    proposer, opponent, adjudicator = (single_token(t) for t in (proposer, opponent, adjudicator))
    if rounds not in (1, 2):
        raise BadArgs(f"rounds must be 1 or 2, not {rounds}")
    resolver = resolver or default_resolver(mctx.settings)
    state = _Debate(question, context, mctx, resolver)
    state.total = 4 + (rounds - 1)
    deadline = deadline or mctx.settings.chain_deadline(state.total)
    independent = adjudicator not in (proposer, opponent)
    ladder = dedupe([adjudicator, *CLAUDE_FALLBACKS])
    pairing = f"{proposer} vs {opponent}"
    setup = _Setup(pairing, adjudicator, independent, rounds)
    await mctx.progress(0, state.total, f"debate: {pairing}, ruled by {adjudicator}")

    with anyio.move_on_after(deadline) as scope:
        result = await _run(state, proposer, opponent, ladder, rounds, setup)
    if scope.cancelled_caught:
        raise OracleTimeout(
            f"the debate ran past its {deadline:.0f}s wall-clock bound after {len(state.turns)} turns",
            mode="debate", turns=[turn.wire() for turn in state.turns],
        )
    return result


@dataclass(frozen=True)
class _Setup:
    """Who debates whom, who rules, and for how many rounds: the start of every debate block."""

    pairing: str
    adjudicator: str
    independent: bool
    rounds: int

    def block(self, resolution: DebateResolution, claims: list[Claim], *, contested: int,
              low_effort_opposition: bool = False, material_disagreement: bool = False) -> DebateBlock:
        """The debate block of a debate that ended with ``resolution``."""
        return DebateBlock(pairing=self.pairing, adjudicator=self.adjudicator,
                           adjudicator_independent=self.independent, rounds=self.rounds,
                           resolution=resolution, claims=[c.ledger_entry() for c in claims],
                           contested_claims_remaining=contested, low_effort_opposition=low_effort_opposition,
                           material_disagreement=material_disagreement)


async def _run(
    state: _Debate, proposer: str, opponent: str, ladder: list[str], rounds: int, setup: _Setup
) -> ModeOutcome:
    first = await state.ask("proposer", proposer, DEBATE_PROPOSER, "")
    if not first.ok or first.reply is None:
        if first.status == "refused" and first.reply is not None:
            return ModeOutcome(text=first.reply.text, model=first.model, reply=first.reply,
                               provider=first.provider, fields=DebateFields(mode="debate", turns=state.turns))
        raise outcome_error(first)
    claims = parse_claims(first.answer or "")
    latest = first
    names = state.names
    position = f"## Position\n{_body(first, names)}\n\n## Claims\n{_claims_text(claims)}"

    against = await state.ask("opponent", opponent, DEBATE_OPPONENT, position)
    notes: list[str] = []
    if not against.ok:
        state.total = state.step + 1
        critic_extra = f"## Position A\n{_body(first, state.names)}\n\n## Claims\n{_claims_text(claims)}"
        critic = await state.rule(ladder, DEBATE_SINGLE_CRITIC, critic_extra, "critic")
        final = critic or first
        if critic is None:
            notes.append("no critic answered; the proposer's position stands unreviewed")
        block = setup.block("degraded_single_critic", claims, contested=0)
        notes.insert(0, f"the opponent ({opponent}) was unavailable ({against.kind or against.status}); "
                        "a single critic pass replaced the debate")
        return await _finish(state, final, block, notes, decisive=None, downgrade_confidence=False)

    parsed = apply_dispositions(against.answer or "", claims)
    if not parsed:
        notes.append("the opponent's dispositions could not be parsed; its critique is weighed as prose")
    first_pass = [c.disposition for c in claims]
    lazy = low_effort(claims, parsed, against.answer or "")
    moved = False
    contested = [c for c in claims if c.disposition == "contest"]
    opponent_latest = against
    revision_failed = False
    if contested:
        revision_extra = (
            f"## Your earlier position\n{_body(first, state.names)}\n\n"
            f"## Claims and the opponent's dispositions\n{_ledger_text(claims, opponent='opponent')}"
        )
        revision = await state.ask("revision", proposer, DEBATE_REVISE, revision_extra)
        revision_failed = not revision.ok
        if revision.ok:
            latest = revision
            apply_revisions(revision.answer or "", claims)
            moved = any(c.response in ("concede", "revise") for c in contested)
        if rounds == 2:
            rebuttal_extra = (
                f"## The proposer's revised position\n{_body(latest, state.names)}\n\n"
                f"## Ledger so far\n{_ledger_text(claims, opponent='you')}"
            )
            rebuttal = await state.ask("rebuttal", opponent, DEBATE_REBUTTAL, rebuttal_extra)
            if rebuttal.ok:
                opponent_latest = rebuttal
                apply_dispositions(rebuttal.answer or "", claims, rebuttal=True)
                moved = moved or any(c.rebuttal == "concede" for c in contested)

    proposer_rec = latest.sidecar.recommendation if latest.sidecar else None
    opponent_rec = opponent_latest.sidecar.recommendation if opponent_latest.sidecar else None
    statuses = [c.status for c in claims]
    resolution = debate_resolution(first_pass, statuses, moved=moved,
                                   proposer_recommendation=proposer_rec, opponent_recommendation=opponent_rec)
    if resolution == "stalemate" and revision_failed:
        # Nobody dug in: the proposer never got to answer the contests, so a ruling decides.
        resolution = "adjudicated"
    split = material_split([proposer_rec, opponent_rec])

    def ended(how: DebateResolution) -> DebateBlock:
        return setup.block(how, claims, contested=statuses.count("contested"), low_effort_opposition=lazy,
                           material_disagreement=split)

    if resolution in ("conceded", "converged"):
        block = ended(resolution)
        return await _finish(state, latest, block, notes, decisive=None, downgrade_confidence=False)

    state.total = state.step + 1
    ruling_extra = (
        f"## Position A (the proposer's latest)\n{_body(latest, state.names)}\n\n"
        f"## Critic B (the opponent's latest)\n{_body(opponent_latest, state.names)}\n\n"
        f"## Claims ledger\n{_ledger_text(claims, proposer='A', opponent='B')}"
    )
    ruling = await state.rule(ladder, DEBATE_ADJUDICATOR, ruling_extra, "adjudicator")
    if ruling is None:
        notes.append("no adjudicator answered; the proposer's latest position stands, unresolved")
        block = ended("stalemate")
        return await _finish(state, latest, block, notes, decisive=None, downgrade_confidence=True)
    _, decisive = parse_ruling(ruling.answer or "")
    stalemate = resolution == "stalemate"
    return await _finish(state, ruling, ended(resolution), notes, decisive=decisive,
                         downgrade_confidence=stalemate)


async def _finish(
    state: _Debate,
    final: MemberOutcome,
    block: DebateBlock,
    notes: list[str],
    *,
    decisive: str | None,
    downgrade_confidence: bool,
) -> ModeOutcome:
    assert final.reply is not None
    message = f"debate {block.resolution}; answered by {final.token}"
    await state.mctx.progress(state.step, state.step, message)
    text = strip_ledger_blocks(final.reply.text)
    if downgrade_confidence and final.sidecar is not None:
        text = with_confidence(text, downgrade(final.sidecar.confidence))
    block.recommendation_drift, block.decisive_argument = state.drift, decisive
    fields = DebateFields(mode="debate", answered_by=final.token, turns=state.turns, debate=block)
    if not block.adjudicator_independent:
        notes.append(f"the adjudicator ({block.adjudicator}) is one of the debating pair, so the ruling "
                     "is not third-party; pick another adjudicator for an independent one")
    if notes:
        fields.note = "; ".join(notes)
    action = setup_action(state.mctx.members)
    if action is not None:
        fields.recommended_next_action = action
    ledger = "\n".join(f"- {c.id} [{c.status}]: {c.claim}" for c in block.claims)
    transcript = (
        f"# Debate: {block.pairing} (adjudicator {block.adjudicator}, rounds {block.rounds})\n\n"
        f"Resolution: {block.resolution}\n\n" + "\n\n".join(state.transcript)
        + (f"\n\n## Claims ledger\n{ledger}" if ledger else "")
    )
    return ModeOutcome(
        text=text, model=final.model, reply=final.reply, provider=final.provider, fields=fields,
        transcript=transcript,
        audit=ModeAudit(resolution=block.resolution, turns=len(state.turns)),
    )
