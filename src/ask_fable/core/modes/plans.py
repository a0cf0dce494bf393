"""The backend calls each mode plans to make, for an estimate before anything runs.

Each plan follows its mode's happy path: every council member that can run and, when two or more
can, the first synthesizer of the ladder that can run; every chain stage; a debate's proposer,
opponent, revision, rebuttal (two rounds) and adjudicator. Prompts are composed as the mode composes
them, with earlier answers counted at the typical length (``core/estimate.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ask_fable.backends.base import Oracle
from ask_fable.core.estimate import PlannedCall, planned
from ask_fable.core.modes.role_prompts import (
    CHAIN_CRITIQUE,
    CHAIN_DECIDE,
    CHAIN_DRAFT,
    COUNCIL_SYNTHESIZER,
    DEBATE_ADJUDICATOR,
    DEBATE_OPPONENT,
    DEBATE_PROPOSER,
    DEBATE_REBUTTAL,
    DEBATE_REVISE,
)
from ask_fable.core.prompts import system_prompt, user_prompt
from ask_fable.core.tokens import CLAUDE_FALLBACKS, Resolver, dedupe, resolve_oracle


def plan_single(oracle: Oracle, question: str, context: str, *, history_tokens: int = 0) -> list[PlannedCall]:
    """One answer from ``oracle`` (``history_tokens``: a conversation's earlier turns it is sent)."""
    call = planned(oracle, "answer", system_prompt(), user_prompt(question, context))
    if history_tokens:
        call = PlannedCall(call.oracle, call.role, call.prompt_tokens + history_tokens,
                           call.max_output_tokens, call.available)
    return [call]


def plan_council(question: str, context: str, tokens: Sequence[str], ladder: Sequence[str],
                 resolver: Resolver) -> list[PlannedCall]:
    """The members, then the synthesis of their answers."""
    prompt = user_prompt(question, context)
    members = [planned(resolve_oracle(token, resolver), "member", system_prompt(), prompt)
               for token in tokens]
    answering = sum(call.available for call in members)
    if answering < 2:
        return members
    for token in ladder:
        synth = planned(resolve_oracle(token, resolver), "synthesizer", system_prompt(COUNCIL_SYNTHESIZER),
                        prompt, earlier_answers=answering)
        if synth.available:
            return [*members, synth]
    return members


def plan_chain(question: str, context: str, tokens: Sequence[str], resolver: Resolver) -> list[PlannedCall]:
    """Each stage: the first drafts, middle ones critique the latest draft, the last reads them all."""
    prompt = user_prompt(question, context)
    count = len(tokens)
    calls: list[PlannedCall] = []
    for index, token in enumerate(tokens):
        oracle = resolve_oracle(token, resolver)
        if index == 0:
            calls.append(planned(oracle, "draft", system_prompt(CHAIN_DRAFT), prompt))
        elif index < count - 1:
            calls.append(planned(oracle, "critique", system_prompt(CHAIN_CRITIQUE), prompt,
                                 earlier_answers=1))
        else:
            calls.append(planned(oracle, "decide", system_prompt(CHAIN_DECIDE), prompt,
                                 earlier_answers=index))
    return calls


def plan_debate(question: str, context: str, proposer: str, opponent: str, adjudicator: str, rounds: int,
                resolver: Resolver) -> list[PlannedCall]:
    """Proposer, opponent, revision, rebuttal when two rounds, then the first adjudicator that can run."""
    prompt = user_prompt(question, context)
    pro, con = resolve_oracle(proposer, resolver), resolve_oracle(opponent, resolver)
    calls = [planned(pro, "proposer", system_prompt(DEBATE_PROPOSER), prompt),
             planned(con, "opponent", system_prompt(DEBATE_OPPONENT), prompt, earlier_answers=1),
             planned(pro, "revision", system_prompt(DEBATE_REVISE), prompt, earlier_answers=2)]
    if rounds == 2:
        calls.append(planned(con, "rebuttal", system_prompt(DEBATE_REBUTTAL), prompt, earlier_answers=3))
    for token in dedupe([adjudicator, *CLAUDE_FALLBACKS]):
        ruling = planned(resolve_oracle(token, resolver), "adjudicator", system_prompt(DEBATE_ADJUDICATOR),
                         prompt, earlier_answers=len(calls))
        if ruling.available:
            calls.append(ruling)
            break
    return calls
