"""The web view's pages, rendered on the server from what the stores returned: no script anywhere.

Each function returns a whole document (:class:`markup.Html`); every value in it went through
:mod:`markup`, and the pictures come from :mod:`svg`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote, urlencode

from ask_fable.access import ALL_TENANTS
from ask_fable.stores.records import TraceEvent, TraceSummary
from ask_fable.stores.stats import Outcome
from ask_fable.stores.views import BucketFigures, StatsBucket, StatsReport, TraceDetail
from ask_fable.surface.http_common import UI_PATH
from ask_fable.surface.ui.data import PAGE_SIZES, STATUSES, StatsView, TracePage, TraceQuery
from ask_fable.surface.ui.markup import Html, el, join
from ask_fable.surface.ui.style import STYLESHEET_VERSION
from ask_fable.surface.ui.svg import BarPart, BarRow, bar_chart, timeline_svg
from ask_fable.surface.ui.timeline import (
    MARK_LABELS,
    OUTCOME_LABELS,
    Timeline,
    dollars,
    outcome_of,
    seconds,
)

#: Recorded events listed on a trace page (the timeline reads them all).
MAX_EVENT_ROWS = 2000
WINDOW_LABELS = {"1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days", "all": "all time"}
WINDOW_SPANS = {
    "1h": "over the last hour",
    "24h": "over the last 24 hours",
    "7d": "over the last 7 days",
    "all": "in all",
}


@dataclass(frozen=True)
class Chrome:
    """What every page's header shows: who is looking, and the token its logout form needs."""

    viewer: str | None = None
    tenant: str | None = None
    csrf: str | None = None


def url(path: str, params: dict[str, str] | None = None) -> str:
    """A path under the web view, with query parameters."""
    query = f"?{urlencode(params)}" if params else ""
    return f"{UI_PATH}{path}{query}"


def trace_url(trace_id: str) -> str:
    """The page of one trace."""
    return url(f"/traces/{quote(trace_id, safe='')}")


def when(ts: float | None) -> str:
    """Epoch seconds as the server's local time, with its UTC offset."""
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")


def document(title: str, body: Html | Sequence[Html | None], chrome: Chrome, here: str = "") -> Html:
    """A whole page: head, header with navigation (and logout when logged in), then ``body``."""
    nav = (
        el(
            "nav",
            None,
            [
                el("a", {"href": url("/traces"), "class": "here" if here == "traces" else None}, "Traces"),
                el("a", {"href": url("/stats"), "class": "here" if here == "stats" else None}, "Stats"),
            ],
        )
        if chrome.viewer
        else None
    )
    who = None
    if chrome.viewer:
        who = el(
            "div",
            {"class": "who"},
            [
                el("span", {"class": "viewer"}, f"{chrome.viewer} · {_whose(chrome.tenant)}"),
                el(
                    "form",
                    {"method": "post", "action": url("/logout")},
                    [
                        el("input", {"type": "hidden", "name": "csrf", "value": chrome.csrf}),
                        el("button", {"type": "submit"}, "Log out"),
                    ],
                ),
            ],
        )
    head = el(
        "head",
        None,
        [
            el("meta", {"charset": "utf-8"}),
            el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
            el("meta", {"name": "referrer", "content": "same-origin"}),
            el("title", None, f"{title} · ask-fable"),
            el("link", {"rel": "stylesheet", "href": url(f"/static/ui-{STYLESHEET_VERSION}.css")}),
            el("link", {"rel": "icon", "href": url("/static/icon.svg"), "type": "image/svg+xml"}),
        ],
    )
    header = el("header", None, [el("a", {"class": "brand", "href": url("/traces")}, "ask-fable"), nav, who])
    return Html(
        "<!doctype html>\n"
        + el("html", {"lang": "en"}, head, el("body", None, header, el("main", None, body)))
    )


def _whose(tenant: str | None) -> str:
    """Whose calls the viewer sees, in words."""
    if tenant == ALL_TENANTS:
        return "every tenant of this machine's stores"
    return f"tenant {tenant}"


def session_label(session: str | None, tool: str | None) -> str:
    """A call's session as people read it: none when the call had no session of its own (the record
    then files it under its tool's name)."""
    return "" if not session or session == tool else session


def badge(status: str | None, kind: str | None = None) -> Html:
    """A status coloured by its outcome."""
    return el("span", {"class": f"badge o-{outcome_of(status, kind)}", "data-status": status}, status or "—")


def _problems(problems: Sequence[str]) -> Html | None:
    if not problems:
        return None
    return el(
        "div", {"class": "problems", "role": "alert"}, el("ul", None, [el("li", None, p) for p in problems])
    )


