"""The metrics a scrape reads that no single call shows: database outages as the stores report them,
and store errors as a call's trace reports them."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.core.metrics import CallMetrics
from ask_fable.core.tracing import TraceRecorder
from ask_fable.stores import postgres


def _scrape(metrics: CallMetrics) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            found[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return found


def test_a_database_outage_is_counted_and_shown_until_the_database_answers_again() -> None:
    """The stores' outage report (one line down, one line back) moves the outage count and the up gauge."""
    metrics = CallMetrics(App(load_settings()))
    url = "postgresql://metrics-test@127.0.0.1:1/none"
    try:
        assert _scrape(metrics)["ask_fable_database_up"] == 1
        postgres._report_down(url, ConnectionRefusedError("connection refused"))
        postgres._report_down(url, ConnectionRefusedError("connection refused"))  # the same outage
        down = _scrape(metrics)
        postgres._report_up(url)
        back = _scrape(metrics)
    finally:
        metrics.close()
    assert (down["ask_fable_database_outages_total"], down["ask_fable_database_up"]) == (1, 0)
    assert (back["ask_fable_database_outages_total"], back["ask_fable_database_up"]) == (1, 1)


def test_store_and_cache_errors_in_a_calls_trace_are_counted_by_store() -> None:
    """The events a call's trace records for a failed store write or cache read are the counts."""
    metrics = CallMetrics(App(load_settings()))
    try:
        trace = TraceRecorder("t1", observer=metrics.observer("team"))
        trace.event("store.error", store="transcripts", op="append", error="OperationalError")
        trace.event("store.error", store="audit", op="write", error="OSError")
        trace.event("cache.error", op="get", error="OperationalError")
        scraped = _scrape(metrics)
    finally:
        metrics.close()
    assert scraped["ask_fable_store_errors_total{store=transcripts}"] == 1
    assert scraped["ask_fable_store_errors_total{store=audit}"] == 1
    assert scraped["ask_fable_store_errors_total{store=cache}"] == 1
