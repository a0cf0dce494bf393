"""The team server's Prometheus metrics (``prometheus-client``), one registry per server process.

What each replica counts of its own calls: tool calls by tool, status and error kind; call and
backend-request latency; tokens and dollars by backend and tenant; quota refusals by limit; store
errors by store; database outages. Gauges read at each scrape: each backend's circuit breaker state
and the live warm Claude Code sessions. The counters are fed where the call's trace is: backend
requests, store and cache errors from the trace events (:meth:`CallMetrics.observer`, so the metrics
and the trace never disagree), tool calls where the server finishes a call, quota refusals where a
key's admission is refused. Served by ``surface/metrics_server.py`` on a listener of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.core import Metric
    from pydantic import JsonValue

    from ask_fable.core.app import App

#: Call latency buckets (seconds): councils run minutes.
CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
#: What each event name the metrics read stands for.
_STORE_EVENTS = ("store.error", "cache.error")
_BREAKER_STATES = ("closed", "half_open", "open")


class _OutageLog(logging.Handler):
    """Counts the database outages the stores report on their outage log (``ask_fable.database``):
    one line as the database stops answering, one as it answers again."""

    def __init__(self, metrics: CallMetrics) -> None:
        super().__init__(logging.WARNING)
        self.metrics = metrics

    def emit(self, record: logging.LogRecord) -> None:
        message = str(record.msg)
        if "not answering" in message:
            self.metrics.database_outages.inc()
            self.metrics.database_up.set(0)
        elif "answers again" in message:
            self.metrics.database_up.set(1)


class CallMetrics:
    """The metrics of one server process, in a registry of their own."""

    def __init__(self, app: App) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        disable_created_metrics()  # type: ignore[no-untyped-call]  # ``_created`` only doubles a scrape
        self.app = app
        self.registry = CollectorRegistry()
        r = self.registry
        self.tool_calls = Counter("ask_fable_tool_calls", "Tool calls by tool, status and error kind.",
                                  ["tool", "status", "kind"], registry=r)
        self.call_seconds = Histogram("ask_fable_tool_call_duration_seconds", "Tool call latency by tool.",
                                      ["tool"], buckets=CALL_BUCKETS, registry=r)
        self.backend_requests = Counter("ask_fable_backend_requests", "Model calls by backend and outcome.",
                                        ["backend", "status"], registry=r)
        self.backend_seconds = Histogram("ask_fable_backend_request_duration_seconds",
                                         "Model call latency by backend (retries included).", ["backend"],
                                         buckets=CALL_BUCKETS, registry=r)
        self.tokens = Counter("ask_fable_tokens", "Tokens reported by backends, by backend, tenant and "
                              "direction (input, output).", ["backend", "tenant", "direction"], registry=r)
        self.cost = Counter("ask_fable_cost_usd", "Dollars reported by backends, by backend and tenant.",
                            ["backend", "tenant"], registry=r)
        self.quota_refusals = Counter("ask_fable_quota_refusals", "Calls refused by a key's quota, by limit "
                                      "(rpm, concurrent, daily_usd).", ["limit"], registry=r)
        self.store_errors = Counter("ask_fable_store_errors", "Store operations that failed, by store.",
                                    ["store"], registry=r)
        self.database_outages = Counter("ask_fable_database_outages", "Times the shared database stopped "
                                        "answering.", registry=r)
        self.database_up = Gauge("ask_fable_database_up", "0 while the shared database is reported down.",
                                 registry=r)
        self.database_up.set(1)
        r.register(_Gauges(app))
        self._outage_log = _OutageLog(self)
        logging.getLogger("ask_fable.database").addHandler(self._outage_log)

    def close(self) -> None:
        """Stop counting the outage log (the registry stays readable)."""
        logging.getLogger("ask_fable.database").removeHandler(self._outage_log)

    def tool_call(self, tool: str, status: str, kind: str | None, seconds: float) -> None:
        """One finished tool call."""
        self.tool_calls.labels(tool, status, kind or "").inc()
        self.call_seconds.labels(tool).observe(max(0.0, seconds))

    def quota_refused(self, limit: str) -> None:
        """One call refused by a key's ``limit``."""
        self.quota_refusals.labels(limit).inc()

    def observer(self, tenant: str) -> Callable[[str, dict[str, JsonValue]], None]:
        """What one call's trace reports its events to: model calls, store and cache errors."""

        def seen(name: str, attrs: dict[str, JsonValue]) -> None:
            if name == "provider.end":
                self._backend(tenant, attrs)
            elif name in _STORE_EVENTS:
                self.store_errors.labels(str(attrs.get("store") or "cache")).inc()

        return seen

    def _backend(self, tenant: str, attrs: dict[str, JsonValue]) -> None:
        backend = str(attrs.get("provider") or "unknown")
        self.backend_requests.labels(backend, str(attrs.get("status") or "unknown")).inc()
        elapsed = attrs.get("elapsed_ms")
        if isinstance(elapsed, int | float):
            self.backend_seconds.labels(backend).observe(elapsed / 1000)
        for direction in ("input", "output"):
            count = attrs.get(f"{direction}_tokens")
            if isinstance(count, int) and count > 0:
                self.tokens.labels(backend, tenant, direction).inc(count)
        cost = attrs.get("cost_usd")
        if isinstance(cost, int | float) and cost > 0:
            self.cost.labels(backend, tenant).inc(cost)

    def exposition(self) -> bytes:
        """The metrics in Prometheus's text format."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _Gauges:
    """Gauges read from the App at each scrape: breaker states and live warm sessions."""

    def __init__(self, app: App) -> None:
        self.app = app

    def describe(self) -> list[Metric]:
        """Nothing to describe ahead of a scrape (the backends are known as they are called)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The breaker state of each backend called so far, and the warm sessions open now."""
        from prometheus_client.core import GaugeMetricFamily

        states = GaugeMetricFamily("ask_fable_breaker_state", "Circuit breaker state by backend and model (1 "
                                   "for the state it is in: closed, half_open, open).",
                                   labels=["backend", "model", "state"])
        breaker = self.app.opened("breaker")
        snapshot = getattr(breaker, "snapshot", None)
        if snapshot is not None:
            for key, circuit in snapshot().items():
                backend, _, model = key.partition(":")
                for state in _BREAKER_STATES:
                    states.add_metric([backend, model, state], 1.0 if circuit["state"] == state else 0.0)
        yield states
        sessions = self.app.opened("claude_sessions")
        live = getattr(sessions, "live", None)
        yield GaugeMetricFamily("ask_fable_warm_sessions", "Warm Claude Code sessions open now.",
                                value=float(live() if live is not None else 0))