def _field(label: str, control: Html) -> Html:
    return el("label", None, label, control)


def _filters(query: TraceQuery, tools: Sequence[str]) -> Html:
    status = el(
        "select",
        {"name": "status"},
        [
            el("option", {"value": ""}, "any"),
            [el("option", {"value": s, "selected": s == query.status}, s) for s in STATUSES],
        ],
    )
    limit = el(
        "select",
        {"name": "limit"},
        [el("option", {"value": str(n), "selected": n == query.limit}, str(n)) for n in PAGE_SIZES],
    )
    offset = datetime.now().astimezone().strftime("%z")
    params = query.params()
    return el(
        "form",
        {"class": "filters", "method": "get", "action": url("/traces")},
        [
            _field("Tool", el("input", {"name": "tool", "value": query.tool, "list": "tools", "size": 18})),
            el("datalist", {"id": "tools"}, [el("option", {"value": name}) for name in tools]),
            _field("Status", status),
            _field("Provider", el("input", {"name": "provider", "value": query.provider, "size": 12})),
            _field("Session", el("input", {"name": "session", "value": query.session, "size": 16})),
            _field("Project", el("input", {"name": "project", "value": query.project, "size": 14})),
            _field(
                f"From (UTC{offset})",
                el("input", {"type": "datetime-local", "name": "from", "value": params.get("from")}),
            ),
            _field(
                f"To (UTC{offset})",
                el("input", {"type": "datetime-local", "name": "to", "value": params.get("to")}),
            ),
            _field("Per page", limit),
            el("button", {"type": "submit"}, "Filter"),
            el("a", {"href": url("/traces")}, "Clear") if query.filtered else None,
        ],
    )


def _trace_row(row: TraceSummary, every_tenant: bool) -> Html:
    link = trace_url(row.trace_id)
    return el(
        "tr",
        {"data-trace": row.trace_id},
        [
            el("td", {"class": "mono"}, el("a", {"href": link}, when(row.ts))),
            el("td", None, el("a", {"href": link}, row.tool or "—")),
            el("td", None, row.mode or "—"),
            el("td", None, badge(row.status, row.kind)),
            el("td", None, row.kind or ""),
            el("td", None, ", ".join(row.providers)),
            el("td", {"class": "num"}, seconds(row.elapsed_ms)),
            el("td", None, session_label(row.session, row.tool)),
            el("td", None, row.tenant) if every_tenant else None,
            el("td", None, "cached" if row.cached else ""),
        ],
    )


def trace_list_page(
    page: TracePage, query: TraceQuery, problems: Sequence[str], tools: Sequence[str], chrome: Chrome
) -> Html:
    """The trace list: filters, one row per call (newest first), and links to older pages."""
    every_tenant = chrome.tenant == ALL_TENANTS
    heads = ("When", "Tool", "Mode", "Status", "Kind", "Providers", "Elapsed", "Session",
             *(("Tenant",) if every_tenant else ()), "")
    head = el("tr", None, [el("th", {"class": "num" if h == "Elapsed" else None}, h) for h in heads])
    if page.rows:
        table: Html = el(
            "div",
            {"class": "wide"},
            el(
                "table",
                {"class": "traces"},
                el("thead", None, head),
                el("tbody", None, [_trace_row(r, every_tenant) for r in page.rows]),
            ),
        )
    else:
        table = el(
            "p",
            {"class": "muted empty"},
            "No calls match these filters."
            if query.filtered or query.before
            else "No calls recorded yet: traces appear here once a tool has been called.",
        )
    pager = el(
        "div",
        {"class": "pager"},
        [
            el("a", {"href": url("/traces", query.page(None).params()), "rel": "first"}, "Newest")
            if query.before
            else None,
            el("a", {"href": url("/traces", query.page(page.next_before).params()), "rel": "next"}, "Older →")
            if page.next_before
            else None,
        ],
    )
    return document(
        "Traces",
        [el("h1", None, "Traces"), _problems(problems), _filters(query, tools), table, pager],
        chrome,
        "traces",
    )


def _legend(outcomes: Sequence[str], marks: Sequence[str] = ()) -> Html:
    shown = [name for name in OUTCOME_LABELS if name in outcomes]
    return el(
        "ul",
        {"class": "legend"},
        [
            [el("li", {"data-legend": name}, el("span", {"class": f"swatch o-{name}"}), OUTCOME_LABELS[name])
             for name in shown],
            [el("li", {"data-legend-mark": name}, el("span", {"class": "swatch diamond o-unfinished"}),
                MARK_LABELS[name]) for name in marks],
        ],
    )


