"""How one model's part in a multi-model call is reported: council sources, chain stages, debate turns.

Each is a :class:`~ask_fable.contract.StepOutcome` built from a :class:`MemberOutcome`. A failure's
``detail`` is redacted and bounded by dropping its middle, so both the start (what failed) and the
end (often why: a provider's nested message, a traceback's last line) stay visible.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from ask_fable.backends.pricing import CostSource
from ask_fable.config import Settings
from ask_fable.core.modes.base import MemberOutcome
from ask_fable.redact import bounded
from ask_fable.values import Confidence, Recommendation

#: Characters of a failed step's ``detail`` shown in a multi-model result.
DETAIL_LIMIT = 1200


class StepFields(TypedDict):
    """The fields of :class:`~ask_fable.contract.StepOutcome` that come from the member's outcome."""

    status: str
    recommendation: Recommendation | None
    confidence: Confidence | None
    kind: str | None
    detail: str | None
    hint: str | None
    elapsed_ms: int
    cost_usd: float | None
    cost_source: CostSource | None


def step_fields(outcome: MemberOutcome, settings: Settings) -> StepFields:
    """The :class:`~ask_fable.contract.StepOutcome` fields every council source, chain stage and
    debate turn carries."""
    side = outcome.sidecar
    return {
        "status": outcome.status,
        "recommendation": side.recommendation if side else None,
        "confidence": side.confidence if side else None,
        "kind": outcome.kind,
        "detail": bounded(outcome.detail, DETAIL_LIMIT, settings) if outcome.detail else None,
        "hint": outcome.hint,
        "elapsed_ms": outcome.elapsed_ms,
        "cost_usd": outcome.cost_usd,
        "cost_source": outcome.cost_source,
    }


#: A model in one of these states could not run at all (nothing was asked): a change of set-up
#: (a key, a login, a plan, an installed CLI) brings it back.
CANNOT_RUN = frozenset({"not_configured", "binary_missing"})


def setup_fixes(outcomes: Iterable[MemberOutcome]) -> str | None:
    """How to bring back the models that could not run: each distinct fix (the error's hint, else its
    detail, which then names the fix) after the models it applies to; ``None`` when every model ran."""
    fixes: dict[str, list[str]] = {}
    for outcome in outcomes:
        if outcome.status in CANNOT_RUN:
            fix = outcome.hint or outcome.detail or outcome.status
            tokens = fixes.setdefault(fix, [])
            if outcome.token not in tokens:
                tokens.append(outcome.token)
    if not fixes:
        return None
    return "; ".join(f"{', '.join(tokens)}: {fix}" for fix, tokens in fixes.items())


def setup_action(outcomes: Iterable[MemberOutcome]) -> str | None:
    """The next action when some models could not run: the fix for each (see :func:`setup_fixes`)."""
    fixes = setup_fixes(outcomes)
    return None if fixes is None else f"Some models could not run; to bring them back — {fixes}."
