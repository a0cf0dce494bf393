"""The metrics a scrape reads that no single call shows: database outages as the stores report them,
and store errors as a call's trace reports them."""

from __future__ import annotations

from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.core.metrics import CallMetrics
from ask_fable.core.tracing import TraceRecorder
from ask_fable.stores import engines
from ask_fable.stores.interfaces import GivenStores
from ask_fable.surface.server import build_server
from tests.e2e.helpers import structured, wired_app
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.memory_stores import Failing


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
        engines.report_down(url, ConnectionRefusedError("connection refused"))
        engines.report_down(url, ConnectionRefusedError("connection refused"))  # the same outage
        down = _scrape(metrics)
        engines.report_up(url)
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


async def test_a_store_that_fails_a_calls_record_is_counted_once(fp: FakeProvider) -> None:
    """The audit store refuses its write: the call still answers, its stored trace names the failure
    once, and the metrics count one audit store error and one answered backend request."""
    real = wired_app(fp)
    app = App(real.settings, stores=GivenStores(audit=Failing(real.audit, OSError("read-only"), "append")))
    metrics = CallMetrics(app)
    app.metrics = metrics
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            answer = await structured(client, "ask_glm", {"question": "Is the retry loop bounded?"})
            assert answer["status"] == "ok", answer
            trace = (await structured(client, "trace_get", {"trace_id": answer["trace_id"]}))["trace"]
        scraped = _scrape(metrics)
    finally:
        metrics.close()
    assert [e["attrs"]["store"] for e in trace["events"] if e["name"] == "store.error"] == ["audit"]
    assert scraped["ask_fable_store_errors_total{store=audit}"] == 1
    assert scraped["ask_fable_backend_requests_total{backend=glm,status=ok}"] == 1
    assert scraped["ask_fable_tool_calls_total{kind=,status=ok,tool=ask_glm}"] == 1


async def test_an_open_breaker_shows_in_its_state_gauge(fp: FakeProvider) -> None:
    """Five failed GLM calls open its breaker: the next scrape shows it open, and the call it sheds is
    counted by its kind."""
    for _ in range(5):
        fp.enqueue("anthropic", status=400, error="the request is malformed")
    app = wired_app(fp)
    metrics = CallMetrics(app)
    app.metrics = metrics
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            for _ in range(5):
                failed = await structured(client, "ask_glm", {"question": "Is the retry loop bounded?"})
                assert failed["kind"] == "upstream_error", failed
            shed = await structured(client, "ask_glm", {"question": "Is the retry loop bounded?"})
            assert shed["kind"] == "circuit_open", shed
            scraped = _scrape(metrics)  # while the server runs: its breaker closes with it
    finally:
        metrics.close()
    state = "ask_fable_breaker_state{backend=glm,model=glm-5.2,state="
    assert (scraped[state + "open}"], scraped[state + "closed}"], scraped[state + "half_open}"]) == (1, 0, 0)
    assert scraped["ask_fable_tool_calls_total{kind=circuit_open,status=error,tool=ask_glm}"] == 1
    assert scraped["ask_fable_backend_requests_total{backend=glm,status=circuit_open}"] == 1
    assert len(fp.requests_for("anthropic")) == 5
