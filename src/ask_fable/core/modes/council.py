"""The council: the same question to several models at once, then one anonymized synthesis.

Members all run at the same time (``core/modes/fan_out.py``) and each sees only the question and
its context. One wall-clock bound (``council_deadline``) covers the whole council, and the last
third of it is kept for the synthesis: members still running at two thirds of the bound are
cancelled as ``kind: timeout``. Once a quorum has answered, the members still running get a
straggler wait derived from the slowest answer, then are cancelled as ``kind: straggler``. The
answers already in are synthesized in the time that is left (at least that third).
The synthesizer sees the answers as Expert A, B, … with no model names, its own lab's answers
towards the end and Fable's last whoever judges, and is told to pick a side on a material split.
Synthesizers are tried down a ladder (the requested one, then ``fable``, then ``opus``); when every
one fails the best member answer is returned, and every synthesis field says it was not synthesized.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Sequence

import anyio

from ask_fable.backends.registry import registered
from ask_fable.config import Settings
from ask_fable.contract import CouncilFields, SourceEntry, SynthesisAttempt, SynthesisInfo
from ask_fable.core.modes.base import MemberOutcome, ModeContext, ModeOutcome
from ask_fable.core.modes.consensus import (
    council_confidence,
    council_consensus,
    council_next_action,
    majority_recommendation,
)
from ask_fable.core.modes.fan_out import run_members
from ask_fable.core.modes.role_prompts import COUNCIL_SYNTHESIZER
from ask_fable.core.modes.steps import setup_action, setup_fixes, step_fields
from ask_fable.core.prompts import system_prompt, user_prompt
from ask_fable.core.tokens import (
    CLAUDE_FALLBACKS,
    Resolver,
    dedupe,
    default_resolver,
    expand_models,
    is_named_token,
    resolve_oracle,
    single_token,
)
from ask_fable.errors import (
    AskFableError,
    BadArgs,
    ErrorFields,
    NotConfigured,
    OracleTimeout,
    UpstreamError,
    hinted,
)
from ask_fable.stores.records import ModeAudit

_CONFIDENCE_RANK = {"high": 2, "medium": 1, "low": 0}
#: Tokens whose answers go last in the panel whoever synthesizes (the contract's "Fable last").
FABLE_TOKENS = frozenset({"fable", "fable51"})


def expert_label(index: int) -> str:
    """``Expert A`` … ``Expert Z``, then ``Expert AA`` …"""
    letters = string.ascii_uppercase
    label = letters[index % 26]
    if index >= 26:
        label = letters[index // 26 - 1] + label
    return f"Expert {label}"


#: Models reached only through a many-lab provider (OpenRouter, Ollama…), with no backend of their own.
_UNBACKED_PRODUCTS = (r"Qwen",)
_MODEL_WORD = r"(?:model|AI|assistant|LLM|large language model|language model|system|chatbot)"


def _alternation(names: Sequence[str]) -> str:
    """One regex group matching any of ``names`` (regex fragments), longest first."""
    return "(?:" + "|".join(sorted(dict.fromkeys(names), key=len, reverse=True)) + ")"


@functools.cache
def _self_id_patterns(labs: tuple[str, ...],
                      products: tuple[str, ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """A model naming itself or its maker; ordinary technical mentions ("the OpenAI API", "as Google
    recommends", "Claude Code") do not match."""
    lab, product = _alternation(labs), _alternation(products)
    return (
        # "As an OpenAI model", "I am a Google AI", "I'm an Anthropic assistant"
        (re.compile(rf"\b(as|i am|i'm|speaking as)\s+(?:an?\s+)?(?:{lab}|{product})[\w.\-]*"
                    rf"(?:-based)?\s+{_MODEL_WORD}\b", re.I), r"\1 [model]"),
        # "I'm Claude", "I am ChatGPT"
        (re.compile(rf"\b(i am|i'm)\s+(?:an?\s+)?{product}[\w.\-]*", re.I), r"\1 [model]"),
        # "As Claude, I …", "As Gemini I suggest …", "This is Grok."
        (re.compile(rf"\b(as|speaking as|this is)\s+{product}[\w.\-]*(?=\s*[,.!;:]|\s+(?:I|here|speaking)\b)",
                    re.I), r"\1 [model]"),
        # "Gemini here." opening a sentence
        (re.compile(rf"(^|[.!?]\s+|\n\s*){product}[\w.\-]*\s+here\b(?=\s*[,.!:;\-—]|\s*$)", re.I | re.M),
         r"\1[model] here"),
        # "I was made by Anthropic", "I am a model trained by Google DeepMind" (not "BERT was made by Google")
        (re.compile(rf"(\b(?:I was|I am|I'm|I've been)\b[^.!?\n]{{0,80}}?"
                    rf"\b(?:made|created|trained|developed|built|designed)\s+by\s+){lab}", re.I), r"\1[lab]"),
    )


def self_id_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    """The self-identification patterns for every registered backend's labs and products."""
    backends = registered()
    labs = tuple(name for backend in backends for name in backend.labs)
    products = tuple(name for backend in backends for name in backend.products) + _UNBACKED_PRODUCTS
    return _self_id_patterns(labs, products)


def scrub_self_identification(text: str) -> str:
    """Remove a model's self-identification (its own name or its lab's) from ``text``."""
    for pattern, replacement in self_id_patterns():
        text = pattern.sub(replacement, text)
    return text


def scrub_names(text: str, names: Sequence[str]) -> str:
    """Hide what would reveal an expert's identity: model ids become ``[model]`` wherever they appear;
    plain tokens (``gemini``, ``codex``…) only where the model names itself (``As Gemini, …``), so an
    answer about the Gemini API keeps its meaning. Self-identification by product or lab ("I'm
    Claude", "As an OpenAI model", "trained by Google") is removed too."""
    text = scrub_self_identification(text)
    for name in sorted({n for n in names if n and len(n) >= 3}, key=len, reverse=True):
        escaped = re.escape(name)
        if is_named_token(name):
            text = re.sub(rf"\b(as|i am|i'm|this is|speaking as)\s+{escaped}(?![\w/-])", r"\1 [model]", text,
                          flags=re.IGNORECASE)
        else:
            text = re.sub(rf"(?<![\w/-]){escaped}(?![\w/-])", "[model]", text, flags=re.IGNORECASE)
    return text


def order_for(
    members: Sequence[MemberOutcome], families: dict[str, str], own_family: str
) -> list[MemberOutcome]:
    """The panel order a synthesizer reads: other labs first, then the synthesizer's own lab, and
    Fable's answers last whoever synthesizes (stable otherwise)."""

    def place(member: MemberOutcome) -> int:
        if member.token in FABLE_TOKENS:
            return 2
        return 1 if families.get(member.token) == own_family else 0

    return sorted(members, key=place)


def panel_text(
    members: Sequence[MemberOutcome], names: Sequence[str], label: Callable[[int], str] = expert_label
) -> str:
    """The anonymized panel block: each answer under its label with its recommendation."""
    blocks = []
    for index, member in enumerate(members):
        side = member.sidecar
        meta = f" (recommendation: {side.recommendation}, confidence: {side.confidence})" if side else ""
        body = scrub_names(member.answer or "", names)
        blocks.append(f"### {label(index)}{meta}\n{body.strip()}")
    return "\n\n".join(blocks)


def identity_names(members: Sequence[MemberOutcome], extra: Sequence[str] = ()) -> list[str]:
    """Every model id, token and model-id tail that could name a panel member."""
    names: list[str] = list(extra)
    for member in members:
        names += [member.token, member.model, member.token.partition(":")[2]]
        names.append(member.model.rsplit("/", 1)[-1])
    return names


def source_entry(member: MemberOutcome, settings: Settings) -> SourceEntry:
    """The contract's ``sources`` entry for one member."""
    return SourceEntry(
        model=member.model,
        token=member.token,
        provider=member.provider,
        answer=member.answer if member.status in ("ok", "refused") else None,
        **step_fields(member, settings),
        retry_after_s=member.retry_after_s,
    )


def synth_ladder(synthesizer: str | Sequence[str] | None) -> list[str]:
    """The synthesizers to try, in order: the requested one(s), then fable, then opus."""
    if synthesizer is None:
        requested: list[str] = []
    elif isinstance(synthesizer, str):
        requested = [synthesizer]
    else:
        requested = list(synthesizer)
    return dedupe([single_token(token) for token in requested] + list(CLAUDE_FALLBACKS))


def best_member(members: Sequence[MemberOutcome]) -> MemberOutcome:
    """The member answer to fall back on: the majority's view, most confident, first asked."""
    majority = majority_recommendation([m.sidecar.recommendation if m.sidecar else None for m in members])

    def score(member: MemberOutcome) -> tuple[int, int]:
        side = member.sidecar
        agrees = int(side is not None and side.recommendation == majority)
        return agrees, _CONFIDENCE_RANK.get(side.confidence if side else "", -1)

    return max(members, key=score)


def _all_failed(members: list[MemberOutcome], sources: list[SourceEntry]) -> AskFableError:
    """The council's error when no member answered."""
    kinds = {m.kind for m in members}
    extra: ErrorFields = {"mode": "council", "sources": [source.wire() for source in sources],
                          "quorum": f"0/{len(members)}", **hinted(setup_fixes(members))}
    if kinds == {"timeout"}:
        return OracleTimeout("no council member answered before the deadline", **extra)
    if kinds <= {"not_configured", "binary_missing"}:
        return NotConfigured(
            "no council member is configured: " + ", ".join(f"{m.token} ({m.kind})" for m in members), **extra
        )
    return UpstreamError(
        "no council member answered: " + ", ".join(f"{m.token} ({m.kind or m.status})" for m in members),
        **extra,
    )


async def _synthesize(
    question: str,
    context: str,
    answered: list[MemberOutcome],
    families: dict[str, str],
    ladder: list[str],
    resolver: Resolver,
    mctx: ModeContext,
    consensus_note: str,
    deadline_at: float,
) -> tuple[MemberOutcome | None, list[SynthesisAttempt]]:
    """Try each synthesizer down the ladder until ``deadline_at`` (``anyio.current_time()``); return
    the first usable outcome and what was tried."""
    tried: list[SynthesisAttempt] = []
    for token in ladder:
        remaining = deadline_at - anyio.current_time()
        if remaining <= 0:
            tried.append(SynthesisAttempt(token=token, status="timeout", kind="timeout"))
            break
        oracle = resolve_oracle(token, resolver)
        ordered = order_for(answered, families, oracle.family)
        names = identity_names(answered, [oracle.token, oracle.model])
        prompt = (
            f"{user_prompt(question, context)}\n\n## Panel answers (anonymized)\n"
            f"{panel_text(ordered, names)}\n\n## Panel signal\n{consensus_note}"
        )
        request = mctx.request(
            system_prompt(COUNCIL_SYNTHESIZER), prompt, timeout=min(mctx.settings.timeout, remaining)
        )
        with anyio.move_on_after(remaining) as scope:
            outcome = await mctx.call_oracle(oracle, request, role="synthesizer")
        if scope.cancelled_caught:
            tried.append(SynthesisAttempt(token=token, status="timeout", kind="timeout"))
            break
        tried.append(SynthesisAttempt(token=token, status=outcome.status, kind=outcome.kind or None,
                                      hint=outcome.hint or None))
        if outcome.ok and outcome.reply is not None:
            return outcome, tried
    return None, tried


def _next_action(action: str, mctx: ModeContext) -> str:
    """The council's next action, then how to bring back the models that could not run."""
    fixes = setup_action(mctx.members)
    return action if fixes is None else f"{action} {fixes}"


def _single_answer_note(only: MemberOutcome, members: Sequence[MemberOutcome]) -> str:
    """Why a council with one answer ran no synthesis: there was nothing to reconcile, and why the
    other members gave nothing."""
    if len(members) == 1:
        return (f"a council of one member ({only.token}): no synthesis ran, there was nothing to "
                "reconcile; its answer is returned unsynthesized")
    missing = ", ".join(f"{m.token}: {m.kind or m.status}" for m in members if m is not only)
    return (f"only {only.token} answered ({missing}), so no synthesis ran: one answer has nothing to "
            "reconcile; it is returned unsynthesized")


def _consensus_note(consensus: str, material: bool) -> str:
    if material:
        return (
            "The experts split materially (some recommend apply, others reject). Pick the side the "
            "evidence supports and explain why the other side is wrong; do not average them."
        )
    return f"Consensus across the panel's recommendations: {consensus}."


async def run_council(
    question: str,
    context: str,
    tokens: Sequence[str],
    mctx: ModeContext,
    *,
    synthesizer: str | Sequence[str] | None = None,
    resolver: Resolver | None = None,
    over_budget: Sequence[str] = (),
) -> ModeOutcome:
    """Ask ``tokens`` in parallel and synthesize their anonymized answers into one.

    ``tokens`` may contain aliases and groups (expanded in place, duplicates dropped).
    ``synthesizer`` is one token or a ladder of tokens tried before the fable → opus fallbacks.
    ``over_budget`` are members left out so the call fits its ``max_cost_usd``: reported in
    ``sources`` as ``kind: over_budget``, never asked.
    Raises only when no member answered (the error carries ``sources``).
    """
    members_tokens = dedupe(expand_models(list(tokens)))
    if not members_tokens:
        raise BadArgs("a council needs at least one model")
    ladder = synth_ladder(synthesizer)
    requested_synth = ladder[0]
    resolver = resolver or default_resolver(mctx.settings)
    oracles = [resolve_oracle(token, resolver) for token in members_tokens]
    families = {oracle.token: oracle.family for oracle in oracles}
    total_steps = len(oracles) + 1
    # One wall-clock bound for the whole council, synthesis included (see fan_out.member_window).
    started_at = anyio.current_time()
    deadline_at = started_at + mctx.settings.council_deadline
    await mctx.progress(0, total_steps, f"council of {len(oracles)}: {', '.join(members_tokens)}")

    request = mctx.request(system_prompt(), user_prompt(question, context))
    members = await run_members(oracles, request, mctx, total_steps, started_at)
    sources = [source_entry(m, mctx.settings) for m in members] + [
        SourceEntry(model=token, token=token, status="skipped", kind="over_budget",
                    detail="left out so the call fits max_cost_usd (the lowest-ranked members go first)")
        for token in over_budget]
    answered = [m for m in members if m.ok]
    asked = len(members)
    quorum = f"{len(answered)}/{asked}"
    recommendations = [m.sidecar.recommendation if m.sidecar else None for m in answered]
    consensus, material = council_consensus(recommendations)
    if not answered:
        refused = [m for m in members if m.status == "refused" and m.reply is not None]
        if refused:
            # Every member that answered declined: the council's answer is that refusal.
            first = refused[0]
            assert first.reply is not None
            return ModeOutcome(
                text=first.reply.text, model=first.model, reply=first.reply, provider=first.provider,
                fields=CouncilFields(mode="council", sources=sources, quorum=quorum),
                audit=ModeAudit(quorum=quorum),
            )
        raise _all_failed(members, sources)

    envelope = CouncilFields(
        mode="council", sources=sources, consensus=consensus, material_disagreement=material, quorum=quorum,
        effective_models=[m.token for m in answered], degraded=len(answered) < asked,
    )
    if len(answered) == 1:
        only = answered[0]
        assert only.reply is not None
        await mctx.progress(total_steps, total_steps, f"one answer ({only.token}); no synthesis needed")
        envelope.synthesizer = None
        envelope.synthesis = SynthesisInfo(requested=requested_synth, used=None, fallback=False, tried=[])
        envelope.note = _single_answer_note(only, members)
        # One member's answer is one opinion: never more than low confidence.
        envelope.confidence = council_confidence(consensus, 1, asked, "low")
        envelope.recommended_next_action = _next_action(
            council_next_action(recommendations, asked, synthesized=False), mctx)
        return ModeOutcome(
            text=only.reply.text, model=only.model, reply=only.reply, provider=only.provider, fields=envelope,
            audit=ModeAudit(quorum=quorum, consensus=consensus, synth_fallback=False),
        )

    await mctx.progress(len(members), total_steps, f"synthesizing {len(answered)} answers")
    with mctx.trace.step(None, "synthesis", answers=len(answered), requested=requested_synth) as step, \
            step.current():
        synth, tried = await _synthesize(
            question, context, answered, families, ladder, resolver, mctx,
            _consensus_note(consensus, material), deadline_at,
        )
        step.finish(None, used=synth.token if synth is not None else None, attempts=len(tried),
                    fallback=synth is None or synth.token != requested_synth)
    if synth is not None:
        assert synth.reply is not None
        fell_back = synth.token != requested_synth
        info = SynthesisInfo(requested=requested_synth, used=synth.token, fallback=fell_back, tried=tried)
        text, model, reply, provider = synth.reply.text, synth.model, synth.reply, synth.provider
        synth_confidence = synth.sidecar.confidence if synth.sidecar else None
    else:
        best = best_member(answered)
        assert best.reply is not None
        fell_back = True
        info = SynthesisInfo(requested=requested_synth, used=None, fallback=True, tried=tried)
        text, model, reply, provider = best.reply.text, best.model, best.reply, best.provider
        # One member's answer stands in for a synthesis: never more than low confidence.
        synth_confidence = "low"
        why = ("the council's wall-clock bound ran out before a synthesis"
               if tried and tried[-1].status == "timeout" else "every synthesizer failed")
        envelope.note = (
            f"{why} ({', '.join(t.token for t in tried)}); "
            f"returning the best member answer ({best.token}) unsynthesized"
        )
    used = synth.token if synth is not None else None
    await mctx.progress(total_steps, total_steps, f"synthesis: {used or 'none, best member answer'}")
    envelope.synthesizer = used
    envelope.synthesis = info
    envelope.confidence = council_confidence(consensus, len(answered), asked, synth_confidence)
    envelope.recommended_next_action = _next_action(
        council_next_action(recommendations, asked, synthesized=synth is not None), mctx)
    return ModeOutcome(
        text=text, model=model, reply=reply, provider=provider, fields=envelope,
        audit=ModeAudit(quorum=quorum, consensus=consensus, synth_fallback=fell_back),
    )
