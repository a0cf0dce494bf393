"""The web view says why a call failed and counts what happened: a failed trace shows the redacted
detail and the hint its result carried, a cancelled call is shown as cancelled, Stats' error rate
counts every call that returned ``status: "error"`` and its columns add up to the calls, a council
whose synthesis fell back shows the result's confidence, the timeline's diamonds have a legend, a
call without a session shows none, and ``ask-fable ui`` shows every tenant of this machine's stores
(the team server's included). Read from real pages of the installed ``ask-fable ui``; the same page
in headless Chromium where it is installed."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.http_app import HttpOptions, build_http_app
from ask_fable.surface.http_runner import serve_in_thread
from ask_fable.surface.server import build_server
from tests.e2e.test_mode_tools import KEY, answer, http_settings
from tests.fakes.fake_provider import FakeProvider
from tests.ui import browser
from tests.ui.server import ask_fable_ui, state_env

NO_CLAUDE = "/nonexistent/claude"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
UPSTREAM_SECRET = "sk-upstream-secret-0123456789abcdef"


@dataclass(frozen=True)
class Calls:
    env: dict[str, str]
    ids: dict[str, str]


def _settings(fp: FakeProvider) -> dict[str, Any]:
    return http_settings(fp, claude_cli=NO_CLAUDE, timeout=10)


async def _local_calls(fp: FakeProvider) -> dict[str, str]:
    ids: dict[str, str] = {}
    app = App(load_settings(**_settings(fp)), resources=Resources(retry=RetryPolicy(attempts=1)))
    async with Client(build_server(app, toolsets=["all"])) as client:

        async def call(name: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            payload = result.structured_content
            assert payload is not None and payload.get("trace_id"), payload
            ids[name] = payload["trace_id"]
            return payload

        fp.enqueue("anthropic", text=answer("Keep the lock."), match="glm-5.2")
        assert (await call("ok", "ask_glm", {"question": "Is the lock order safe here?"}))["status"] == "ok"
        missing = await call("missing", "ask_opus5", {"question": "Is the lock order safe here?"})
        assert (missing["kind"], bool(missing["hint"])) == ("binary_missing", True), missing
        fp.enqueue("anthropic", status=400, error=f"bad request: key {UPSTREAM_SECRET} over its limit",
                   match="deepseek-v4-pro")
        failed = await call("failed", "ask_deepseek", {"question": "Why does the nightly job fail?"})
        assert failed["kind"] == "upstream_error", failed

        fp.enqueue("ollama", text=answer("Alpha: keep it.", "apply", "high"), match="alpha:cloud")
        fp.enqueue("ollama", text=answer("Bravo: keep it.", "apply", "high"), match="bravo:cloud")
        fp.enqueue("anthropic", status=400, error="synthesis rejected", match="glm-5.2")
        council = await call("council", "ask_council", {
            "question": "Should the cache keep its global lock?", "models": ["ollama:alpha", "ollama:bravo"],
            "synthesizer": "glm"})
        assert council["synthesizer"] is None and council["confidence"] == "low", council
    await app.aclose()
    return ids


def _team_calls(fp: FakeProvider) -> dict[str, str]:
    """A call of tenant ``team`` through the HTTP server, and one its client hung up on (cancelled)."""
    app = App(load_settings(**_settings(fp)))
    _, key = app.keys.create("team laptop", "ask", "team")
    served = build_http_app(build_server(app, toolsets=["all"]), app.keys, HttpOptions(port=0))
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    with serve_in_thread(served) as url, httpx2.Client(base_url=url, headers=headers, timeout=30) as mcp:
        fp.enqueue("anthropic", text=answer("Team answer."), match="glm-5.2")
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "ask_glm", "arguments": {"question": "Is the team's lock order safe?"}}}
        done = mcp.post("/mcp", json=body).json()["result"]["structuredContent"]
        fp.enqueue("anthropic", hang=True, match="glm-5.2")
        body["params"]["arguments"] = {"question": "Will this call ever come back?"}
        with pytest.raises(httpx2.TimeoutException):
            mcp.post("/mcp", json=body, timeout=1.5)
        listed: list[Any] = []
        for _ in range(200):
            listed = app.traces.list("team", limit=5, status="cancelled")
            if listed:
                break
            time.sleep(0.05)
    assert listed, "the hung-up call was recorded as cancelled"
    return {"team": done["trace_id"], "cancelled": listed[0].trace_id}


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> Calls:
    env = state_env(tmp_path_factory.mktemp("what-failed-home"))
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for name in ("ASK_FABLE_TRACE_MODE", "ASK_FABLE_CACHE"):
            patch.delenv(name, raising=False)
        with FakeProvider() as fp:
            ids = anyio.run(_local_calls, fp)
            ids.update(_team_calls(fp))
    return Calls(env=env, ids=ids)


@pytest.fixture(scope="module")
def site(calls: Calls) -> Iterator[tuple[str, httpx2.Client]]:
    """The origin of a running ``ask-fable ui`` and a client logged in through its printed address."""
    with ask_fable_ui(calls.env) as (address, _), httpx2.Client(timeout=20) as client:
        assert client.get(address).status_code == 303
        yield address.split("/ui/", 1)[0], client


def _text(page: str) -> str:
    """A page's visible text, one space between words."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _page(site: tuple[str, httpx2.Client], path: str, **params: str) -> str:
    base, client = site
    response = client.get(f"{base}{path}", params=params)
    assert response.status_code == 200, response.text
    return response.text


