"""Value models every layer shares: what a provider reports a call used, and the sidecar a model
appends to its answer.

Backends fill :class:`Usage`, the core parses the :class:`Sidecar` (``core/sidecar.py``), and the
result contract (``contract.py``) carries both to the caller; :data:`SENT_WHOLE` marks a view a
result sends with its nulls. Nothing here does I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, field_validator

Recommendation = Literal["apply", "investigate", "reject", "needs_more_context"]
Confidence = Literal["high", "medium", "low"]


def _as_built(value: object) -> object:
    return value


#: Marks a typed-dict field of a result (``Annotated[View, SENT_WHOLE]``) that is sent as built,
#: every key included: there a ``null`` means "not known" (no latency sample, no price, no default
#: model), which the results' ``exclude_none`` dump would otherwise drop.
SENT_WHOLE = PlainSerializer(_as_built)


class Usage(BaseModel):
    """Token usage and cost as the provider reported them (absent fields were not reported)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None


class Sidecar(BaseModel):
    """What the model recommends, how sure it is, and what it still needs to see."""

    model_config = ConfigDict(extra="ignore")

    recommendation: Recommendation
    confidence: Confidence = "medium"
    needs_context: list[str] = Field(default_factory=list)

    @field_validator("recommendation", "confidence", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(value, str) else value

    @field_validator("needs_context", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [value] if value.strip() else []
        return [str(v) for v in value if str(v).strip()]
