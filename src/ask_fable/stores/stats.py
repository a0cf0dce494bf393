"""What ``stats`` means, shared by every audit store: windows, outcomes, attribution, bucket shape.

The figures themselves are aggregated by the audit store in its own query language (SQL over
the audit index today, ``stores/audit_index.py``); this module only says what they count.

Every counted call lands in exactly one outcome (:data:`OUTCOMES`), so ``calls`` is their sum:

    ok              an answer (``context_exhausted`` is a best-effort answer)
    refused         the guard or the model declined
    errors          the backend was asked and failed (``timeout`` included)
    not_configured  a configuration state: a key or setting is missing, or a CLI is not installed
    circuit_open    the circuit breaker shed the call
    needs_context   no model was called: the ``context_ref`` keys did not exist
    cancelled       the caller cancelled it, went away or pressed Ctrl-C before it returned

Only ok, refused and errors are attempts: they alone give latency samples (``avg_ms``, ``p50_ms``,
``p95_ms``), and ``error_rate`` is ``errors / (ok + refused + errors)``. ``cost_usd`` adds up what
each backend call cost as its audit line records it: reported by the provider, else priced from its
tokens (``backends/pricing.py``); a bucket where no call could be priced has ``None``. Council
degradation counters (``degraded``, ``synth_fallback``) ride along.

``by="provider"`` is the per-backend view: one call per entry of a record's ``members`` (a
single-shot record without members counts as one call of its own ``provider``). Every other
view counts one call per record; councils count under their synthesizer (``AuditRecord.model``),
and a call that returned no answer counts under the model it asked (its last member's).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Literal, get_args

from ask_fable.errors import BadArgs
from ask_fable.stores.records import AuditRecord
from ask_fable.stores.views import BucketFigures, StatsBucket

WINDOWS: dict[str, float | None] = {"1h": 3600.0, "24h": 86400.0, "7d": 604800.0, "all": None}
BY_VALUES = ("model", "provider", "tool", "session", "day", "project", "cache", "mode", "tenant")
UNKNOWN = "unknown"


def window_start(window: str, now: float | None = None) -> float | None:
    """Epoch seconds where ``window`` starts (``None`` for ``all``); BadArgs for an unknown window."""
    if window not in WINDOWS:
        raise BadArgs(f"unknown window {window!r}; allowed: {', '.join(WINDOWS)}", allowed=list(WINDOWS))
    span = WINDOWS[window]
    return None if span is None else (time.time() if now is None else now) - span


#: Where a counted call lands, first match wins: ``(outcome, statuses, kinds)``; anything else is
#: one of the ``errors``.
OUTCOME_RULES: tuple[tuple[str, frozenset[str], frozenset[str]], ...] = (
    ("circuit_open", frozenset({"circuit_open"}), frozenset({"circuit_open"})),
    ("not_configured", frozenset({"not_configured", "binary_missing"}),
     frozenset({"not_configured", "binary_missing"})),
    ("ok", frozenset({"ok", "context_exhausted"}), frozenset()),
    ("refused", frozenset({"refused"}), frozenset()),
    ("needs_context", frozenset({"needs_context"}), frozenset()),
    ("cancelled", frozenset({"cancelled"}), frozenset({"cancelled"})),
)
#: The outcome a counted call lands in: each is a figure of a bucket.
Outcome = Literal["ok", "refused", "errors", "not_configured", "circuit_open", "needs_context", "cancelled"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
#: Outcomes where a backend (or the guard) really handled the call: latency and error-rate samples.
ATTEMPTED: frozenset[Outcome] = frozenset({"ok", "refused", "errors"})


def outcome_of(status: str | None, kind: str | None) -> str:
    """The one outcome (:data:`OUTCOMES`) a call with ``status`` and ``kind`` counts as."""
    for outcome, statuses, kinds in OUTCOME_RULES:
        if status in statuses or kind in kinds:
            return outcome
    return "errors"


def attributed_model(record: AuditRecord) -> str | None:
    """The model a record counts under: its answering model, else the last model it asked."""
    if record.model:
        return record.model
    for member in reversed(record.members):
        if member.model:
            return member.model
    return None


def p50_rank(count: int) -> int:
    """1-based nearest rank of the median among ``count`` sorted values (exact integers)."""
    return max(1, (count + 1) // 2)


def p95_rank(count: int) -> int:
    """1-based nearest rank of the 95th percentile among ``count`` sorted values (exact integers)."""
    return max(1, (95 * count + 99) // 100)


def bucket_result(
    counts: Mapping[Outcome, int], *, allowed: int, latency_sum: float, latency_count: int, p50: float | None,
    p95: float | None, degraded: int, synth_fallback: int, cost_usd: float | None,
) -> BucketFigures:
    """One bucket's figures in the shape ``stats`` returns; ``counts`` maps each outcome to its calls.

    ``cost_usd`` is the sum of the members' costs, reported or priced (``None`` when none was).
    """
    attempted = sum(counts[name] for name in ATTEMPTED)
    return {
        "calls": sum(counts.values()),
        "ok": counts["ok"],
        "allowed": allowed,
        "refused": counts["refused"],
        "errors": counts["errors"],
        "not_configured": counts["not_configured"],
        "circuit_open": counts["circuit_open"],
        "needs_context": counts["needs_context"],
        "cancelled": counts["cancelled"],
        "avg_ms": round(latency_sum / latency_count, 1) if latency_count else None,
        "p50_ms": round(p50, 1) if p50 is not None and latency_count else None,
        "p95_ms": round(p95, 1) if p95 is not None and latency_count else None,
        "error_rate": round(counts["errors"] / attempted, 4) if attempted else 0.0,
        "degraded": degraded,
        "synth_fallback": synth_fallback,
        "cost_usd": round(cost_usd, 6) if cost_usd is not None else None,
    }


def is_degraded(quorum: str | None) -> bool:
    """Whether a council quorum ``"N/M"`` answered fewer than asked."""
    if not quorum or "/" not in quorum:
        return False
    answered, _, asked = quorum.partition("/")
    return answered.strip().isdigit() and asked.strip().isdigit() and int(answered) < int(asked)


def validate(window: str, by: str) -> None:
    """Raise :class:`BadArgs` naming the allowed values for an unknown ``window`` or ``by``."""
    if by not in BY_VALUES:
        raise BadArgs(f"unknown by {by!r}; allowed: {', '.join(BY_VALUES)}", allowed=list(BY_VALUES))
    if window not in WINDOWS:
        raise BadArgs(f"unknown window {window!r}; allowed: {', '.join(WINDOWS)}", allowed=list(WINDOWS))


def order_buckets(by: str, buckets: dict[str, BucketFigures]) -> list[StatsBucket]:
    """Buckets as returned: days in date order, everything else by calls (most first) then name."""
    keys = sorted(buckets) if by == "day" else sorted(buckets, key=lambda k: (-buckets[k]["calls"], k))
    return [StatsBucket(by=by, key=key, figures=buckets[key]) for key in keys]
