"""Usage statistics over audit records, as the audit store computes them."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete

from ask_fable.config import load_settings
from ask_fable.errors import BadArgs
from ask_fable.stores.audit import AuditLog
from ask_fable.stores.audit_index import AuditTable
from ask_fable.stores.audit_trail import AuditTrail, audit_trail_for
from ask_fable.stores.records import AuditRecord
from ask_fable.stores.stats import OUTCOMES, outcome_of
from ask_fable.stores.tables import audit_members, audit_recs
from ask_fable.stores.views import BucketFigures
from tests.conftest import StoreBackend

NOW = 1_800_000_000.0
Stats = Callable[..., dict[str, Any]]


@pytest.fixture
def stats_of(store_backend: StoreBackend, tmp_path: Path) -> Stats:
    """Stats over ``records``, each appended to a fresh audit trail (index and SQL included): a JSONL
    log with its SQLite index, or the PostgreSQL table emptied first."""
    logs = itertools.count()

    def compute(records: list[dict[str, Any]], **query: Any) -> dict[str, Any]:
        settings = load_settings(audit_path=tmp_path / f"log{next(logs)}" / "decisions.jsonl",
                                 audit_max_bytes=10_000_000)
        trail = audit_trail_for(settings, engines=store_backend.engines)
        if isinstance(trail, AuditTable):
            with trail.db.write() as conn:
                conn.execute(delete(audit_members))
                conn.execute(delete(audit_recs))
        for record in records:
            trail.append(AuditRecord.model_validate(record))
        return dict(trail.stats("local", **{"now": NOW, **query}))

    return compute


def rec(**kw: object) -> dict[str, Any]:
    base = {"ts": NOW - 60, "tool": "ask_glm", "mode": "single", "status": "ok", "kind": None,
            "allowed": True, "model": "glm-5.2", "provider": "glm", "session": "s1", "project": "p1",
            "elapsed_ms": 100, "cached": False}
    base.update(kw)
    return base


def bucket(result: dict[str, Any], key: str) -> BucketFigures:
    found = next(b for b in result["buckets"] if b.key == key)
    assert found.by == result["by"]
    return found.figures


def test_by_model_counts_outcomes_and_latency(stats_of: Stats) -> None:
    records = [
        rec(elapsed_ms=100), rec(elapsed_ms=300), rec(status="error", kind="timeout", elapsed_ms=200),
        rec(status="refused", allowed=False, elapsed_ms=1, model=None, provider=None),
        rec(status="error", kind="circuit_open", elapsed_ms=0),
        rec(model="claude-fable-5-1", provider="claude", elapsed_ms=1000),
    ]
    out = stats_of(records, now=NOW)
    glm = bucket(out, "glm-5.2")
    assert glm["calls"] == 4 and glm["ok"] == 2 and glm["errors"] == 1 and glm["circuit_open"] == 1
    assert glm["avg_ms"] == 200.0 and glm["p95_ms"] == 300.0
    assert glm["error_rate"] == round(1 / 3, 4)
    assert bucket(out, "unknown")["refused"] == 1 and bucket(out, "unknown")["allowed"] == 0
    assert out["totals"]["calls"] == 6 and out["totals"]["circuit_open"] == 1
    assert out["buckets"][0].key == "glm-5.2"  # most calls first


def test_p95_uses_nearest_rank(stats_of: Stats) -> None:
    out = stats_of([rec(elapsed_ms=v) for v in range(1, 101)], now=NOW)
    assert out["totals"]["p95_ms"] == 95.0 and out["totals"]["avg_ms"] == 50.5


def test_windows_filter_by_timestamp(stats_of: Stats) -> None:
    records = [rec(ts=NOW - 10), rec(ts=NOW - 7200), rec(ts=NOW - 3 * 86400), rec(ts=NOW - 30 * 86400)]
    assert stats_of(records, window="1h", now=NOW)["records"] == 1
    assert stats_of(records, window="24h", now=NOW)["records"] == 2
    assert stats_of(records, window="7d", now=NOW)["records"] == 3
    assert stats_of(records, window="all", now=NOW)["records"] == 4


def test_council_counts_under_synthesizer_and_members_in_provider_view(stats_of: Stats) -> None:
    council = rec(
        tool="ask_council", mode="council", model="claude-fable-5-1", provider="claude", quorum="2/3",
        synth_fallback=True, elapsed_ms=5000,
        members=[
            {"provider": "glm", "model": "glm-5.2", "status": "ok", "kind": None, "elapsed_ms": 900},
            {"provider": "kimi", "model": "kimi-code/k3", "status": "error", "kind": "timeout",
             "elapsed_ms": 3000},
            {"provider": "deepseek", "model": "deepseek-v4-pro", "status": "error", "kind": "circuit_open",
             "elapsed_ms": 0},
        ],
    )
    single = rec()
    by_model = stats_of([council, single], now=NOW)
    synth = bucket(by_model, "claude-fable-5-1")
    assert synth["calls"] == 1 and synth["degraded"] == 1 and synth["synth_fallback"] == 1
    by_provider = stats_of([council, single], by="provider", now=NOW)
    assert bucket(by_provider, "glm")["calls"] == 2 and bucket(by_provider, "glm")["avg_ms"] == 500.0
    kimi = bucket(by_provider, "kimi")
    assert kimi["errors"] == 1 and kimi["error_rate"] == 1.0
    deepseek = bucket(by_provider, "deepseek")
    assert deepseek["circuit_open"] == 1 and deepseek["errors"] == 0 and deepseek["p95_ms"] is None
    assert by_provider["totals"]["calls"] == 4


def test_provider_view_skips_records_without_a_backend_call(stats_of: Stats) -> None:
    out = stats_of([rec(status="refused", provider=None, model=None)], by="provider", now=NOW)
    assert out["buckets"] == [] and out["records"] == 1


def test_other_dimensions(stats_of: Stats) -> None:
    records = [rec(ts=NOW - 60, cached=True, session="a", project="x", mode="council", tool="ask_council"),
               rec(ts=NOW - 2 * 86400, session="b", project="y")]
    assert {b.key for b in stats_of(records, window="all", by="day", now=NOW)["buckets"]} == {
        "2027-01-15", "2027-01-13"}
    by_cache = stats_of(records, window="all", by="cache", now=NOW)["buckets"]
    assert {b.key: b.figures["calls"] for b in by_cache} == {"hit": 1, "miss": 1}
    for by, keys in (("session", {"a", "b"}), ("project", {"x", "y"}), ("mode", {"council", "single"}),
                     ("tool", {"ask_council", "ask_glm"})):
        assert {b.key for b in stats_of(records, window="all", by=by, now=NOW)["buckets"]} == keys


def test_model_and_session_filters(stats_of: Stats) -> None:
    council = rec(model="claude-fable-5-1", members=[{"provider": "glm", "model": "glm-5.2", "status": "ok"}])
    records = [rec(session="s2"), rec(model="kimi-code/k3", provider="kimi"), council]
    assert stats_of(records, model="glm-5.2", now=NOW)["records"] == 2
    assert stats_of(records, model="kimi", now=NOW)["records"] == 1
    assert stats_of(records, session="s2", now=NOW)["records"] == 1
    only_glm = stats_of(records, by="provider", model="glm-5.2", now=NOW)
    assert [b.key for b in only_glm["buckets"]] == ["glm"] and only_glm["totals"]["calls"] == 2


@pytest.mark.parametrize(("window", "by"), [("2h", "model"), ("24h", "color")])
def test_unknown_window_or_by_is_bad_args_listing_allowed_values(
    stats_of: Stats, window: str, by: str
) -> None:
    with pytest.raises(BadArgs) as info:
        stats_of([], window=window, by=by)
    assert "allowed" in info.value.detail
    assert "24h" in info.value.detail or "provider" in info.value.detail


def test_empty_input_has_zero_totals(stats_of: Stats) -> None:
    out = stats_of([], now=NOW)
    assert out["buckets"] == [] and out["totals"]["calls"] == 0 and out["totals"]["avg_ms"] is None


@pytest.mark.parametrize(("status", "kind", "outcome"), [
    ("ok", None, "ok"),
    ("context_exhausted", None, "ok"),
    ("refused", "model_refused", "refused"),
    ("error", "upstream_error", "errors"),
    ("timeout", "timeout", "errors"),
    ("error", "context_too_large", "errors"),
    ("not_configured", "not_configured", "not_configured"),
    ("error", "binary_missing", "not_configured"),
    ("binary_missing", "binary_missing", "not_configured"),
    ("error", "circuit_open", "circuit_open"),
    ("needs_context", None, "needs_context"),
    ("cancelled", "cancelled", "cancelled"),
    (None, None, "errors"),
])
def test_every_status_lands_in_exactly_one_outcome(
    stats_of: Stats, status: str | None, kind: str | None, outcome: str
) -> None:
    assert outcome_of(status, kind) == outcome
    figures = stats_of([rec(status=status, kind=kind)], now=NOW)["totals"]
    assert figures["calls"] == 1 and figures[outcome] == 1
    assert sum(figures[name] for name in OUTCOMES) == 1


def test_config_states_are_neither_errors_nor_latency(stats_of: Stats) -> None:
    records = [rec(elapsed_ms=100), rec(status="error", kind="not_configured", elapsed_ms=1),
               rec(status="error", kind="upstream_error", elapsed_ms=300)]
    glm = bucket(stats_of(records, now=NOW), "glm-5.2")
    assert glm["not_configured"] == 1 and glm["errors"] == 1 and glm["error_rate"] == 0.5
    assert glm["avg_ms"] == 200.0


def test_a_failure_counts_under_the_model_it_asked(stats_of: Stats) -> None:
    asked = {"provider": "deepseek", "model": "deepseek-v4-pro", "status": "error", "kind": "timeout"}
    failed = rec(status="error", kind="timeout", model=None, provider="deepseek", members=[asked])
    chain = rec(status="error", kind="upstream_error", model=None, members=[
        {"provider": "glm", "model": "glm-5.2", "status": "error"}, asked])
    out = stats_of([failed, chain, rec(status="refused", model=None, provider=None)], now=NOW)
    assert bucket(out, "deepseek-v4-pro")["errors"] == 2
    assert bucket(out, "unknown")["refused"] == 1  # the guard refused: no model was asked


def test_lines_that_are_not_audit_records_are_skipped(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=10_000_000)
    log.append(rec())
    log.append({"ts": NOW - 60, "status": ["not", "a", "status"], "kind": {"x": 1}})
    with open(log.path, "ab") as handle:
        handle.write(b"not json\n[1, 2]\n")
    log.append(rec(status="error", kind="timeout"))
    totals = AuditTrail(log).stats("local", now=NOW)["totals"]
    assert totals["calls"] == 2 and totals["ok"] == 1 and totals["errors"] == 1


def test_stats_still_answer_when_the_index_beside_the_log_cannot_be_opened(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=10_000_000)
    log.append(rec())
    (tmp_path / "decisions.index.db").mkdir()  # no database can be opened at that path
    out = AuditTrail(log).stats("local", now=NOW)
    assert out["totals"]["calls"] == 1 and bucket(out, "glm-5.2")["ok"] == 1


def test_p50_uses_nearest_rank_beside_p95(stats_of: Stats) -> None:
    """The median is the nearest-rank value too: 50 of 1..100, 2 of 1..3, the value itself of one."""
    assert stats_of([rec(elapsed_ms=v) for v in range(1, 101)])["totals"]["p50_ms"] == 50.0
    assert stats_of([rec(elapsed_ms=v) for v in (3, 1, 2)])["totals"]["p50_ms"] == 2.0
    assert stats_of([rec(elapsed_ms=7)])["totals"]["p50_ms"] == 7.0


def test_cost_adds_up_what_providers_reported_per_call_and_per_member(stats_of: Stats) -> None:
    """A council's cost is its members' sum; a provider's, its own calls'; unknown stays ``None``."""
    def member(provider: str, model: str, cost: float | None = None) -> dict[str, Any]:
        return {"token": model, "provider": provider, "model": model, "status": "ok", "elapsed_ms": 100,
                "cost_usd": cost}

    council = rec(tool="ask_council", mode="council", model="deepseek-v4-pro", provider="deepseek",
                  members=[member("atlas", "a", 0.25), member("atlas", "b", 0.5), member("glm", "glm-5.2")])
    single = rec(members=[member("glm", "glm-5.2")])
    by_mode = stats_of([council, single], by="mode")
    assert bucket(by_mode, "council")["cost_usd"] == 0.75
    assert bucket(by_mode, "single")["cost_usd"] is None
    assert by_mode["totals"]["cost_usd"] == 0.75
    by_provider = stats_of([council, single], by="provider")
    assert bucket(by_provider, "atlas")["cost_usd"] == 0.75 and bucket(by_provider, "atlas")["calls"] == 2
    assert bucket(by_provider, "glm")["cost_usd"] is None


def test_a_read_only_reader_counts_the_log_without_writing_beside_it(tmp_path: Path) -> None:
    """Stats on read-only connections (the web view's) read a log whose index was never built, and
    again after lines were added, without creating or changing any file next to the log."""
    from ask_fable.stores.engines import Engines

    log = AuditLog(tmp_path / "state" / "decisions.jsonl", max_bytes=10_000_000)
    writer = AuditTrail(log)
    writer.append(AuditRecord.model_validate(rec(elapsed_ms=100)))
    before = sorted(p.name for p in log.path.parent.iterdir())
    reader = AuditTrail(log, engines=Engines(read_only=True))
    assert reader.stats("local", window="all", now=NOW)["totals"]["calls"] == 1
    writer.append(AuditRecord.model_validate(rec(elapsed_ms=300)))
    after = reader.stats("local", window="all", now=NOW)["totals"]
    assert after["calls"] == 2 and after["p50_ms"] == 100.0
    assert sorted(p.name for p in log.path.parent.iterdir()) == before