def test_a_failed_trace_shows_the_redacted_detail_and_the_hint(site: Any, calls: Calls) -> None:
    missing = _text(_page(site, f"/ui/traces/{calls.ids['missing']}"))
    assert "What happened: ASK_FABLE_CLAUDE_CLI=/nonexistent/claude is not an executable file" in missing
    assert "How to fix it: point ASK_FABLE_CLAUDE_CLI at a Claude Code binary" in missing

    failed = _page(site, f"/ui/traces/{calls.ids['failed']}")
    assert 'id="why"' in failed and "over its limit" in _text(failed)
    assert UPSTREAM_SECRET not in failed and KEY not in failed

    answered = _page(site, f"/ui/traces/{calls.ids['ok']}")
    assert 'id="why"' not in answered


def test_a_cancelled_call_is_listed_and_drawn_as_cancelled(site: Any, calls: Calls) -> None:
    listing = _page(site, "/ui/traces", status="cancelled")
    assert re.findall(r'data-trace="(\w+)"', listing) == [calls.ids["cancelled"]]
    trace = _text(_page(site, f"/ui/traces/{calls.ids['cancelled']}"))
    assert "ask_glm · cancelled" in trace
    assert "was cancelled after" in trace and "cancelled while running: glm" in trace
    assert "cancelled before it returned" in trace  # the legend names the colour


def test_stats_columns_add_up_and_the_error_rate_counts_every_status_error(site: Any) -> None:
    page = _page(site, "/ui/stats", window="all")
    rows = re.findall(r'<tr data-row="([^"]+)">(.*?)</tr>', page, re.DOTALL)
    assert rows
    columns = ("ok", "refused", "errors", "not_configured", "circuit_open", "needs_context", "cancelled")
    for name, row in rows:
        cells = [_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)]
        parts = dict(re.findall(r'data-col="(\w+)">([^<]*)<', row))
        assert int(cells[1]) == sum(int(parts[column]) for column in columns), (name, cells)
    by_mode = {name: dict(re.findall(r'data-col="(\w+)">([^<]*)<', row)) for name, row in rows}
    # ask_glm twice (one of them a team call), ask_deepseek failing, one call cancelled: one status error.
    single = by_mode["single"]
    assert (single["ok"], single["errors"], single["cancelled"]) == ("2", "1", "1")
    assert single["error_rate"] == "25.0%"
    # ask_opus5 with no Claude Code: not configured is a status error too.
    assert (by_mode["ask"]["not_configured"], by_mode["ask"]["error_rate"]) == ("1", "100.0%")
    assert "6 calls in all; error rate 33.3% (calls that returned status error" in _text(page)


def test_a_council_whose_synthesis_fell_back_shows_the_results_confidence(site: Any, calls: Calls) -> None:
    trace = _text(_page(site, f"/ui/traces/{calls.ids['council']}"))
    assert "Recommendation apply (low confidence)" in trace
    assert "Synthesis fell back" in trace


def test_the_diamonds_have_a_legend_and_a_call_without_session_shows_none(site: Any, calls: Calls) -> None:
    trace = _page(site, f"/ui/traces/{calls.ids['council']}")
    marks = re.findall(r'data-legend-mark="([^"]+)"', trace)
    assert "guard" in marks and "council.quorum" in marks
    assert "the guard's decision" in _text(trace)
    assert "Session ask_council" not in _text(trace)
    listing = _page(site, "/ui/traces", tool="ask_council")
    row = re.search(r'<tr data-trace="\w+">(.*?)</tr>', listing, re.DOTALL)
    assert row is not None and "ask_council" in row.group(1)
    cells = [_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.DOTALL)]
    assert cells.count("ask_council") == 1, "the tool, and no session of the same name"


def test_the_local_view_shows_every_tenant_and_says_so(site: Any, calls: Calls) -> None:
    listing = _page(site, "/ui/traces")
    shown = set(re.findall(r'data-trace="(\w+)"', listing))
    assert {calls.ids["team"], calls.ids["ok"]} <= shown
    assert "every tenant of this machine's stores" in _text(listing)
    team_row = re.search(rf'<tr data-trace="{calls.ids["team"]}">(.*?)</tr>', listing, re.DOTALL)
    assert team_row is not None and ">team<" in team_row.group(1)


def test_the_failed_trace_reads_the_same_in_chromium(calls: Calls, tmp_path: Path) -> None:
    browser.require()
    with ask_fable_ui(calls.env) as (address, _), browser.chromium(tmp_path / "profile") as driver:
        driver.get(address)
        driver.get(f"{address.split('/ui/', 1)[0]}/ui/traces/{calls.ids['missing']}")
        why = driver.find_element("css selector", "#why")
        assert "How to fix it" in why.text and why.is_displayed()
        assert browser.console_errors(driver) == []
