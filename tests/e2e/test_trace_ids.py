"""Every result carries a trace_id that trace_get finds; traces record what the model was given."""

from __future__ import annotations

from mcp import Client

from ask_fable.surface.server import build_server
from tests.e2e.helpers import structured, wired_app
from tests.fakes.fake_provider import FakeProvider


async def test_results_outside_the_pipeline_carry_a_trace_id_that_trace_get_finds() -> None:
    """Help, a data tool, bad arguments and an unknown tool: each result has a trace_id, and its
    trace holds the tool, status and kind, without content."""
    async with Client(build_server(wired_app(), toolsets=["all"])) as c:
        results = {
            "help": await structured(c, "ask_fable_help", {"topic": "modes"}),
            "listing": await structured(c, "context_list", {}),
            "bad_args": await structured(c, "ask_fable_help", {"topic": "nope"}),
            "unknown": await structured(c, "no_such_tool", {"question": "secret plans"}),
        }
        traces = {name: await structured(c, "trace_get", {"trace_id": result["trace_id"]})
                  for name, result in results.items()}
    expected = {
        "help": ("ask_fable_help", "ok", None),
        "listing": ("context_list", "ok", None),
        "bad_args": ("ask_fable_help", "error", "bad_args"),
        "unknown": ("no_such_tool", "error", "unknown_tool"),
    }
    for name, (tool, status, kind) in expected.items():
        got = traces[name]
        assert got["status"] == "ok", (name, got)
        trace = got["trace"]
        assert (trace["tool"], trace["status"], trace.get("kind")) == (tool, status, kind)
        assert [event["name"] for event in trace["events"]] == ["request", "response"]
        assert "secret plans" not in str(trace)
    assert len({result["trace_id"] for result in results.values()}) == len(results)


async def test_the_request_event_records_the_context_a_context_ref_resolved_to(fp: FakeProvider) -> None:
    stored = "def charge(amount):\n    return gateway.post(amount)\n" * 40
    pasted = "the retry wrapper"
    async with Client(build_server(wired_app(fp), toolsets=["all"])) as c:
        await structured(c, "context_write", {"key": "billing", "value": stored})
        asked = await structured(c, "ask_glm", {"question": "Is this charge idempotent?",
                                                "context": pasted, "context_ref": "billing"})
        assert asked["status"] == "ok"
        trace = (await structured(c, "trace_get", {"trace_id": asked["trace_id"]}))["trace"]
    request = trace["events"][0]
    assert request["name"] == "request"
    # The stored entry arrives with a heading naming its key, so the total is a little more.
    assert len(pasted) + len(stored) < request["attrs"]["context_len"] < len(pasted) + len(stored) + 200
    assert request["attrs"]["pasted_context_len"] == len(pasted)
