"""stats, trace_list, trace_get and configure_tracing through the MCP client, on real traffic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ask_fable.config import config_file_path, load_settings
from ask_fable.core.app import App
from ask_fable.stores.answers import save_answer
from ask_fable.surface.server import build_server
from ask_fable.surface.tools.observability import StatsResult
from tests.e2e.helpers import TEST_KEY, structured, wired_app
from tests.fakes.fake_provider import FakeProvider

KEY = TEST_KEY





async def _traffic(c: Client, fp: FakeProvider) -> dict[str, str]:
    """Two ok GLM calls, one ok DeepSeek call, one upstream error and one guard refusal."""
    ids = {}
    ids["glm1"] = (await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"}))["trace_id"]
    ids["glm2"] = (await structured(c, "ask_glm", {"question": "Is the backoff jittered?"}))["trace_id"]
    ids["ds"] = (await structured(c, "ask_deepseek", {"question": "Is the index partial?"}))["trace_id"]
    fp.enqueue("anthropic", status=400, error="bad request body")
    failed = await structured(c, "ask_glm", {"question": "Does this one fail upstream?"})
    assert failed["status"] == "error"
    ids["err"] = failed["trace_id"]
    refused = await structured(c, "ask_glm", {"question": "hi"})
    assert refused["status"] == "refused"
    ids["refused"] = refused["trace_id"]
    return ids


async def test_stats_buckets_totals_and_filters(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["all"])) as c:
        await _traffic(c, fp)
        by_tool = await structured(c, "stats", {"by": "tool"})
        assert by_tool["status"] == "ok" and by_tool["window"] == "24h" and by_tool["by"] == "tool"
        buckets = {b["tool"]: b for b in by_tool["buckets"]}
        assert buckets["ask_glm"]["calls"] == 4 and buckets["ask_glm"]["ok"] == 2
        assert buckets["ask_glm"]["errors"] == 1 and buckets["ask_glm"]["refused"] == 1
        assert buckets["ask_glm"]["allowed"] == 3
        assert buckets["ask_deepseek"]["calls"] == 1
        totals = by_tool["totals"]
        assert totals["calls"] == 5 and totals["errors"] == 1 and totals["error_rate"] == 0.2
        assert totals["avg_ms"] is not None and totals["p95_ms"] is not None

        by_provider = await structured(c, "stats", {"by": "provider", "window": "1h"})
        providers = {b["provider"]: b["calls"] for b in by_provider["buckets"]}
        assert providers == {"glm": 3, "deepseek": 1}  # the refusal reached no backend

        glm_only = await structured(c, "stats", {"by": "tool", "model": "glm-5.2", "window": "all"})
        assert {b["tool"] for b in glm_only["buckets"]} == {"ask_glm"}
        assert glm_only["filters"] == {"model": "glm-5.2"}

        by_mode = await structured(c, "stats", {"by": "mode"})
        assert [b["mode"] for b in by_mode["buckets"]] == ["single"]
        by_session = await structured(c, "stats", {"by": "session", "session": "nobody"})
        assert by_session["records"] == 0 and by_session["buckets"] == []
        # Every figure is sent, null where no call gave it.
        assert {by_session["totals"][name] for name in ("avg_ms", "p50_ms", "p95_ms", "cost_usd")} == {None}
    for sent in (by_tool, by_provider, by_mode, by_session):
        assert StatsResult.model_validate(sent).wire() == sent  # the result model reads what it sends


async def test_stats_is_never_cached(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp, cache=True), toolsets=["all"])) as c:
        await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"})
        first = await structured(c, "stats", {"by": "tool"})
        # A cache hit, still audited:
        await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"})
        second = await structured(c, "stats", {"by": "cache"})
        third = await structured(c, "stats", {"by": "tool"})
    assert first["totals"]["calls"] == 1 and third["totals"]["calls"] == 2
    assert {b["cache"]: b["calls"] for b in second["buckets"]} == {"hit": 1, "miss": 1}


OUTCOMES = ("ok", "refused", "errors", "not_configured", "circuit_open", "needs_context")


def _by(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b[result["by"]]: b for b in result["buckets"]}


async def test_stats_counts_each_call_once_and_a_failure_under_the_model_asked(
    fp: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Config states and missing context get their own counts, member timeouts are errors, and a
    failed single-model call counts under its model rather than ``unknown``."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no codex: binary_missing
    fp.enqueue("ollama", hang=True, match="hang:cloud")
    app = wired_app(fp, deepseek_api_key=None, ollama_base_url=fp.base_url, council_timeout=1.5)
    async with Client(build_server(app, toolsets=["all"])) as c:
        assert (await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"}))["status"] == "ok"
        fp.enqueue("anthropic", status=400, error="bad request body", match="glm-5.2")
        failed = await structured(c, "ask_glm", {"question": "Does this one fail upstream?"})
        assert failed["kind"] == "upstream_error"
        unset = await structured(c, "ask_deepseek", {"question": "Is the index partial?"})
        missing = await structured(c, "ask_codex", {"question": "Is the index partial?"})
        assert (unset["kind"], missing["kind"]) == ("not_configured", "binary_missing")
        assert (await structured(c, "ask_glm", {"question": "hi"}))["status"] == "refused"
        gone = await structured(c, "ask_glm", {"question": "Is this ok?", "context_ref": "no-such-key"})
        assert gone["status"] == "needs_context"
        council = await structured(c, "ask_council", {
            "question": "Is the retry loop bounded?", "synthesizer": "glm",
            "models": ["glm", "deepseek", "ollama:alpha", "ollama:hang"]})
        assert council["quorum"] == "2/4", council
        views = {by: await structured(c, "stats", {"by": by}) for by in ("model", "provider", "tool")}

    for view in views.values():
        for figures in [*view["buckets"], view["totals"]]:
            assert figures["calls"] == sum(figures[name] for name in OUTCOMES), figures
    totals = views["tool"]["totals"]
    assert totals["calls"] == 7 and totals["not_configured"] == 2 and totals["needs_context"] == 1
    assert totals["errors"] == 1 and totals["error_rate"] == round(1 / 4, 4)

    models = _by(views["model"])
    assert models["glm-5.2"]["errors"] == 1 and models["glm-5.2"]["ok"] == 2  # ask_glm + the council
    assert models["deepseek-v4-pro"]["not_configured"] == 1 and models["deepseek-v4-pro"]["avg_ms"] is None
    assert models["unknown"]["calls"] == 2
    assert models["unknown"]["refused"] == models["unknown"]["needs_context"] == 1

    providers = _by(views["provider"])
    assert providers["deepseek"]["not_configured"] == 2 and providers["deepseek"]["errors"] == 0
    assert providers["codex"]["not_configured"] == 1
    assert providers["ollama"]["ok"] == 1 and providers["ollama"]["errors"] == 1  # the cancelled member
    assert providers["glm"]["errors"] == 1 and providers["glm"]["ok"] == 3


@pytest.mark.parametrize(("arguments", "allowed"), [
    ({"window": "2d"}, ["1h", "24h", "7d", "all"]),
    ({"by": "color"}, ["model", "provider", "tool", "session", "day", "project", "cache", "mode", "tenant"]),
])
async def test_stats_bad_values_list_the_allowed_ones(
    fp: FakeProvider, arguments: dict[str, str], allowed: list[str]
) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["observability"])) as c:
        result = await structured(c, "stats", arguments)
        schema = {t.name: t.input_schema for t in (await c.list_tools()).tools}["stats"]
    assert result["kind"] == "bad_args" and result["allowed"] == allowed
    assert all(value in result["detail"] for value in allowed)
    name = next(iter(arguments))
    assert schema["properties"][name]["enum"] == allowed


async def test_trace_list_filters_clamps_and_pages(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["all"])) as c:
        ids = await _traffic(c, fp)
        everything = await structured(c, "trace_list", {})
        order = [t["trace_id"] for t in everything["traces"]]
        assert order == [ids["refused"], ids["err"], ids["ds"], ids["glm2"], ids["glm1"]]
        assert everything["limit"] == 20 and "next_before" not in everything
        assert all("question" not in t and "answer" not in t for t in everything["traces"])

        assert (await structured(c, "trace_list", {"limit": 0}))["limit"] == 1
        assert (await structured(c, "trace_list", {"limit": 10_000}))["limit"] == 200

        # Each trace_list call is a trace too: page from the first listing's own id back.
        page1 = await structured(c, "trace_list", {"limit": 2, "before": everything["trace_id"]})
        page2 = await structured(c, "trace_list", {"limit": 2, "before": page1["next_before"]})
        page3 = await structured(c, "trace_list", {"limit": 2, "before": page2["next_before"]})
        paged = [t["trace_id"] for p in (page1, page2, page3) for t in p["traces"]]
        assert paged == order and page3["count"] == 1 and "next_before" not in page3

        errors = await structured(c, "trace_list", {"status": "error"})
        assert [t["trace_id"] for t in errors["traces"]] == [ids["err"]]
        deepseek = await structured(c, "trace_list", {"provider": "deepseek"})
        assert [t["trace_id"] for t in deepseek["traces"]] == [ids["ds"]]
        assert deepseek["traces"][0]["providers"] == ["deepseek"]
        by_tool = await structured(c, "trace_list", {"tool": "ask_deepseek"})
        assert by_tool["count"] == 1
        other_project = await structured(c, "trace_list", {"project": "elsewhere"})
        assert other_project["count"] == 0

        unknown = await structured(c, "trace_list", {"before": "0000000000000000deadbeef"})
        assert unknown["status"] == "error" and unknown["kind"] == "not_found"
        for cursor in ("../etc", "-1", "nan", "inf", "-0.5"):  # no trace is older than the epoch
            bad = await structured(c, "trace_list", {"before": cursor})
            assert bad["kind"] == "bad_args", (cursor, bad)
            assert "use a trace_id (next_before) or epoch seconds from 0" in bad["detail"]
        weird = await structured(c, "trace_list", {"status": "weird"})
        assert weird["kind"] == "bad_args" and "use ok, refused, error, needs_context" in weird["detail"]
        by_time = await structured(c, "trace_list", {"before": "1"})
        assert by_time["count"] == 0


async def test_trace_get_timeline_and_errors(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["all"])) as c:
        ids = await _traffic(c, fp)
        got = await structured(c, "trace_get", {"trace_id": ids["glm1"]})
        trace = got["trace"]
        assert trace["trace_id"] == ids["glm1"] and trace["tool"] == "ask_glm" and trace["status"] == "ok"
        names = [e["name"] for e in trace["events"]]
        assert names[0] == "request" and names[-1] == "response"
        assert "guard" in names and "provider.start" in names and "provider.end" in names
        assert trace["events_truncated"] is False and trace["artifacts"] == {}

        safe = await structured(c, "trace_get", {"trace_id": ids["glm1"], "include_content": True})
        assert "content" not in safe and "safe mode" in safe["content_note"]

        failed = await structured(c, "trace_get", {"trace_id": ids["err"]})
        assert failed["trace"]["status"] == "error" and failed["trace"]["kind"] == "upstream_error"

        missing = await structured(c, "trace_get", {"trace_id": "0000000000000000deadbeef"})
        assert missing["status"] == "error" and missing["kind"] == "not_found"
        bad = await structured(c, "trace_get", {"trace_id": "../../etc/passwd"})
        assert bad["kind"] == "bad_args"


async def test_configure_tracing_persists_and_applies_on_the_nextstructured(
    fp: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """configure_tracing(full) overrides the env's safe mode: the next ask writes a bundle and saves."""
    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", KEY)
    monkeypatch.setenv("ASK_FABLE_GLM_BASE_URL", fp.base_url)
    monkeypatch.setenv("ASK_FABLE_TRACE_MODE", "safe")
    monkeypatch.setenv("ASK_FABLE_CACHE", "0")
    app = App()  # settings follow the config file, as a served process's do
    async with Client(build_server(app, toolsets=["all"])) as c:
        before = await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"})
        assert "saved" not in before

        configured = await structured(c, "configure_tracing", {"trace_mode": "full"})
        assert configured["status"] == "ok" and configured["trace_mode"] == "full"
        assert configured["save_answers"] is True and configured["stream_reasoning"] is False
        assert configured["config_file"] == str(config_file_path())
        assert json.loads(config_file_path().read_text())["trace_mode"] == "full"

        fp.enqueue("anthropic", text="Bound it at five attempts.", thinking="weighing retry budgets")
        after = await structured(c, "ask_glm", {"question": "How many retries are safe here?",
                                           "context": "for attempt in range(N): call()"})
        assert after["status"] == "ok"
        saved = Path(after["saved"])
        assert saved.is_file() and "Bound it at five attempts." in saved.read_text()
        assert "## Thinking\n\nweighing retry budgets" in saved.read_text()
        assert app.traces.bundle_path(after["trace_id"]).is_file()
        assert not app.traces.bundle_path(before["trace_id"]).exists()

        full = await structured(c, "trace_get", {"trace_id": after["trace_id"], "include_content": True})
        assert full["trace_mode"] == "full" and full["trace"]["artifacts"]["bundle"]
        assert "How many retries are safe here?" in full["content"]
        assert "for attempt in range(N)" in full["content"]
        assert full["content_truncated"] is False

        short = await structured(c, "trace_get", {"trace_id": after["trace_id"], "include_content": True,
                                             "max_chars": 40})
        assert len(short["content"]) == 40 and short["content_truncated"] is True

        old = await structured(c, "trace_get", {"trace_id": before["trace_id"], "include_content": True})
        assert "content" not in old and "no content bundle" in old["content_note"]

        streaming = await structured(c, "configure_tracing", {"stream_reasoning": True})
        assert streaming["stream_reasoning"] is True and streaming["trace_mode"] == "full"
        assert app.settings.stream_reasoning is True

        back = await structured(c, "configure_tracing", {"trace_mode": "safe"})
        assert back["trace_mode"] == "safe" and app.settings.trace_mode == "safe"
        later = await structured(c, "ask_glm", {"question": "Is the jitter uniform?"})
        assert "saved" not in later and not app.traces.bundle_path(later["trace_id"]).exists()

        nothing = await structured(c, "configure_tracing", {})
        assert nothing["kind"] == "bad_args"
        wrong = await structured(c, "configure_tracing", {"trace_mode": "verbose"})
        assert wrong["kind"] == "bad_args"
    assert json.loads(config_file_path().read_text()) == {"stream_reasoning": True, "trace_mode": "safe"}