def _why(timeline: Timeline, status: str | None) -> Html | None:
    """What a call that did not answer said about why, and how to fix it, as its result carried them."""
    if status in (None, "ok", "context_exhausted", "refused"):
        return None
    if timeline.detail is None and timeline.hint is None:
        return el("p", {"class": "muted", "id": "why"},
                  "This call's trace keeps no detail of the failure (it was recorded by an older ask-fable).")
    return el(
        "div",
        {"class": "why o-error", "id": "why"},
        [
            el("p", {"class": "detail"}, [el("strong", None, "What happened: "), timeline.detail])
            if timeline.detail else None,
            el("p", {"class": "hint"}, [el("strong", None, "How to fix it: "), timeline.hint])
            if timeline.hint else None,
        ],
    )


def _facts(pairs: Sequence[tuple[str, Html | str]]) -> Html:
    return el("dl", {"class": "facts"}, [[el("dt", None, k), el("dd", None, v)] for k, v in pairs])


def _lanes_table(timeline: Timeline) -> Html:
    rows = []
    for lane in timeline.lanes[1:]:
        rows.append(
            el(
                "tr",
                {"data-lane": lane.key},
                [
                    el("td", None, lane.label),
                    el("td", None, lane.role or ""),
                    el("td", None, lane.model or ""),
                    el(
                        "td",
                        None,
                        el(
                            "span",
                            {"class": f"badge o-{lane.outcome}"},
                            OUTCOME_LABELS.get(lane.outcome, lane.outcome),
                        ),
                    ),
                    el("td", {"class": "num"}, f"{lane.start_ms / 1000:.2f} s"),
                    el(
                        "td",
                        {"class": "num"},
                        seconds(
                            lane.duration_ms if lane.duration_ms is not None else lane.end_ms - lane.start_ms
                        ),
                    ),
                    el("td", None, lane.error_kind or ""),
                    el("td", None, "; ".join(lane.notes)),
                ],
            )
        )
    head = el(
        "tr",
        None,
        [
            el("th", {"class": "num" if h in ("Starts", "Took") else None}, h)
            for h in ("Step", "Role", "Model", "Outcome", "Starts", "Took", "Error", "Notes")
        ],
    )
    return el(
        "div",
        {"class": "wide"},
        el("table", {"class": "lanes"}, el("thead", None, head), el("tbody", None, rows)),
    )


def _events_table(events: Sequence[TraceEvent]) -> Html:
    rows = [
        el(
            "tr",
            None,
            [
                el("td", {"class": "num mono"}, f"{event.t_ms or 0:.0f}"),
                el("td", {"class": "mono"}, event.name),
                el("td", {"class": "mono"}, json.dumps(event.attrs, ensure_ascii=False, default=str)),
            ],
        )
        for event in events[:MAX_EVENT_ROWS]
    ]
    head = el(
        "tr", None, [el("th", {"class": "num"}, "ms"), el("th", None, "Event"), el("th", None, "Details")]
    )
    return el("table", {"class": "events"}, el("thead", None, head), el("tbody", None, rows))


def otel_trace_id(events: Sequence[TraceEvent]) -> str | None:
    """The OpenTelemetry trace id the call's spans were sent under (recorded with its ``request``
    event when an OTLP endpoint was configured), to find the call in the team's own tracing tool."""
    for event in events:
        if event.name == "request":
            found = event.attrs.get("otel_trace_id")
            return found if isinstance(found, str) and found else None
    return None


