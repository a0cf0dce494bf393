"""How one model's part in a multi-model call is reported: council sources, chain stages, debate turns.

Each is a :class:`~ask_fable.contract.StepOutcome` built from a :class:`MemberOutcome`. A failure's
``detail`` is redacted and bounded by dropping its middle, so both the start (what failed) and the
end (often why: a provider's nested message, a traceback's last line) stay visible.
"""

from __future__ import annotations

from typing import TypedDict

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
    elapsed_ms: int


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
        "elapsed_ms": outcome.elapsed_ms,
    }
