"""What a call will cost before it runs: the backend calls it plans, each priced at a typical answer
and at the most its backend may write.

Prompt tokens are counted locally (``backends/pricing.count_tokens``: UTF-8 bytes over three, a
little over what tokenizers count for English). The output of each planned call is priced twice:
at :data:`TYPICAL_ANSWER_TOKENS` (``typical_usd``) and at the backend's ``max_tokens``
(``max_usd``), the most it can cost if the price table is right. A later step's prompt holds the
earlier answers (a synthesizer reads every member's, a chain stage the stages before it), counted
at the typical length. Retries and fallbacks are not planned: a synthesizer that fails and falls
back to another costs more than its estimate. A model no source prices is planned at the
conservative ``unknown_price_*`` rates and marked ``unknown``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from ask_fable.backends.base import Oracle, OracleRequest
from ask_fable.backends.pricing import PriceBook, count_tokens
from ask_fable.contract import CostEstimate, PlannedCost
from ask_fable.errors import AskFableError

#: Tokens of a typical answer (sidecar included), the low end of an estimate.
TYPICAL_ANSWER_TOKENS = 1500


@dataclass(frozen=True)
class PlannedCall:
    """One backend call a call plans to make."""

    oracle: Oracle
    role: str
    prompt_tokens: int
    max_output_tokens: int
    #: False when the backend cannot run (no key, no CLI): it will not be asked, and costs nothing.
    available: bool = True


#: Plans a call's backend calls from its question and its context (``context_ref`` resolved).
Planner = Callable[[str, str], Awaitable[list[PlannedCall]]]


def planned(oracle: Oracle, role: str, system: str, prompt: str, *, earlier_answers: int = 0,
            timeout: float = 60.0) -> PlannedCall:
    """A :class:`PlannedCall` of ``oracle`` sent ``system`` and ``prompt`` plus ``earlier_answers``
    typical answers."""
    request = OracleRequest(system=system, prompt=prompt, timeout=timeout)
    try:
        oracle.ensure_available()
        available = True
    except AskFableError:
        available = False
    tokens = count_tokens(system) + count_tokens(prompt) + earlier_answers * TYPICAL_ANSWER_TOKENS
    return PlannedCall(oracle, role, tokens, oracle.reply_tokens(request), available)


@dataclass(frozen=True)
class Estimate:
    """A priced plan: each call's range and the totals."""

    calls: list[PlannedCost]
    typical_usd: float
    max_usd: float
    #: What a key's budget sets aside for the call: ``max_usd``, unknown prices at the conservative rate.
    budget_usd: float
    unknown: bool

    def result(self, over_budget: list[str] | None = None) -> CostEstimate:
        """The ``estimate`` field of a result."""
        return CostEstimate(calls=self.calls, typical_usd=round(self.typical_usd, 6),
                            max_usd=round(self.max_usd, 6),
                            cost_source="unknown" if self.unknown else "estimated",
                            over_budget=over_budget or None)


def _priced(call: PlannedCall, typical_usd: float, max_usd: float,
            price_source: Literal["estimated", "unknown"] | None = None,
            available: bool | None = None) -> PlannedCost:
    oracle = call.oracle
    return PlannedCost(token=oracle.token, model=oracle.model, provider=oracle.provider, role=call.role,
                       prompt_tokens=call.prompt_tokens, max_output_tokens=call.max_output_tokens,
                       typical_usd=typical_usd, max_usd=max_usd, price_source=price_source,
                       available=available)


def price_plan(plan: list[PlannedCall], prices: PriceBook) -> Estimate:
    """Each planned call at a typical answer and at its backend's most, and the totals."""
    calls: list[PlannedCost] = []
    typical_total = max_total = 0.0
    unknown = False
    for call in plan:
        oracle = call.oracle
        if not call.available:
            calls.append(_priced(call, 0.0, 0.0, available=False))
            continue
        typical_out = min(TYPICAL_ANSWER_TOKENS, call.max_output_tokens)
        typical = prices.price(oracle.provider, oracle.model, call.prompt_tokens, typical_out)
        most = None if typical is None else \
            prices.price(oracle.provider, oracle.model, call.prompt_tokens, call.max_output_tokens)
        source: Literal["estimated", "unknown"] = "estimated"
        if typical is None or most is None:
            unknown, source = True, "unknown"
            typical = prices.conservative(call.prompt_tokens, typical_out)
            most = prices.conservative(call.prompt_tokens, call.max_output_tokens)
        calls.append(_priced(call, round(typical, 6), round(most, 6), source))
        typical_total += typical
        max_total += most
    return Estimate(calls, typical_total, max_total, max_total, unknown)
