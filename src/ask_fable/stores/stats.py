"""Usage and health statistics aggregated from audit records (no model call, never cached).

Every counted call lands in exactly one outcome (:data:`OUTCOMES`), so ``calls`` is their sum:

    ok              an answer (``context_exhausted`` is a best-effort answer)
    refused         the guard or the model declined
    errors          the backend was asked and failed (``timeout`` included)
    not_configured  a configuration state: a key or setting is missing, or a CLI is not installed
    circuit_open    the circuit breaker shed the call
    needs_context   no model was called: the ``context_ref`` keys did not exist

Only ok, refused and errors are attempts: they alone give latency samples, and ``error_rate`` is
``errors / (ok + refused + errors)``. Council degradation counters (``degraded``,
``synth_fallback``) ride along.

``by="provider"`` is the per-backend view: one call per entry of a record's ``members`` (a
single-shot record without members counts as one call of its own ``provider``). Every other
view counts one call per record; councils count under their synthesizer (``record["model"]``),
and a call that returned no answer counts under the model it asked (its last member's).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ask_fable.errors import BadArgs

WINDOWS: dict[str, float | None] = {"1h": 3600.0, "24h": 86400.0, "7d": 604800.0, "all": None}
BY_VALUES = ("model", "provider", "tool", "session", "day", "project", "cache", "mode")
UNKNOWN = "unknown"
_NUMBER = (int, float)  # exact types: a bool is not a latency


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
)
OUTCOMES = ("ok", "refused", "errors", "not_configured", "circuit_open", "needs_context")
#: Outcomes where a backend (or the guard) really handled the call: latency and error-rate samples.
ATTEMPTED = frozenset({"ok", "refused", "errors"})


def outcome_of(status: Any, kind: Any) -> str:
    """The one outcome (:data:`OUTCOMES`) a call with ``status`` and ``kind`` counts as."""
    status = status if isinstance(status, str) else None
    kind = kind if isinstance(kind, str) else None
    for outcome, statuses, kinds in OUTCOME_RULES:
        if status in statuses or kind in kinds:
            return outcome
    return "errors"


def attributed_model(record: dict[str, Any]) -> Any:
    """The model a record counts under: its answering model, else the last model it asked."""
    model = record.get("model")
    if model not in (None, ""):
        return model
    members = record.get("members")
    if isinstance(members, list):
        for member in reversed(members):
            if isinstance(member, dict) and member.get("model") not in (None, ""):
                return member["model"]
    return None


class _Bucket:
    __slots__ = ("allowed", "counts", "degraded", "latencies", "synth_fallback")

    def __init__(self) -> None:
        self.counts = dict.fromkeys(OUTCOMES, 0)
        self.allowed = self.degraded = self.synth_fallback = 0
        self.latencies: list[float] = []

    def add(self, status: Any, kind: Any, allowed: Any, elapsed: Any) -> None:
        outcome = outcome_of(status, kind)
        self.counts[outcome] += 1
        if allowed:
            self.allowed += 1
        if outcome in ATTEMPTED and type(elapsed) in _NUMBER:
            self.latencies.append(elapsed)

    def merge(self, other: _Bucket) -> None:
        for name in OUTCOMES:
            self.counts[name] += other.counts[name]
        self.allowed += other.allowed
        self.degraded += other.degraded
        self.synth_fallback += other.synth_fallback
        self.latencies.extend(other.latencies)

    def result(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return bucket_result(
            self.counts, allowed=self.allowed, latency_sum=sum(lat), latency_count=len(lat),
            p95=lat[p95_rank(len(lat)) - 1] if lat else None, degraded=self.degraded,
            synth_fallback=self.synth_fallback,
        )


def p95_rank(count: int) -> int:
    """1-based nearest rank of the 95th percentile among ``count`` sorted values (exact integers)."""
    return max(1, (95 * count + 99) // 100)


def bucket_result(
    counts: dict[str, int], *, allowed: int, latency_sum: float, latency_count: int, p95: float | None,
    degraded: int, synth_fallback: int,
) -> dict[str, Any]:
    """One bucket's figures in the shape ``stats`` returns; ``counts`` maps each outcome to its calls."""
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
        "avg_ms": round(latency_sum / latency_count, 1) if latency_count else None,
        "p95_ms": round(p95, 1) if p95 is not None and latency_count else None,
        "error_rate": round(counts["errors"] / attempted, 4) if attempted else 0.0,
        "degraded": degraded,
        "synth_fallback": synth_fallback,
    }


