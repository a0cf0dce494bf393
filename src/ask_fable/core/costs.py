"""What a whole call cost: the sum over every backend call it made.

A council's members, its synthesizer and any synthesizer it fell back to, a chain's stages and
fallback, a debate's turns: each is one :class:`~ask_fable.core.modes.base.MemberOutcome`, priced as
it came back (``backends/pricing.py``). The call's ``cost_usd`` and ``usage`` add them up, and its
``cost_source`` says how far to trust the sum: ``reported`` (every part priced by its provider),
``estimated`` (every part priced from tokens and a price table), ``mixed``, or ``unknown`` (some part
could not be priced: ``cost_usd`` then counts only the parts that could, a lower bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ask_fable.backends.pricing import CallCostSource, combined_source
from ask_fable.core.modes.base import MemberOutcome
from ask_fable.values import Usage


@dataclass(frozen=True)
class CallCost:
    """A call's summed cost, usage and the source of its figures."""

    cost_usd: float | None
    source: CallCostSource | None
    #: The summed token counts and cost; None when no call reported any.
    usage: Usage | None
    #: What the key's daily budget counts: unknown parts at the conservative rate.
    budget_usd: float


def _sum(values: list[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def call_cost(members: Sequence[MemberOutcome]) -> CallCost:
    """The sum over ``members`` (every backend call of one call)."""
    priced = [m for m in members if m.priced is not None]
    known = [m.cost_usd for m in priced if m.cost_usd is not None]
    usages = [m.reply.usage for m in members if m.reply is not None and m.reply.usage is not None]
    cost = round(sum(known), 10) if known else None
    counts = (_sum([u.input_tokens for u in usages]), _sum([u.output_tokens for u in usages]),
              _sum([u.reasoning_tokens for u in usages]))
    usage = None if cost is None and counts == (None, None, None) else \
        Usage(input_tokens=counts[0], output_tokens=counts[1], reasoning_tokens=counts[2], cost_usd=cost)
    source = combined_source([m.priced.source for m in priced if m.priced is not None])
    return CallCost(cost_usd=cost, source=source, usage=usage,
                    budget_usd=round(sum(m.budget_usd for m in members), 10))
