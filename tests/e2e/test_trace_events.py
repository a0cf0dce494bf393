"""What a call's trace records for its timeline, read back with trace_get through an MCP client:
retries with their cause and wait, each backend call's outcome, sidecar, tokens and cost, the
member a council cut at its deadline, and the mode's summary. Metadata only, never reply text."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.e2e.helpers import structured
from tests.e2e.test_mode_tools import answer, http_settings
from tests.fakes.fake_provider import FakeProvider

FAST = RetryPolicy(attempts=3, base_delay=0.05, max_delay=0.1)


async def _council_trace(fp: FakeProvider) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    fp.enqueue("anthropic", text=answer("Keep the lock.", "apply"), match="glm-5.2")
    fp.enqueue(
        "anthropic",
        status=503,
        error="upstream overloaded: secret body text",
        match="deepseek-v4-pro",
        times=2,
    )
    fp.enqueue("anthropic", text=answer("Drop the lock.", "reject", "medium"), match="deepseek-v4-pro")
    fp.enqueue(
        "openai",
        text=answer("Keep it.", "apply"),
        match="zai-org/glm-5.2",
        usage={"input_tokens": 40, "output_tokens": 9, "cost": 0.0125},
    )
    fp.enqueue("openai", text=answer("Too late.", "apply"), match="slow-model", delay=8)
    fp.enqueue("anthropic", text=answer("Synthesis: keep it.", "apply"), match="deepseek-v4-pro")
    settings = http_settings(fp, council_timeout=2.4, timeout=10)
    app = App(load_settings(**settings), resources=Resources(retry=FAST))
    async with Client(build_server(app, toolsets=["all"])) as client:
        with anyio.fail_after(30):
            result = await structured(
                client,
                "ask_council",
                {
                    "question": "Should the cache keep its global lock?",
                    "synthesizer": "deepseek",
                    "models": ["glm", "deepseek", "atlas:zai-org/glm-5.2", "atlas:slow-model"],
                },
            )
            trace = (await structured(client, "trace_get", {"trace_id": result["trace_id"]}))["trace"]
            stats = await structured(client, "stats", {"window": "24h", "by": "provider"})
    await app.aclose()
    return result, trace, stats


def _ends(trace: dict[str, Any], token: str) -> list[dict[str, Any]]:
    return [
        e["attrs"] for e in trace["events"] if e["name"] == "provider.end" and e["attrs"]["token"] == token
    ]


async def test_a_council_trace_holds_what_its_timeline_needs(fp: FakeProvider) -> None:
    result, trace, _ = await _council_trace(fp)
    assert result["status"] == "ok" and result["quorum"] == "3/4", result
    retries = [e for e in trace["events"] if e["name"] == "provider.retry"]
    assert [(r["attrs"]["token"], r["attrs"]["attempt"], r["attrs"]["cause"]) for r in retries] == [
        ("deepseek", 1, "HTTP 503"),
        ("deepseek", 2, "HTTP 503"),
    ]
    assert all(r["attrs"]["role"] == "member" and r["attrs"]["delay_ms"] >= 0 for r in retries)
    starts = [
        e["t_ms"]
        for e in trace["events"]
        if e["name"] == "provider.start"
        and e["attrs"]["token"] == "deepseek"
        and e["attrs"]["role"] == "member"
    ]
    member_end = next(
        e
        for e in trace["events"]
        if e["name"] == "provider.end"
        and e["attrs"]["token"] == "deepseek"
        and e["attrs"]["role"] == "member"
    )
    assert starts[0] <= retries[0]["t_ms"] <= retries[1]["t_ms"] <= member_end["t_ms"]
    assert member_end["attrs"]["status"] == "ok"
    assert member_end["attrs"]["recommendation"] == "reject" and member_end["attrs"]["confidence"] == "medium"
    assert member_end["attrs"]["input_tokens"] > 0
    [atlas] = _ends(trace, "atlas:zai-org/glm-5.2")
    assert atlas["cost_usd"] == 0.0125 and atlas["input_tokens"] == 40 and atlas["output_tokens"] == 9
    [slow] = _ends(trace, "atlas:slow-model")
    assert slow["status"] == "timeout" and slow["cut"] is True
    [mode_end] = [e["attrs"] for e in trace["events"] if e["name"] == "mode.end"]
    assert mode_end["quorum"] == "3/4" and mode_end["consensus"] == result["consensus"]
    assert mode_end["synth_fallback"] is False
    [response] = [e["attrs"] for e in trace["events"] if e["name"] == "response"]
    # The council's own confidence (capped by its consensus and quorum), as its result says.
    assert response["recommendation"] == "apply" and response["confidence"] == result["confidence"]
    assert "secret body text" not in json.dumps(trace) and "Keep the lock" not in json.dumps(trace)


async def test_stats_per_provider_report_p50_and_every_calls_cost(fp: FakeProvider) -> None:
    """Stats count what each backend call cost: Atlas's reported price, and GLM's and DeepSeek's
    computed from the tokens they reported; the totals are the council's own cost_usd."""
    result, trace, stats = await _council_trace(fp)
    buckets = {b["provider"]: b for b in stats["buckets"]}
    assert buckets["atlas"]["cost_usd"] == 0.0125
    ends = [e["attrs"] for e in trace["events"] if e["name"] == "provider.end"]
    glm = sum(e["cost_usd"] for e in ends if e["provider"] == "glm")
    assert glm > 0 and buckets["glm"]["cost_usd"] == round(glm, 6)
    assert buckets["glm"]["p50_ms"] is not None and buckets["glm"]["p50_ms"] <= buckets["glm"]["p95_ms"]
    assert stats["totals"]["cost_usd"] == round(result["cost_usd"], 6)


async def test_a_councils_cost_is_the_sum_of_every_backend_call_it_made(fp: FakeProvider) -> None:
    """Members and the synthesizer each carry their own cost; the result's cost_usd and usage add up
    every provider.end of the trace, and cost_source says some parts were reported, some priced."""
    result, trace, _ = await _council_trace(fp)
    ends = [e["attrs"] for e in trace["events"] if e["name"] == "provider.end"]
    priced = [e for e in ends if e.get("cost_usd") is not None]
    assert len(priced) == 4  # glm, deepseek and atlas members, then the deepseek synthesizer
    assert result["cost_usd"] == round(sum(e["cost_usd"] for e in priced), 10)
    assert result["cost_source"] == "mixed"
    assert result["usage"]["cost_usd"] == result["cost_usd"]
    assert result["usage"]["input_tokens"] == sum(e.get("input_tokens") or 0 for e in ends)
    sources = {s["token"]: s for s in result["sources"]}
    assert sources["atlas:zai-org/glm-5.2"]["cost_usd"] == 0.0125
    assert sources["atlas:zai-org/glm-5.2"]["cost_source"] == "reported"
    assert sources["glm"]["cost_source"] == "estimated" and sources["glm"]["cost_usd"] > 0
    assert "cost_usd" not in sources["atlas:slow-model"]
    synth = [e for e in ends if e["role"] == "synthesizer"]
    assert len(synth) == 1 and synth[0]["cost_source"] == "estimated"