def trace_page(trace: TraceDetail, timeline: Timeline, content: str | None, chrome: Chrome) -> Html:
    """One call: what it was, its timeline, each step, the raw events and (full mode) its content."""
    facts: list[tuple[str, Html | str]] = [
        ("Trace", el("code", None, trace.trace_id)),
        ("Tool", trace.tool or "—"),
        ("Mode", trace.mode or "—"),
        (
            "Status",
            join([badge(trace.status, trace.kind), f" {trace.kind}" if trace.kind else ""]),
        ),
        ("Started", when(trace.ts)),
        ("Took", seconds(trace.elapsed_ms)),
        ("Session", session_label(trace.session, trace.tool) or "—"),
        *((("Tenant", trace.tenant),) if chrome.tenant == ALL_TENANTS else ()),
        ("Project", trace.project or "—"),
        ("Agent", trace.agent_id or "—"),
        ("Providers", ", ".join(trace.providers) or "—"),
        ("Models", ", ".join(trace.models) or "—"),
    ]
    otel_id = otel_trace_id(trace.events)
    if otel_id is not None:
        facts.insert(1, ("OpenTelemetry trace", el("code", {"id": "otel-trace-id"}, otel_id)))
    if trace.cached:
        facts.append(("Cache", "served from the cache"))
    outcomes = sorted({s.outcome for lane in timeline.lanes for s in lane.segments})
    body: list[Html | None] = [
        el("h1", None, f"{trace.tool or 'call'} · {trace.status or 'no status'}"),
        _facts(facts),
        _why(timeline, trace.status),
        el(
            "section",
            {"id": "timeline"},
            [
                el("h2", None, "Summary") if timeline.summary else None,
                el("div", {"class": "summary"}, _facts(timeline.summary)) if timeline.summary else None,
                el("h2", None, "Timeline"),
                el("div", {"class": "wide"}, timeline_svg(timeline)),
                _legend(outcomes, timeline.marks()),
            ],
        ),
        el("h2", None, "Steps"),
        _lanes_table(timeline)
        if len(timeline.lanes) > 1
        else el("p", {"class": "muted"}, "No model was called."),
        el(
            "details",
            None,
            el("summary", None, f"Recorded events ({len(trace.events)})"),
            _events_table(trace.events),
            el(
                "p",
                {"class": "muted"},
                f"Only the first {MAX_EVENT_ROWS} events are listed; trace_get has the rest.",
            )
            if len(trace.events) > MAX_EVENT_ROWS
            else None,
            el("p", {"class": "muted"}, "Only the first events were kept.")
            if trace.events_truncated
            else None,
        ),
        el("h2", None, "Content"),
        el("pre", {"class": "content"}, content)
        if content is not None
        else el(
            "p",
            {"class": "muted", "id": "no-content"},
            "This call was traced in safe mode: metadata only, no question or answer kept. Full trace mode "
            "(configure_tracing) keeps redacted content for later calls.",
        ),
    ]
    return document(f"Trace {trace.trace_id}", body, chrome, "traces")


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


#: The columns a stats row splits its calls into (they add up to its calls), with their colours.
CALL_PARTS: tuple[tuple[Outcome, str, str], ...] = (
    ("ok", "Answered", "o-ok"),
    ("refused", "Refused", "o-refused"),
    ("errors", "Failed", "o-error"),
    ("not_configured", "Not configured", "o-config"),
    ("circuit_open", "Circuit open", "o-shed"),
    ("needs_context", "Needs context", "o-needs"),
    ("cancelled", "Cancelled", "o-cancelled"),
)
#: The outcomes of calls that returned ``status: "error"``.
ERROR_OUTCOMES: tuple[Outcome, ...] = ("errors", "not_configured", "circuit_open")
ERROR_RATE_MEANS = "calls that returned status error (failed, not configured, circuit open) / all calls"


def error_rate(figures: BucketFigures) -> float:
    """The share of a bucket's calls that returned ``status: "error"``."""
    calls = figures["calls"]
    return sum(figures[name] for name in ERROR_OUTCOMES) / calls if calls else 0.0


def _charts(report: StatsReport, what: str, anchor: str) -> Html:
    rows = report["buckets"]
    calls = [
        BarRow(
            r.key,
            [BarPart(f[name], colour, f"{f[name]} {label.lower()}") for name, label, colour in CALL_PARTS],
            _calls(f["calls"]),
        )
        for r in rows
        for f in [r.figures]
    ]
    errors = [
        BarRow(
            r.key,
            [BarPart(error_rate(r.figures), "o-error", f"error rate {_percent(error_rate(r.figures))}")],
            _percent(error_rate(r.figures)),
        )
        for r in rows
    ]
    latency = [
        BarRow(
            r.key,
            [
                BarPart(f["p50_ms"] or 0.0, "o-p50", f"p50 {seconds(f['p50_ms'])}"),
                BarPart(f["p95_ms"] or 0.0, "o-p95", f"p95 {seconds(f['p95_ms'])}"),
            ],
            f"p50 {seconds(f['p50_ms'])} · p95 {seconds(f['p95_ms'])}",
        )
        for r in rows
        for f in [r.figures]
    ]
    cost = [
        BarRow(
            r.key,
            [BarPart(f["cost_usd"] or 0.0, "o-cost", f"cost {dollars(f['cost_usd'])}")],
            dollars(f["cost_usd"]) if f["cost_usd"] is not None else "not reported",
        )
        for r in rows
        for f in [r.figures]
    ]
    return el(
        "section",
        {"id": anchor},
        [
            bar_chart(
                f"Calls per {what}", calls, fmt=lambda v: f"{v:.0f}", whole=True, chart_id=f"{anchor}-calls"
            ),
            bar_chart(
                f"Error rate per {what} ({ERROR_RATE_MEANS})",
                errors,
                fmt=_percent,
                chart_id=f"{anchor}-errors",
            ),
            bar_chart(
                f"Latency per {what}: p50 and p95",
                latency,
                fmt=seconds,
                paired=True,
                chart_id=f"{anchor}-latency",
            ),
            bar_chart(
                f"Cost per {what} (reported, else priced from tokens)", cost, fmt=dollars,
                chart_id=f"{anchor}-cost"
            )
            if any(r.figures["cost_usd"] is not None for r in rows)
            else el(
                "p",
                {"class": "muted", "id": f"{anchor}-cost"},
                f"Cost per {what}: no call in this window could be priced.",
            ),
            _stats_table(rows, what),
        ],
    )