def _day_namer() -> Any:
    """A ``ts → 'YYYY-MM-DD'`` (UTC) function that formats each distinct day once."""
    names: dict[int, str] = {}

    def name(ts: Any) -> str:
        if not isinstance(ts, int | float):
            return UNKNOWN
        day = int(ts // 86400)
        found = names.get(day)
        if found is None:
            found = names[day] = datetime.fromtimestamp(day * 86400, UTC).strftime("%Y-%m-%d")
        return found

    return name


def is_degraded(quorum: Any) -> bool:
    """Whether a council quorum ``"N/M"`` answered fewer than asked."""
    if not isinstance(quorum, str) or "/" not in quorum:
        return False
    answered, _, asked = quorum.partition("/")
    return answered.strip().isdigit() and asked.strip().isdigit() and int(answered) < int(asked)


def _matches_model(record: dict[str, Any], model: str) -> bool:
    if record.get("model") == model or record.get("provider") == model:
        return True
    members = record.get("members")
    if isinstance(members, list):
        for m in members:
            if isinstance(m, dict) and (m.get("model") == model or m.get("provider") == model):
                return True
    return False


def validate(window: str, by: str) -> None:
    """Raise :class:`BadArgs` naming the allowed values for an unknown ``window`` or ``by``."""
    if by not in BY_VALUES:
        raise BadArgs(f"unknown by {by!r}; allowed: {', '.join(BY_VALUES)}", allowed=list(BY_VALUES))
    if window not in WINDOWS:
        raise BadArgs(f"unknown window {window!r}; allowed: {', '.join(WINDOWS)}", allowed=list(WINDOWS))


def order_buckets(by: str, buckets: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Buckets as returned: days in date order, everything else by calls (most first) then name."""
    keys = sorted(buckets) if by == "day" else sorted(buckets, key=lambda k: (-buckets[k]["calls"], k))
    return [{by: key, **buckets[key]} for key in keys]


def compute_stats(
    records: Iterable[dict[str, Any]],
    window: str = "24h",
    by: str = "model",
    model: str | None = None,
    session: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Aggregate audit ``records`` over ``window`` into buckets ``by`` one dimension, plus totals.

    ``model`` keeps records whose model or provider (or one of whose members') matches — in the
    provider view only the matching member calls; ``session`` keeps one session. Unknown
    ``window`` or ``by`` raise :class:`BadArgs` naming the allowed values.
    """
    validate(window, by)
    since = window_start(window, now)
    buckets: dict[str, _Bucket] = {}
    matched = 0
    per_member = by == "provider"
    day_name = _day_namer()
    for record in records:
        if type(record) is not dict:
            continue
        if since is not None:
            ts = record.get("ts")
            if type(ts) not in _NUMBER or ts < since:
                continue
        if session is not None and record.get("session") != session:
            continue
        if model is not None and not _matches_model(record, model):
            continue
        matched += 1
        if per_member:
            _add_members(buckets, record, model)
            continue
        if by == "day":
            key = day_name(record.get("ts"))
        elif by == "cache":
            key = "hit" if record.get("cached") else "miss"
        else:
            value = attributed_model(record) if by == "model" else record.get(by)
            key = str(value) if value not in (None, "") else UNKNOWN
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = _Bucket()
        bucket.add(record.get("status"), record.get("kind"), record.get("allowed"), record.get("elapsed_ms"))
        if is_degraded(record.get("quorum")):
            bucket.degraded += 1
        if record.get("synth_fallback"):
            bucket.synth_fallback += 1
    totals = _Bucket()
    for bucket in buckets.values():
        totals.merge(bucket)
    return {
        "window": window,
        "by": by,
        "since": since,
        "filters": {"model": model, "session": session},
        "records": matched,
        "buckets": order_buckets(by, {k: b.result() for k, b in buckets.items()}),
        "totals": totals.result(),
    }


def _add_members(buckets: dict[str, _Bucket], record: dict[str, Any], model: str | None) -> None:
    members = record.get("members")
    if not isinstance(members, list) or not members:
        provider = record.get("provider")
        if not provider:
            return  # refused before any backend was called
        members = [{"provider": provider, "model": record.get("model"), "status": record.get("status"),
                    "kind": record.get("kind"), "elapsed_ms": record.get("elapsed_ms")}]
    allowed = record.get("allowed", True)
    for member in members:
        if not isinstance(member, dict):
            continue
        if model is not None and member.get("model") != model and member.get("provider") != model:
            continue
        key = str(member.get("provider") or UNKNOWN)
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = _Bucket()
        bucket.add(member.get("status"), member.get("kind"), allowed, member.get("elapsed_ms"))


def audit_stats(
    log: Any,
    window: str = "24h",
    by: str = "model",
    model: str | None = None,
    session: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """:func:`compute_stats` over an :class:`~ask_fable.stores.audit.AuditLog`, rotations included.

    Reads through the log's summary index (refreshed first, so only new lines are parsed); if
    the index cannot be used the JSONL files are read directly. Arguments are validated first.
    """
    import sqlite3

    from ask_fable.stores.audit_index import AuditIndex

    validate(window, by)
    try:
        index = AuditIndex(log)
        index.refresh()
        return index.stats(window=window, by=by, model=model, session=session, now=now)
    except (sqlite3.Error, OSError):
        since = window_start(window, now)
        return compute_stats(log.iter_records(since), window=window, by=by, model=model, session=session,
                             now=now)
