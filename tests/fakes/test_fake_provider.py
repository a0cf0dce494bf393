"""The loopback fake provider answers every wire shape the backends and the Claude Code CLI expect."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.fakes.fake_provider import DEFAULT_SIDECAR, DEFAULT_TEXT, FakeProvider, Reply
from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env


@pytest.fixture
def client() -> Iterator[httpx2.Client]:
    """A plain HTTP client with a generous timeout."""
    with httpx2.Client(timeout=10) as c:
        yield c


def sse_events(raw: str) -> list[tuple[str | None, str]]:
    """Split an SSE body into (event, data) pairs."""
    out = []
    for block in raw.split("\n\n"):
        if not block.strip():
            continue
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: "):
                data.append(line[len("data: "):])
        out.append((event, "\n".join(data)))
    return out


def anthropic_body(stream: bool = False, model: str = "claude-fable-5") -> dict[str, Any]:
    return {"model": model, "max_tokens": 100, "stream": stream,
            "messages": [{"role": "user", "content": "hi"}]}


def openai_body(stream: bool = False, model: str = "z-ai/glm-5") -> dict[str, Any]:
    return {"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}


# -- Anthropic Messages ----------------------------------------------------------------------------

def test_anthropic_json_with_prefix_and_query(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("anthropic", text="plain answer", thinking="pondering",
                          usage={"input_tokens": 7, "output_tokens": 3})
    url = f"{fp.base_url}/api/anthropic/v1/messages?beta=true"
    headers = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
    r = client.post(url, json=anthropic_body(), headers=headers)
    assert r.status_code == 200
    msg = r.json()
    assert msg["type"] == "message" and msg["role"] == "assistant" and msg["model"] == "claude-fable-5"
    assert [b["type"] for b in msg["content"]] == ["thinking", "text"]
    assert msg["content"][0]["thinking"] == "pondering" and msg["content"][0]["signature"]
    assert msg["content"][1]["text"] == "plain answer"
    assert msg["stop_reason"] == "end_turn"
    assert msg["usage"]["input_tokens"] == 7 and msg["usage"]["output_tokens"] == 3
    [rec] = fp.requests_for("anthropic")
    assert rec.path == "/api/anthropic/v1/messages?beta=true" and rec.method == "POST"
    assert rec.headers["x-api-key"] == "sk-test" and rec.headers["anthropic-version"] == "2023-06-01"
    assert rec.json == anthropic_body() and json.loads(rec.body) == rec.json and rec.model == "claude-fable-5"
    assert rec.finished_at is not None and rec.finished_at >= rec.received_at


def test_anthropic_stream_events_match_the_real_api(fp: FakeProvider,
                                                    client: httpx2.Client) -> None:
    text = "A longer streamed answer that must arrive in several text deltas, in order."
    fp.enqueue("anthropic", text=text, thinking="first I think, then I answer carefully",
                          usage={"input_tokens": 11, "output_tokens": 22}, model="claude-fable-5-1")
    r = client.post(f"{fp.base_url}/v1/messages", json=anthropic_body(stream=True))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    for name, data in events:
        assert json.loads(data)["type"] == name
    names = [name for name, _ in events]
    text_deltas = names.count("content_block_delta") - 1 - len(
        [d for n, d in events if n == "content_block_delta" and "thinking_delta" in d])
    assert text_deltas > 1
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    payloads = [json.loads(d) for _, d in events]
    start = payloads[0]["message"]
    assert start["model"] == "claude-fable-5-1" and start["content"] == []
    assert start["usage"]["input_tokens"] == 11
    blocks = [p["content_block"]["type"] for p in payloads if p["type"] == "content_block_start"]
    assert blocks == ["thinking", "text"]
    deltas = [p["delta"] for p in payloads if p["type"] == "content_block_delta"]
    assert "".join(d["thinking"] for d in deltas if d["type"] == "thinking_delta") == (
        "first I think, then I answer carefully")
    kinds = [d["type"] for d in deltas]
    assert kinds.index("signature_delta") < kinds.index("text_delta")
    assert "".join(d["text"] for d in deltas if d["type"] == "text_delta") == text
    final = next(p for p in payloads if p["type"] == "message_delta")
    assert final["delta"]["stop_reason"] == "end_turn" and final["usage"]["output_tokens"] == 22


def test_default_reply_carries_a_sidecar(fp: FakeProvider, client: httpx2.Client) -> None:
    r = client.post(f"{fp.base_url}/v1/messages", json=anthropic_body())
    text = r.json()["content"][-1]["text"]
    assert text == DEFAULT_TEXT
    fenced = text.split("```sidecar\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(fenced) == DEFAULT_SIDECAR == {"recommendation": "apply", "confidence": "high",
                                                      "needs_context": []}
    fp.default_reply["anthropic"] = Reply(text="new default")
    r = client.post(f"{fp.base_url}/v1/messages", json=anthropic_body())
    assert r.json()["content"][-1]["text"] == "new default"


def test_count_tokens_answers(fp: FakeProvider, client: httpx2.Client) -> None:
    r = client.post(f"{fp.base_url}/v1/messages/count_tokens?beta=true", json=anthropic_body())
    assert r.status_code == 200 and r.json()["input_tokens"] > 0
    assert fp.requests[-1].route == "anthropic_count_tokens"


# -- OpenAI chat -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions", "/api/v1/chat/completions"])
def test_openai_json(fp: FakeProvider, client: httpx2.Client, path: str) -> None:
    fp.enqueue("openai", text="openai answer", thinking="why", reasoning_key="reasoning_content",
                          usage={"input_tokens": 5, "output_tokens": 9, "cost": 0.00042})
    r = client.post(fp.base_url + path, json=openai_body(), headers={"authorization": "Bearer k"})
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "z-ai/glm-5"
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "openai answer", "reasoning_content": "why"}
    assert choice["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14, "cost": 0.00042}
    assert fp.requests_for("openai")[-1].headers["authorization"] == "Bearer k"


def test_openai_stream(fp: FakeProvider, client: httpx2.Client) -> None:
    text = "Streaming over the OpenAI wire shape takes a few chunks of content."
    fp.enqueue("openai", text=text, thinking="short reasoning that also streams",
                          usage={"input_tokens": 4, "output_tokens": 6, "cost": 0.5},
                          stop_reason="max_tokens")
    with client.stream("POST", f"{fp.base_url}/v1/chat/completions",
                       json=openai_body(stream=True)) as r:
        raw = r.read().decode()
    events = sse_events(raw)
    assert all(name is None for name, _ in events)
    assert events[-1][1] == "[DONE]"
    chunks = [json.loads(d) for _, d in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == text
    assert "".join(d.get("reasoning") or "" for d in deltas) == "short reasoning that also streams"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["cost"] == 0.5
    assert chunks[-1]["usage"]["prompt_tokens"] == 4


# -- Ollama ----------------------------------------------------------------------------------------

def test_ollama_json_and_ndjson(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("ollama", text="local answer", thinking="hmm", usage={"input_tokens": 3,
                                                                                 "output_tokens": 2})
    body = {"model": "qwen3:8b", "stream": False, "messages": [{"role": "user", "content": "hi"}]}
    r = client.post(f"{fp.base_url}/api/chat", json=body)
    reply = r.json()
    assert reply["message"] == {"role": "assistant", "content": "local answer", "thinking": "hmm"}
    assert reply["done"] is True and reply["prompt_eval_count"] == 3 and reply["eval_count"] == 2
    assert reply["model"] == "qwen3:8b"

    text = "Ollama streams newline-delimited JSON objects, one per delta."
    fp.enqueue("ollama", text=text, thinking="thinking streams too")
    del body["stream"]  # the daemon streams unless told not to
    r = client.post(f"{fp.base_url}/api/chat", json=body)
    assert r.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert "".join(line["message"]["content"] for line in lines) == text
    assert "".join(line["message"].get("thinking", "") for line in lines) == "thinking streams too"
    assert lines[-1]["eval_count"] > 0 and lines[-1]["prompt_eval_count"] > 0


def test_ollama_tags_default_and_override(fp: FakeProvider, client: httpx2.Client) -> None:
    names = [m["name"] for m in client.get(f"{fp.base_url}/api/tags").json()["models"]]
    assert names == ["llama3.2:latest"]
    fp.ollama_tags = {"models": [{"name": "qwen3:8b"}]}
    assert client.get(f"{fp.base_url}/api/tags").json() == {"models": [{"name": "qwen3:8b"}]}
    fp.set_json("GET", "/api/tags", {"models": [{"name": "gpt-oss:120b-cloud"}]})
    tags = client.get(f"{fp.base_url}/api/tags").json()
    assert tags["models"][0]["name"] == "gpt-oss:120b-cloud"
    assert [r.route for r in fp.requests] == ["ollama_tags", "ollama_tags", "json"]


# -- catalogs and unknown paths ---------------------------------------------------------------------

def test_set_json_and_unknown_paths(fp: FakeProvider, client: httpx2.Client) -> None:
    catalog = {"data": [{"id": "z-ai/glm-5", "context_length": 200000}]}
    fp.set_json("GET", "/api/v1/models", catalog, headers={"x-catalog": "1"})
    r = client.get(f"{fp.base_url}/api/v1/models?supported_parameters=reasoning")
    assert r.json() == catalog and r.headers["x-catalog"] == "1"
    fp.set_json("GET", "/broken", {"error": "down"}, status=503)
    assert client.get(f"{fp.base_url}/broken").status_code == 503
    r = client.head(f"{fp.base_url}/api/hello")
    assert r.status_code == 404
    r = client.post(f"{fp.base_url}/v2/whatever", json={"a": 1})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
    assert [(q.method, q.path, q.route) for q in fp.requests] == [
        ("GET", "/api/v1/models?supported_parameters=reasoning", "json"), ("GET", "/broken", "json"),
        ("HEAD", "/api/hello", "unknown"), ("POST", "/v2/whatever", "unknown")]
    assert fp.last_json("unknown") == {"a": 1}


# -- scripting -------------------------------------------------------------------------------------

def test_queue_is_fifo_then_default(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("openai", text="one")
    fp.enqueue("openai", Reply(text="two"), times=2)
    fp.enqueue("anthropic", text="other route")
    url = f"{fp.base_url}/v1/chat/completions"
    answers = [client.post(url, json=openai_body()).json()["choices"][0]["message"]["content"]
               for _ in range(4)]
    assert answers == ["one", "two", "two", DEFAULT_TEXT]
    assert fp.pending("openai") == 0 and fp.pending("anthropic") == 1
    fp.clear()
    assert fp.requests == [] and fp.pending("anthropic") == 0
    with pytest.raises(LookupError):
        fp.last_json("openai")


def test_match_by_model_regardless_of_order(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("openai", text="for anyone")
    fp.enqueue("openai", text="for b", match="b")
    fp.enqueue("openai", text="always a", match="a", times=None)
    url = f"{fp.base_url}/v1/chat/completions"

    def ask(model: str) -> str:
        return client.post(url, json=openai_body(model=model)).json()["choices"][0]["message"]["content"]

    assert [ask("a"), ask("b"), ask("c"), ask("b"), ask("a")] == [
        "always a", "for b", "for anyone", DEFAULT_TEXT, "always a"]


@pytest.mark.parametrize(("route", "path", "status", "check"), [
    ("anthropic", "/v1/messages", 429, lambda b: b["error"]["type"] == "rate_limit_error"),
    ("anthropic", "/v1/messages", 401, lambda b: b["error"]["type"] == "authentication_error"),
    ("openai", "/v1/chat/completions", 500, lambda b: b["error"]["code"] == 500),
    ("openai", "/v1/chat/completions", 400, lambda b: b["error"]["type"] == "invalid_request_error"),
    ("ollama", "/api/chat", 500, lambda b: isinstance(b["error"], str)),
])
def test_error_statuses(fp: FakeProvider, client: httpx2.Client, route: Any, path: str,
                        status: int, check: Any) -> None:
    fp.enqueue(route, status=status, retry_after=2, error="nope: try later")
    r = client.post(fp.base_url + path, json={"model": "m", "stream": True})
    assert r.status_code == status and r.headers["retry-after"] == "2"
    assert check(r.json()) and "nope: try later" in r.text


def test_garbage_and_raw_body(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("openai", garbage=True)
    fp.enqueue("openai", body=b"upstream exploded", status=502)
    url = f"{fp.base_url}/v1/chat/completions"
    r = client.post(url, json=openai_body())
    assert r.status_code == 200
    with pytest.raises(ValueError):
        r.json()
    r = client.post(url, json=openai_body())
    assert r.status_code == 502 and r.content == b"upstream exploded"


def test_reset_drops_the_connection(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("anthropic", reset=True)
    with pytest.raises(httpx2.TransportError):
        client.post(f"{fp.base_url}/v1/messages", json=anthropic_body())
    # the server keeps serving afterwards
    assert client.post(f"{fp.base_url}/v1/messages", json=anthropic_body()).status_code == 200


def test_cut_after_breaks_a_stream_midway(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("anthropic", cut_after=3)
    received = []
    with pytest.raises(httpx2.TransportError), client.stream(
            "POST", f"{fp.base_url}/v1/messages", json=anthropic_body(stream=True)) as r:
        assert r.status_code == 200
        for chunk in r.iter_text():
            received.append(chunk)
    assert "message_start" in "".join(received) and "message_stop" not in "".join(received)


def test_slow_body_spaces_its_chunks(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("openai", text="a b c d e f", chunk_chars=1, chunk_delay=0.02, delay=0.05)
    r = client.post(f"{fp.base_url}/v1/chat/completions", json=openai_body(stream=True))
    chunks = [d for _, d in sse_events(r.text)]
    rec = fp.requests[-1]
    assert rec.finished_at is not None
    # sleeps are lower bounds: the first byte waited `delay`, each later chunk `chunk_delay`
    # (the margin only absorbs timer rounding)
    assert rec.finished_at - rec.received_at >= 0.9 * (0.05 + 0.02 * (len(chunks) - 1))


def test_hang_never_answers_and_does_not_block_stop(client: httpx2.Client) -> None:
    fp = FakeProvider().start()
    fp.enqueue("anthropic", hang=True)

    def hung_call() -> None:
        with pytest.raises(httpx2.TransportError):
            client.post(f"{fp.base_url}/v1/messages", json=anthropic_body())

    hung = threading.Thread(target=hung_call)
    hung.start()
    [rec] = fp.wait_for(1)
    assert fp.open_requests() == [rec]
    stopper = threading.Thread(target=fp.stop)
    stopper.start()
    stopper.join(timeout=10)
    assert not stopper.is_alive()
    hung.join(timeout=10)
    assert not hung.is_alive()
    with pytest.raises(httpx2.ConnectError):
        client.get(f"http://127.0.0.1:{rec.headers['host'].split(':')[1]}/api/tags")


@pytest.mark.parametrize("spec", [{"hang": True}, {"delay": 30.0}], ids=["hang", "delay"])
def test_a_waiting_reply_ends_when_its_client_goes_away(
    fp: FakeProvider, client: httpx2.Client, spec: dict[str, Any]
) -> None:
    """A client that gives up on a hung or slow reply leaves no open request behind."""
    fp.enqueue("anthropic", **spec)
    with pytest.raises(httpx2.ReadTimeout):
        client.post(f"{fp.base_url}/v1/messages", json=anthropic_body(), timeout=0.3)
    assert fp.wait_until_idle(timeout=5) == []
    [rec] = fp.requests
    assert rec.client_closed is True and rec.finished_at is not None


def test_wait_for_blocks_until_requests_arrive(fp: FakeProvider, client: httpx2.Client) -> None:
    fp.enqueue("anthropic", hang=True)
    def hung_call() -> None:
        with pytest.raises(httpx2.TransportError):
            client.post(f"{fp.base_url}/v1/messages", json=anthropic_body())

    worker = threading.Thread(target=hung_call)
    worker.start()
    [rec] = fp.wait_for(1, route="anthropic")
    assert rec.model == "claude-fable-5"
    with pytest.raises(TimeoutError):
        fp.wait_for(2, timeout=0.05)
    fp.stop()
    worker.join(timeout=10)
    assert not worker.is_alive()


def test_concurrent_requests_are_served_in_parallel(fp: FakeProvider) -> None:
    fp.default_reply["openai"] = Reply(text="slow", delay=0.2)
    url = f"{fp.base_url}/v1/chat/completions"
    count = 50
    with httpx2.Client(timeout=30, limits=httpx2.Limits(max_connections=count)) as c, \
            ThreadPoolExecutor(count) as pool:
        statuses = list(pool.map(lambda _: c.post(url, json=openai_body()).status_code, range(count)))
    assert statuses == [200] * count
    spans = [(r.received_at, r.finished_at) for r in fp.requests_for("openai")]
    assert len(spans) == count and all(end is not None for _, end in spans)
    # peak number of requests in flight at once, from the server's own receive/finish times
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])  # type: ignore[misc]
    peak = running = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert peak >= count // 2


# -- the real Claude Code CLI ------------------------------------------------------------------------

CLI = bundled_claude_cli()
needs_cli = pytest.mark.skipif(CLI is None, reason="claude-agent-sdk bundled CLI not installed")


@needs_cli
def test_bundled_claude_cli_completes_a_turn(fp: FakeProvider, tmp_path: Path) -> None:
    fp.enqueue("anthropic", text="pong from the fake", thinking="considering")
    env = {**os.environ, **claude_cli_env(fp.base_url, tmp_path / "claude")}
    proc = subprocess.run(
        [str(CLI), "-p", "hi", "--output-format", "json", "--model", "claude-fable-5", "--tools", "",
         "--setting-sources", "", "--no-session-persistence", "--max-turns", "1"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["is_error"] is False and result["result"] == "pong from the fake"
    [rec] = fp.requests
    assert (rec.method, rec.path, rec.route) == ("POST", "/v1/messages?beta=true", "anthropic")
    assert rec.headers["x-api-key"] == "dummy" and rec.json["stream"] is True
    assert rec.json["model"] == "claude-fable-5"
    assert rec.json["messages"][0] == {"role": "user", "content": "hi"}


@needs_cli
async def test_agent_sdk_query_gets_the_fake_answer(fp: FakeProvider, tmp_path: Path) -> None:
    from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock, query

    fp.enqueue("anthropic", text="sdk pong", usage={"input_tokens": 40, "output_tokens": 2})
    options = ClaudeAgentOptions(tools=[], setting_sources=[], max_turns=1, cwd=str(tmp_path),
                                 model="claude-fable-5",
                                 env=claude_cli_env(fp.base_url, tmp_path / "c"))
    texts, results = [], []
    async for message in query(prompt="hi", options=options):
        if isinstance(message, AssistantMessage):
            texts += [b.text for b in message.content if isinstance(b, TextBlock)]
        elif isinstance(message, ResultMessage):
            results.append(message)
    assert texts == ["sdk pong"]
    assert len(results) == 1 and results[0].is_error is False and results[0].result == "sdk pong"
    [rec] = fp.requests
    assert rec.path == "/v1/messages?beta=true" and rec.json["stream"] is True
