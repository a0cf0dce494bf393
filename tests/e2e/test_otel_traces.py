"""OpenTelemetry traces of the real team server, as a collector receives them over OTLP/HTTP.

``ask-fable serve --http`` runs with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointed at a receiver on
127.0.0.1 that decodes what arrives with ``opentelemetry-proto``; the models are the fake provider.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import ask_fable_command, child_env
from tests.e2e.team_server import TeamServer, create_key, team_server
from tests.e2e.test_caps import BACKEND_KEY, provider_env
from tests.fakes.fake_provider import DEFAULT_SIDECAR, FakeProvider
from tests.fakes.otlp_receiver import OtlpReceiver, Span, children
from tests.ui.test_team_server import log_in

QUESTION = "Should the uploader's retry loop cap its backoff at thirty seconds or at five minutes?"
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
OPENROUTER_MODEL = "deepseek/deepseek-v4-pro"
SLOW_MODEL = "qwen/qwen3-coder-flash"


def _otel_env(endpoint: str, **extra: str) -> dict[str, str]:
    # Batches leave every 100 ms, so the test does not wait out the SDK's 5 s default.
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "ask-fable-test", **extra}


def _call(tool: str, arguments: dict[str, Any], meta: dict[str, str] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


async def _structured(server: TeamServer, key: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await server.post(key, body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]["structuredContent"]
    return result


def _one(spans: list[Span], name: str) -> Span:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def _tool_span(spans: list[Span], tool: str) -> Span | None:
    named = f"tools/call {tool}"
    return next((s for s in spans if s.name == named and "ask_fable.status" in s.attributes), None)


async def _spans_of(rx: OtlpReceiver, tool: str, expected: int) -> list[Span]:
    """The spans of the one trace whose server span is ``tool``'s, once ``expected`` of them arrived."""

    def complete(spans: list[Span]) -> bool:
        root = _tool_span(spans, tool)
        return root is not None and sum(s.trace_id == root.trace_id for s in spans) >= expected

    spans = await anyio.to_thread.run_sync(rx.wait_for, complete)
    root = _tool_span(spans, tool)
    assert root is not None
    return [span for span in spans if span.trace_id == root.trace_id]