async def test_configure_tracing_on_pinned_settings_says_when_it_applies(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["catalogs"])) as c:
        result = await structured(c, "configure_tracing", {"trace_mode": "full"})
    assert result["status"] == "ok" and result["trace_mode"] == "safe"
    assert "servers started from now on" in result["note"]
    assert json.loads(config_file_path().read_text()) == {"trace_mode": "full"}


async def test_observability_annotations(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["all"])) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    for name in ("stats", "trace_list", "trace_get"):
        ann = tools[name].annotations
        assert ann.read_only_hint and ann.idempotent_hint and ann.open_world_hint is False
    configure = tools["configure_tracing"].annotations
    assert configure.read_only_hint is False and configure.destructive_hint is False


async def test_saved_debate_answer_has_a_transcript_section(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp, save=True), toolsets=["all"])) as c:
        result = await structured(c, "ask_debate", {"question": "Should we shard the orders table now?",
                                               "proposer": "glm", "opponent": "deepseek",
                                               "adjudicator": "glm"})
    assert result["status"] == "ok", result
    text = Path(result["saved"]).read_text()
    head, _, transcript = text.partition("\n## Transcript\n")
    assert transcript, text
    assert f"- **trace_id**: {result['trace_id']}" in head and "- **transcript**" not in head
    assert "- **model**: glm-5.2" in head
    assert "### Debate: glm vs deepseek" in transcript  # nested under the section, not a second title
    assert "### proposer — glm" in transcript and "### opponent — deepseek" in transcript
    assert text.count("\n# ") == 0 and text.startswith("# ask_debate:")


def test_save_answer_drops_none_meta_and_gives_transcripts_a_section() -> None:
    settings = load_settings()
    transcript = "# Debate: a vs b\n\n## proposer\nclaim one\n```\n# not a heading\n```"
    path = save_answer(settings, "ask_debate", "q?", "a", meta={"trace_id": "t1", "model": None,
                                                               "transcript": transcript})
    text = path.read_text()
    assert "model" not in text and "- **trace_id**: t1" in text
    nested = "## Transcript\n\n### Debate: a vs b\n\n#### proposer\nclaim one\n```\n# not a heading\n```"
    assert nested in text
    none = save_answer(settings, "ask", "q?", "a", meta={"transcript": None}).read_text()
    assert "Transcript" not in none and "transcript" not in none