def _stats_table(rows: Sequence[StatsBucket], what: str) -> Html:
    head = el(
        "tr",
        None,
        [
            el("th", {"class": None if h == what.capitalize() else "num"}, h)
            for h in (what.capitalize(), "Calls", *(label for _, label, _ in CALL_PARTS), "Error rate", "p50",
                      "p95", "Cost")
        ],
    )
    body = [
        el(
            "tr",
            {"data-row": r.key},
            [
                el("td", None, r.key),
                el("td", {"class": "num"}, f["calls"]),
                [el("td", {"class": "num", "data-col": name}, f[name]) for name, _, _ in CALL_PARTS],
                el("td", {"class": "num", "data-col": "error_rate"}, _percent(error_rate(f))),
                el("td", {"class": "num"}, seconds(f["p50_ms"])),
                el("td", {"class": "num"}, seconds(f["p95_ms"])),
                el("td", {"class": "num"}, dollars(f["cost_usd"])),
            ],
        )
        for r in rows
        for f in [r.figures]
    ]
    return el("table", {"class": "stats"}, el("thead", None, head), el("tbody", None, body))


def stats_page(view: StatsView, chrome: Chrome) -> Html:
    """Calls, error rate, p50/p95 latency and cost per provider and per mode, over a chosen window."""
    windows = el(
        "p",
        {"class": "windows"},
        [
            [
                el(
                    "a",
                    {
                        "href": url("/stats", {"window": w}),
                        "class": "here" if w == view.window else None,
                        "aria-current": "page" if w == view.window else None,
                    },
                    label,
                ),
                " ",
            ]
            for w, label in WINDOW_LABELS.items()
        ],
    )
    totals = view.by_mode["totals"]
    summary = el(
        "p",
        {"class": "muted"},
        f"{_calls(totals['calls'])} {WINDOW_SPANS[view.window]}; error rate "
        f"{_percent(error_rate(totals))} ({ERROR_RATE_MEANS}); p50 {seconds(totals['p50_ms'])}, p95 "
        f"{seconds(totals['p95_ms'])}; cost {dollars(totals['cost_usd'])}. "
        "Per provider counts each backend call (council members one by one); per mode counts "
        "each call once.",
    )
    return document(
        "Stats",
        [
            el("h1", None, f"Stats · {WINDOW_LABELS[view.window]}"),
            windows,
            summary,
            el("h2", None, "Per provider"),
            _charts(view.by_provider, "provider", "by-provider"),
            el("h2", None, "Per mode"),
            _charts(view.by_mode, "mode", "by-mode"),
        ],
        chrome,
        "stats",
    )


def login_page(csrf: str, problem: str | None = None) -> Html:
    """The team server's login form: an API key of read scope or higher, exchanged for a session."""
    return document(
        "Log in",
        el(
            "form",
            {"class": "login", "method": "post", "action": url("/login")},
            [
                el("h1", None, "ask-fable traces"),
                el(
                    "p",
                    {"class": "muted"},
                    "Log in with an API key of read scope or higher. The key is checked "
                    "once; the browser keeps only a session cookie, never the key.",
                ),
                _problems([problem]) if problem else None,
                el("label", {"for": "key"}, "API key"),
                el(
                    "input",
                    {"type": "password", "id": "key", "name": "key", "autocomplete": "off", "required": True},
                ),
                el("input", {"type": "hidden", "name": "csrf", "value": csrf}),
                el("button", {"type": "submit"}, "Log in"),
            ],
        ),
        Chrome(),
    )


def message_page(title: str, message: str, chrome: Chrome) -> Html:
    """A page saying one thing: not found, not allowed, a store that could not be read."""
    return document(title, [el("h1", None, title), el("p", {"class": "message"}, message)], chrome)