async def test_a_council_is_one_trace_under_the_clients_traceparent_with_genai_spans(
        fp: FakeProvider) -> None:
    """One council call: the MCP server span is a child of the client's span; the guard, the mode and
    the store writes are its children; each member and the synthesizer is a GenAI ``chat`` span with
    its models, tokens and outcome (a retried request keeps its retry as an event, a member that is
    not configured and one cut as a straggler are errors typed by their kind); our trace id, tenant,
    quorum and cost are there, and the question's text is not."""
    fp.enqueue("anthropic", status=503)  # the first GLM request is retried once
    fp.enqueue("openai", usage={"input_tokens": 70, "output_tokens": 20, "cost": 0.004},
               match=OPENROUTER_MODEL)
    fp.enqueue("openai", hang=True, match=SLOW_MODEL)  # cut as a straggler once the others answered
    key = create_key("Agent", "--tenant", "team")["key"]
    with OtlpReceiver() as rx:
        env = {**provider_env(fp), **_otel_env(rx.endpoint), "ASK_FABLE_COUNCIL_STRAGGLER_FLOOR": "0.2",
               "ASK_FABLE_COUNCIL_STRAGGLER_FACTOR": "1"}
        async with team_server(env) as server:
            # deepseek has no key; the slow model never answers
            models = ["glm", f"openrouter:{OPENROUTER_MODEL}", "deepseek", f"openrouter:{SLOW_MODEL}"]
            traceparent = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
            result = await _structured(server, key, _call(
                "ask_council", {"question": QUESTION, "models": models, "synthesizer": "glm"},
                meta={"traceparent": traceparent}))
            assert result["status"] == "ok", result
            assert result["quorum"] == "2/4"
            spans = await _spans_of(rx, "ask_council", 9)
    root = _one(spans, "tools/call ask_council")
    assert (root.trace_id, root.parent_id, root.kind) == (CLIENT_TRACE, CLIENT_SPAN, "server")
    assert root.resource["service.name"] == "ask-fable-test"
    assert root.attributes["gen_ai.tool.name"] == "ask_council"
    assert root.attributes["ask_fable.trace_id"] == result["trace_id"]
    assert root.attributes["ask_fable.tenant"] == "team"
    assert root.attributes["ask_fable.status"] == "ok" and root.status != "error"
    assert root.attributes["ask_fable.quorum"] == "2/4"
    # Every backend call's cost: OpenRouter's reported one and GLM's priced from its tokens.
    assert root.attributes["ask_fable.cost_usd"] == pytest.approx(result["cost_usd"])
    assert result["cost_usd"] > 0.004 and result["cost_source"] == "mixed"

    under_root = {span.name for span in children(spans, root)}
    assert {"guard", "council ask_council", "store.write"} <= under_root
    assert _one(spans, "guard").attributes["ask_fable.allowed"] is True
    mode = _one(spans, "council ask_council")
    assert mode.attributes["ask_fable.quorum"] == "2/4"
    assert [name for name, _ in mode.events] == ["council.quorum"]
    members = {span.attributes["ask_fable.token"]: span for span in children(spans, mode)
               if span.name.startswith("chat ")}
    assert set(members) == {"glm", "deepseek", f"openrouter:{OPENROUTER_MODEL}", f"openrouter:{SLOW_MODEL}"}
    glm = members["glm"]
    assert glm.name == "chat glm-5.2" and glm.kind == "client"
    assert glm.attributes["gen_ai.operation.name"] == "chat"
    assert glm.attributes["gen_ai.provider.name"] == "z_ai"
    assert glm.attributes["gen_ai.request.model"] == glm.attributes["gen_ai.response.model"] == "glm-5.2"
    assert glm.attributes["gen_ai.usage.input_tokens"] > 0
    assert glm.attributes["gen_ai.usage.output_tokens"] > 0
    assert glm.attributes["ask_fable.role"] == "member" and glm.status != "error"
    [retry_attrs] = [attrs for name, attrs in glm.events if name == "provider.retry"]
    assert retry_attrs["attempt"] == 1 and "503" in retry_attrs["cause"]
    routed = members[f"openrouter:{OPENROUTER_MODEL}"]
    assert routed.attributes["gen_ai.provider.name"] == "openrouter"
    assert routed.attributes["gen_ai.response.model"] == OPENROUTER_MODEL
    assert (routed.attributes["gen_ai.usage.input_tokens"], routed.attributes["gen_ai.usage.output_tokens"]) \
        == (70, 20)
    assert routed.attributes["ask_fable.cost_usd"] == pytest.approx(0.004)
    missing = members["deepseek"]
    assert missing.status == "error" and missing.attributes["error.type"] == "not_configured"
    cut = members[f"openrouter:{SLOW_MODEL}"]
    assert cut.status == "error" and cut.attributes["error.type"] == "straggler"
    assert cut.attributes["ask_fable.cut"] is True

    synthesis = _one(spans, "synthesis")
    assert synthesis.parent_id == mode.span_id and synthesis.attributes["ask_fable.used"] == "glm"
    [synthesizer] = children(spans, synthesis)
    assert synthesizer.attributes["ask_fable.role"] == "synthesizer"
    assert synthesizer.attributes["gen_ai.request.model"] == "glm-5.2"
    for span in spans:
        assert "uploader" not in span.text()
    assert all(b"uploader" not in body for body in rx.raw)


