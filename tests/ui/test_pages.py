"""The web view's pages in a real headless Chromium, rendered from the traces of real calls: what a
person sees (bars, labels, colours), and that nothing on them runs or breaks."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from tests.ui import browser
from tests.ui.recorded import COUNCIL_MEMBERS, HOSTILE_SESSION, Recorded

GREEN, RED, ORANGE_CUT, AMBER, TEAL, PURPLE, STRAGGLER = (
    "rgb(47, 158, 90)",
    "rgb(217, 69, 59)",
    "rgb(156, 79, 10)",
    "rgb(242, 193, 46)",
    "rgb(42, 155, 181)",
    "rgb(125, 91, 189)",
    "rgb(196, 106, 43)",
)


def base(address: str) -> str:
    return address.split("/ui/", 1)[0]


def visit(driver: Any, address: str, path: str, **params: str) -> None:
    driver.get(f"{base(address)}{path}" + (f"?{urlencode(params)}" if params else ""))


def css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


def computed(element: Any, prop: str) -> str:
    """A style property as the browser computed it (``rgb(…)`` for colours)."""
    return str(element.parent.execute_script(f"return getComputedStyle(arguments[0]).{prop}", element))


def fill(element: Any) -> str:
    return computed(element, "fill")


def lane(driver: Any, token: str, role: str | None) -> Any:
    """The timeline row of one backend call."""
    for row in css(driver, "svg.timeline g.lane-backend"):
        label = row.find_element("css selector", "text.lane-label").text
        if label.startswith(token) and (role is None or row.get_attribute("data-role") == role):
            return row
    raise AssertionError(f"no lane for {token} ({role})")


def bar_span(row: Any) -> tuple[float, float]:
    """Where a lane's bars start and end, in the picture's units."""
    rects = row.find_elements("css selector", "rect.seg")
    starts = [float(r.get_attribute("x")) for r in rects]
    ends = [float(r.get_attribute("x")) + float(r.get_attribute("width")) for r in rects]
    return min(starts), max(ends)


def facts(driver: Any, section: str = "#timeline .summary") -> dict[str, str]:
    terms = css(driver, f"{section} dt")
    values = css(driver, f"{section} dd")
    return {t.text: v.text for t, v in zip(terms, values, strict=True)}


def clean_page(driver: Any, shots: Path, name: str) -> None:
    """The page ran no script, logged no error (a CSP violation would be one), and is pictured."""
    assert driver.execute_script("return document.scripts.length") == 0
    assert driver.execute_script("return window.__pwned === undefined")
    assert browser.console_errors(driver) == []
    browser.screenshot(driver, shots / f"{name}.png")


def test_the_trace_list_shows_every_call_newest_first_with_coloured_statuses(
    page: Any, ui_address: str, recorded: Recorded, screenshots: Path
) -> None:
    visit(page, ui_address, "/ui/traces")
    rows = [row.get_attribute("data-trace") for row in css(page, "table.traces tbody tr")]
    assert sorted(rows) == sorted(recorded.ids.values())
    assert rows == sorted(rows, reverse=True)  # trace ids sort by time
    failed = page.find_element("css selector", f'tr[data-trace="{recorded.ids["failed"]}"] .badge')
    assert failed.text == "error" and computed(failed, "backgroundColor") == RED
    ok = page.find_element("css selector", f'tr[data-trace="{recorded.ids["council"]}"] .badge')
    assert computed(ok, "backgroundColor") == GREEN
    clean_page(page, screenshots, "trace-list")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"tool": "ask_chain"}, {"chain", "hostile"}),
        ({"tool": "ask_council"}, {"council", "stragglers"}),
        ({"status": "error"}, {"failed"}),
        ({"provider": "atlas"}, {"council", "chain"}),
        ({"session": "ask_council"}, {"council"}),
        ({"tool": "ask_glm", "status": "ok"}, {"first", "cached", "safe"}),
        ({"from": "2000-01-01T00:00", "to": "2000-01-02T00:00"}, set()),
        ({"from": "2000-01-01T00:00", "status": "refused"}, {"refused"}),
        ({"project": "no-such-project"}, set()),
    ],
)
def test_the_trace_list_filters_like_trace_list(
    page: Any, ui_address: str, recorded: Recorded, params: dict[str, str], expected: set[str]
) -> None:
    visit(page, ui_address, "/ui/traces", **params)
    shown = {row.get_attribute("data-trace") for row in css(page, "table.traces tbody tr")}
    assert shown == {recorded.ids[name] for name in expected}
    if not expected:
        assert "No calls match" in page.find_element("css selector", "p.empty").text
    for name, value in params.items():
        control = page.find_element("css selector", f'form.filters [name="{name}"]')
        assert control.get_attribute("value") == value
    assert browser.console_errors(page) == []


def test_a_council_timeline_shows_each_member_its_retries_the_cut_and_the_synthesis(
    page: Any, ui_address: str, recorded: Recorded, screenshots: Path
) -> None:
    visit(page, ui_address, f"/ui/traces/{recorded.ids['council']}")
    lanes = css(page, "svg.timeline g.lane")
    assert [row.get_attribute("data-lane") for row in lanes[:2]] == ["call", "mode"]
    assert len(lanes) == 2 + len(COUNCIL_MEMBERS) + 1
    members = [row for row in lanes if row.get_attribute("data-role") == "member"]
    assert len(members) == len(COUNCIL_MEMBERS)
    spans = [bar_span(row) for row in members]
    assert max(start for start, _ in spans) < min(end for _, end in spans)  # all started before any ended

    retried = lane(page, "deepseek", "member")
    kinds = [r.get_attribute("data-outcome") for r in retried.find_elements("css selector", "rect.seg")]
    assert kinds == ["retried", "wait", "retried", "wait", "ok"]
    assert "2 retries" in retried.find_element("css selector", "text.lane-time").text
    assert fill(retried.find_element("css selector", "rect.o-retried")) == AMBER
    assert fill(retried.find_element("css selector", "rect.o-ok")) == GREEN

    failing = lane(page, "ollama:gpt-oss", "member")
    assert failing.get_attribute("data-outcome") == "error"
    assert "upstream_error" in failing.find_element("css selector", "text.lane-time").text
    assert fill(failing.find_element("css selector", "rect.o-error")) == RED

    cut = lane(page, "atlas:qwen/qwen3-max", "member")
    assert cut.get_attribute("data-outcome") == "cut"
    assert "cut at the deadline" in cut.find_element("css selector", "text.lane-time").text
    assert fill(cut.find_element("css selector", "rect.o-cut")) == ORANGE_CUT
    slowest_end = max(end for _, end in spans)
    synthesis = lane(page, "deepseek", "synthesizer")
    assert bar_span(synthesis)[0] >= slowest_end - 1  # the synthesis waited for the slowest member
    assert bar_span(cut)[1] == pytest.approx(slowest_end, abs=1)

    summary = facts(page)
    assert summary["Quorum (answered/asked)"] == "6/8"
    assert summary["Synthesis"] == "as requested"
    assert summary["Retries"] == "4"
    # The three members' reported $0.0356, and the others priced from their tokens on top.
    assert float(summary["Cost"].removeprefix("$")) > 0.0356
    assert summary["Recommendation"].startswith("apply")
    assert summary["Consensus"] == "divergent"
    legend = {item.get_attribute("data-legend") for item in css(page, "ul.legend li")}
    assert {"ok", "error", "cut", "retried", "wait"} <= legend
    steps = {row.find_element("css selector", "td").text for row in css(page, "table.lanes tbody tr")}
    assert {"glm", "deepseek", "atlas:qwen/qwen3-max"} <= steps
    assert "Should the cache keep its global lock?" in page.find_element("css selector", "pre.content").text
    clean_page(page, screenshots, "council")


def test_a_member_cut_as_a_straggler_is_told_apart_from_one_cut_at_the_deadline(
    page: Any, ui_address: str, recorded: Recorded, screenshots: Path
) -> None:
    visit(page, ui_address, f"/ui/traces/{recorded.ids['stragglers']}")
    hung = lane(page, "ollama:hang", "member")
    assert hung.get_attribute("data-outcome") == "straggler"
    assert "cut as a straggler" in hung.find_element("css selector", "text.lane-time").text
    assert fill(hung.find_element("css selector", "rect.o-straggler")) == STRAGGLER
    [quorum] = css(page, 'g.lane[data-lane="mode"] path.mark[data-mark="council.quorum"]')
    assert quorum.find_element("css selector", "title").get_attribute("textContent").startswith("quorum 2/3")
    legend = {item.get_attribute("data-legend"): item.text for item in css(page, "ul.legend li")}
    assert legend["straggler"] == "cut as a straggler" and "cut" not in legend
    notes = [row.text for row in css(page, "table.lanes tbody tr") if row.text.startswith("ollama:hang")]
    assert notes and "after the straggler wait" in notes[0]
    clean_page(page, screenshots, "stragglers")


def test_chain_stages_and_debate_turns_run_one_after_another(
    page: Any, ui_address: str, recorded: Recorded, screenshots: Path
) -> None:
    visit(page, ui_address, f"/ui/traces/{recorded.ids['chain']}")
    stages = css(page, "svg.timeline g.lane-backend")
    assert [row.get_attribute("data-role") for row in stages] == ["draft", "critique", "decide"]
    spans = [bar_span(row) for row in stages]
    assert all(earlier[1] <= later[0] + 1 for earlier, later in itertools.pairwise(spans))
    assert all(row.get_attribute("data-outcome") == "ok" for row in stages)
    assert facts(page)["Stages answered"] == "3/3"
    clean_page(page, screenshots, "chain")

    visit(page, ui_address, f"/ui/traces/{recorded.ids['debate']}")
    turns = css(page, "svg.timeline g.lane-backend")
    assert [row.get_attribute("data-role") for row in turns] == ["proposer", "opponent"]
    assert facts(page)["Resolution"] == "conceded"
    clean_page(page, screenshots, "debate")


def test_a_cached_call_is_one_bar_with_no_model_called(
    page: Any, ui_address: str, recorded: Recorded, screenshots: Path
) -> None:
    visit(page, ui_address, f"/ui/traces/{recorded.ids['cached']}")
    lanes = css(page, "svg.timeline g.lane")
    assert [row.get_attribute("data-lane") for row in lanes] == ["call"]
    call = lanes[0]
    assert call.get_attribute("data-outcome") == "cached"
    assert fill(call.find_element("css selector", "rect.seg")) == TEAL
    marks = {m.get_attribute("data-mark") for m in call.find_elements("css selector", "path.mark")}
    assert {"guard", "cache.lookup"} <= marks
    assert "No model was called." in page.find_element("css selector", "main").text
    clean_page(page, screenshots, "cached")


@pytest.mark.parametrize(
    ("name", "outcome", "colour", "text"),
    [
        ("failed", "error", RED, "upstream_error"),
        ("refused", "refused", PURPLE, "No model was called."),
        ("safe", "ok", GREEN, "traced in safe mode"),
    ],
)
def test_failures_refusals_and_safe_mode_calls_say_what_happened(
    page: Any,
    ui_address: str,
    recorded: Recorded,
    screenshots: Path,
    name: str,
    outcome: str,
    colour: str,
    text: str,
) -> None:
    visit(page, ui_address, f"/ui/traces/{recorded.ids[name]}")
    call = css(page, "svg.timeline g.lane")[0]
    assert call.get_attribute("data-outcome") == outcome
    assert fill(call.find_element("css selector", "rect.seg")) == colour
    assert text in page.find_element("css selector", "main").text
    clean_page(page, screenshots, name)


def test_hostile_questions_answers_and_labels_render_as_text(
    page: Any, ui_address: str, recorded: Recorded, screenshots: Path
) -> None:
    visit(page, ui_address, "/ui/traces", session=HOSTILE_SESSION)
    cells = css(page, "table.traces tbody tr td")
    assert HOSTILE_SESSION in [cell.text for cell in cells]
    assert css(page, "table.traces img") == []
    clean_page(page, screenshots, "hostile-list")

    visit(page, ui_address, f"/ui/traces/{quote(recorded.ids['hostile'])}")
    content = page.find_element("css selector", "pre.content").text
    assert (
        "<script>window.__pwned = 1</script> \"quoted\" 'single' \u241b[31m\u2407 & <b>break</b>?" in content
    )
    assert "</pre><script>window.__pwned = 3</script>" in content
    assert css(page, "main a[href^='javascript']") == []
    assert css(page, "main b") == []
    clean_page(page, screenshots, "hostile-trace")


def test_the_stats_page_charts_calls_errors_latency_and_cost_per_provider_and_mode(
    page: Any, ui_address: str, screenshots: Path
) -> None:
    visit(page, ui_address, "/ui/stats", window="24h")
    providers = {row.get_attribute("data-row") for row in css(page, "#by-provider-calls g.bar-row")}
    assert {"glm", "deepseek", "ollama", "atlas"} <= providers
    ollama = page.find_element("css selector", '#by-provider-calls g.bar-row[data-row="ollama"]')
    assert fill(ollama.find_element("css selector", "rect.o-error")) == RED
    errors = page.find_element(
        "css selector", '#by-provider-errors g.bar-row[data-row="ollama"] text.lane-time'
    )
    assert errors.text.endswith("%") and errors.text != "0.0%"
    latency = page.find_element("css selector", '#by-provider-latency g.bar-row[data-row="glm"]')
    assert {r.get_attribute("data-part") for r in latency.find_elements("css selector", "rect")} == {
        "o-p50",
        "o-p95",
    }
    atlas_cost = page.find_element(
        "css selector", '#by-provider-cost g.bar-row[data-row="atlas"] text.lane-time'
    )
    assert atlas_cost.text == "$0.0396"
    modes = {row.get_attribute("data-row") for row in css(page, "#by-mode-calls g.bar-row")}
    assert {"council", "chain", "debate", "single"} <= modes
    clean_page(page, screenshots, "stats")
