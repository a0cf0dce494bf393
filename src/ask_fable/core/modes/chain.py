"""The chain: one question threaded through an ordered pipeline, draft → critique → decide.

Stage 1 drafts. Each middle stage solves independently first and then critiques the latest
surviving draft before extending it (so it does not anchor on it). The final stage decides,
seeing every surviving stage anonymized as peers. A stage that fails or refuses is skipped and
recorded; when the final stage fails, ``fable`` (then ``opus``) reconciles the survivors and a
``fallback`` note says so. The whole chain runs under ``chain_deadline(n)``; running out of time
is a ``timeout`` error that carries the stages collected so far.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from ask_fable.config import Settings
from ask_fable.contract import ChainFields, ChainRole, ChainStage
from ask_fable.core.modes.base import MemberOutcome, ModeContext, ModeOutcome, outcome_error
from ask_fable.core.modes.consensus import material_split
from ask_fable.core.modes.council import identity_names, panel_text, scrub_names
from ask_fable.core.modes.role_prompts import CHAIN_CRITIQUE, CHAIN_DECIDE, CHAIN_DRAFT, CHAIN_FALLBACK
from ask_fable.core.modes.steps import setup_action, setup_fixes, step_fields
from ask_fable.core.prompts import system_prompt, user_prompt
from ask_fable.core.tokens import CLAUDE_FALLBACKS, Resolver, default_resolver, parse_pipeline, resolve_oracle
from ask_fable.errors import ErrorFields, OracleTimeout, UpstreamError, hinted
from ask_fable.stores.records import ModeAudit


def _stage_label(index: int) -> str:
    return f"Peer {index + 1}"


def stage_entry(
    stage: int, token: str, role: ChainRole, outcome: MemberOutcome, settings: Settings
) -> ChainStage:
    """The ``stages`` entry for one stage."""
    return ChainStage(stage=stage, model=token, role=role, **step_fields(outcome, settings))


def _stage_prompt(
    question: str, context: str, role: ChainRole, survivors: list[MemberOutcome], names: list[str]
) -> tuple[str, str]:
    """``(system, prompt)`` for a stage given the answers that survived so far."""
    base = user_prompt(question, context)
    if role == "draft" or not survivors:
        return system_prompt(CHAIN_DRAFT), base
    if role == "critique":
        draft = scrub_names(survivors[-1].answer or "", names)
        return system_prompt(CHAIN_CRITIQUE), f"{base}\n\n## Previous draft\n{draft.strip()}"
    instructions = CHAIN_FALLBACK if role == "fallback" else CHAIN_DECIDE
    peers = panel_text(survivors, names, label=_stage_label)
    return system_prompt(instructions), f"{base}\n\n## Earlier stages (anonymized, in order)\n{peers}"


def _role_for(index: int, count: int) -> ChainRole:
    if index == count - 1:
        return "decide"
    return "draft" if index == 0 else "critique"


def _failed(tokens: list[str], stages: list[ChainStage], answered: int) -> ErrorFields:
    """What a chain that gave no answer still reports: its pipeline and the stages it ran."""
    return {"mode": "chain", "pipeline": tokens, "stages": [stage.wire() for stage in stages],
            "answered": answered, "requested": len(tokens)}


async def run_chain(
    question: str,
    context: str,
    pipeline: str | Sequence[str],
    mctx: ModeContext,
    *,
    resolver: Resolver | None = None,
    deadline: float | None = None,
) -> ModeOutcome:
    """Run ``pipeline`` (``"m3 > glm > fable"`` or a list; groups expand in place) stage by stage.

    ``deadline`` overrides the wall-clock bound (default ``settings.chain_deadline(stages)``).
    """
    tokens = parse_pipeline(pipeline)
    resolver = resolver or default_resolver(mctx.settings)
    count = len(tokens)
    deadline = deadline or mctx.settings.chain_deadline(count)
    stages: list[ChainStage] = []
    survivors: list[MemberOutcome] = []
    drift: list[str | None] = []
    final: MemberOutcome | None = None
    fallback_note: str | None = None
    timed_out = True
    total_steps = count + 1
    await mctx.progress(0, total_steps, f"chain: {' > '.join(tokens)}")

    with anyio.move_on_after(deadline):
        for index, token in enumerate(tokens):
            oracle = resolve_oracle(token, resolver)
            role = _role_for(index, count)
            if role != "draft" and not survivors:
                # Nothing survived to critique or decide on: this stage drafts (or answers outright).
                role = "decide" if role == "decide" else "draft"
            names = identity_names(survivors, [oracle.token, oracle.model])
            system, prompt = _stage_prompt(question, context, role, survivors, names)
            request = mctx.request(system, prompt)
            outcome = await mctx.call_oracle(oracle, request, role=role)
            stages.append(stage_entry(index + 1, token, role, outcome, mctx.settings))
            message = f"stage {index + 1}/{count} {token}: {outcome.status}"
            await mctx.progress(index + 1, total_steps, message, echo=False)
            if outcome.ok:
                survivors.append(outcome)
                drift.append(outcome.sidecar.recommendation if outcome.sidecar else None)
                if index == count - 1:
                    final = outcome

        if final is None and survivors:
            fallback_note = f"the final stage ({tokens[-1]}) failed; "
            for token in [t for t in CLAUDE_FALLBACKS if t != tokens[-1]]:
                oracle = resolve_oracle(token, resolver)
                names = identity_names(survivors, [oracle.token, oracle.model])
                system, prompt = _stage_prompt(question, context, "fallback", survivors, names)
                request = mctx.request(system, prompt)
                outcome = await mctx.call_oracle(oracle, request, role="fallback")
                stages.append(stage_entry(len(stages) + 1, token, "fallback", outcome, mctx.settings))
                if outcome.ok:
                    final = outcome
                    drift.append(outcome.sidecar.recommendation if outcome.sidecar else None)
                    fallback_note += f"{token} reconciled the {len(survivors)} surviving stage(s)"
                    break
            else:
                final = survivors[-1]
                fallback_note += "no fallback synthesizer answered; the last surviving stage stands"
        timed_out = False

    answered = len(survivors)
    fields = ChainFields(mode="chain", pipeline=tokens, stages=stages, answered=answered, requested=count)
    if timed_out:
        raise OracleTimeout(
            f"the chain ran past its {deadline:.0f}s wall-clock bound after {len(stages)} of {count} stages",
            **_failed(tokens, stages, answered),
        )
    if final is None or final.reply is None:
        refusal = next((m for m in mctx.members if m.status == "refused" and m.reply is not None), None)
        if refusal is not None and refusal.reply is not None:
            # Stages declined under the scope contract: the chain's answer is that refusal.
            return ModeOutcome(text=refusal.reply.text, model=refusal.model, reply=refusal.reply,
                               provider=refusal.provider, fields=fields)
        if count == 1:
            raise outcome_error(mctx.members[-1])
        kinds = ", ".join(f"{s.model} ({s.kind or s.status})" for s in stages)
        failed = _failed(tokens, stages, answered)
        failed.update(hinted(setup_fixes(mctx.members)))
        raise UpstreamError(f"no chain stage answered: {kinds}", **failed)

    await mctx.progress(total_steps, total_steps, f"answered by {final.token}")
    fields.answered_by = final.token
    fields.recommendation_drift = drift
    fields.material_drift = material_split(drift)
    if fallback_note:
        fields.fallback = fallback_note
    action = setup_action(mctx.members)
    if action is not None:
        fields.recommended_next_action = action
    return ModeOutcome(
        text=final.reply.text,
        model=final.model,
        reply=final.reply,
        provider=final.provider,
        fields=fields,
        audit=ModeAudit(answered=answered, requested=count, fallback=bool(fallback_note)),
    )