async def test_message_text_is_exported_redacted_only_when_content_capture_is_on(fp: FakeProvider) -> None:
    """With ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` the model span carries the
    prompt and the answer as GenAI messages, with a planted key redacted."""
    planted = "sk-ant-api03-PLANTEDplantedPLANTED0123456789"
    fp.enqueue("anthropic", text=f"Use the key {planted} only from the vault.")
    key = create_key("Agent", "--tenant", "team")["key"]
    question = f"Is it safe that the uploader reads {planted} from its environment?"
    with OtlpReceiver() as rx:
        env = {**provider_env(fp), **_otel_env(rx.endpoint),
               "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
        async with team_server(env) as server:
            result = await _structured(server, key, _call("ask_glm", {"question": question}))
            assert result["status"] == "ok", result
            spans = await _spans_of(rx, "ask_glm", 4)
    chat = _one(spans, "chat glm-5.2")
    sent, answered = chat.attributes["gen_ai.input.messages"], chat.attributes["gen_ai.output.messages"]
    assert "reads [REDACTED] from its environment" in sent
    assert "Use the key [REDACTED] only from the vault" in answered
    assert "[REDACTED]" in _one(spans, "tools/call ask_glm").attributes["ask_fable.question"]
    assert all(planted.encode() not in body for body in rx.raw)


async def test_a_collector_that_is_down_costs_a_call_nothing(fp: FakeProvider) -> None:
    """The endpoint refuses connections: calls answer as they would without tracing, and the server
    still stops cleanly (its flush gives up within its bound)."""
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    key = create_key("Agent", "--tenant", "team")["key"]
    async with team_server({**provider_env(fp), **_otel_env(closed)}) as server:
        for number in range(3):
            sidecar = json.dumps(DEFAULT_SIDECAR)
            fp.enqueue("anthropic", text=f"Answer {number}.\n\n```sidecar\n{sidecar}\n```",
                       usage={"input_tokens": 10, "output_tokens": 3})
            result = await _structured(server, key, _call("ask_glm", {"question": f"{QUESTION} ({number})"}))
            assert result["status"] == "ok", result
            assert result["answer"] == f"Answer {number}."
    assert server.exit_code == 0
    assert len(fp.requests_for("anthropic")) == 3


async def test_spans_still_queued_are_flushed_when_the_server_stops(fp: FakeProvider) -> None:
    """With a batch delay longer than the test, the call's spans leave only when the server stops
    (SIGTERM): they all arrive. The web view's page of the call shows the OpenTelemetry trace id they
    were sent under, and neither the backend's key (sent upstream) nor the caller's API key is in any
    exported byte."""
    key = create_key("Agent", "--tenant", "team")["key"]
    viewer = create_key("Viewer", "--tenant", "team", "--scope", "read")["key"]
    with OtlpReceiver() as rx:
        env = {**provider_env(fp), **_otel_env(rx.endpoint), "OTEL_BSP_SCHEDULE_DELAY": "600000"}
        async with team_server(env) as server:
            result = await _structured(server, key, _call("ask_glm", {"question": QUESTION}))
            assert result["status"] == "ok", result
            with httpx2.Client(base_url=server.url) as browser:
                assert log_in(browser, viewer).status_code == 303
                page = browser.get(f"/ui/traces/{result['trace_id']}")
            assert rx.snapshot() == []  # nothing sent yet
        assert server.exit_code == 0
        spans = await _spans_of(rx, "ask_glm", 5)
    assert page.status_code == 200
    root = _one(spans, "tools/call ask_glm")
    assert {"guard", "single ask_glm", "store.write"} <= {span.name for span in children(spans, root)}
    assert f'<code id="otel-trace-id">{root.trace_id}</code>' in page.text
    assert all(BACKEND_KEY.encode() not in body and key.encode() not in body for body in rx.raw)


async def test_the_stdio_server_sends_its_calls_spans_when_its_client_closes(fp: FakeProvider) -> None:
    """``ask-fable`` over stdio with an endpoint: a call's spans (batched for longer than the test)
    reach the receiver once the client closes the pipe and the server stops; stdout stays MCP only
    (the client parsed every message)."""
    env = {**provider_env(fp), **_otel_env("", OTEL_BSP_SCHEDULE_DELAY="600000")}
    with OtlpReceiver() as rx:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = rx.endpoint
        command, *rest = ask_fable_command()
        params = StdioServerParameters(command=command, args=[*rest, "--toolsets", "default,single"],
                                       env=child_env(**env))
        async with Client(params) as client:
            result = await client.call_tool("ask_glm", {"question": QUESTION})
            assert result.structured_content is not None
            assert result.structured_content["status"] == "ok", result.structured_content
        spans = await _spans_of(rx, "ask_glm", 5)
    root = _one(spans, "tools/call ask_glm")
    assert root.attributes["ask_fable.trace_id"] == result.structured_content["trace_id"]
    assert root.attributes["ask_fable.tenant"] == "local"
    assert _one(spans, "chat glm-5.2").parent_id == _one(spans, "single ask_glm").span_id
