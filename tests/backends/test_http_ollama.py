"""Ollama's /api/chat shape (NDJSON stream), at the wire against the fake provider."""

from __future__ import annotations

import httpx2
import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.providers.ollama import make_ollama_oracle
from ask_fable.config import load_settings
from ask_fable.errors import NotConfigured
from tests.fakes.fake_provider import FakeProvider

OLLAMA_KEY = "ollama-PLANTED-key-8080808080"



def _request(**extra: object) -> OracleRequest:
    return OracleRequest(system="Be brief.", prompt="Why is the build slow?", timeout=10, **extra)


async def test_local_daemon_request(fp: FakeProvider) -> None:
    """POST /api/chat with model, messages, stream and num_predict; the local daemon gets no key."""
    fp.enqueue("ollama", text="Cache the deps.", thinking="Looking at the layers.",
               usage={"input_tokens": 30, "output_tokens": 9})
    settings = load_settings(ollama_base_url=fp.base_url, ollama_api_key=OLLAMA_KEY, max_tokens=2048)
    chunks: list[str] = []
    reply = await make_ollama_oracle(settings, model="qwen3-coder:480b-cloud").ask(
        _request(), EventSink(on_reasoning=chunks.append))
    [req] = fp.requests_for("ollama")
    assert req.path == "/api/chat"
    assert "authorization" not in req.headers
    assert req.json["model"] == "qwen3-coder:480b-cloud"
    assert req.json["stream"] is True
    assert req.json["options"] == {"num_predict": 2048}
    assert req.json["messages"][0] == {"role": "system", "content": "Be brief."}
    assert "think" not in req.json
    assert reply.text == "Cache the deps."
    assert "".join(chunks) == "Looking at the layers." == reply.thinking
    assert reply.usage is not None and (reply.usage.input_tokens, reply.usage.output_tokens) == (30, 9)
    assert reply.provider == "ollama"


async def test_a_conversations_earlier_exchanges_travel_as_messages(fp: FakeProvider) -> None:
    """system, then each earlier user prompt and answer, then this prompt."""
    from ask_fable.backends.base import Exchange

    fp.enqueue("ollama", text="Pin the base image.")
    oracle = make_ollama_oracle(load_settings(ollama_base_url=fp.base_url), model="qwen3-coder:480b-cloud")
    earlier = (Exchange(prompt="Why is the build slow?", answer="The deps are fetched every time."),)
    await oracle.ask(_request(history=earlier).model_copy(update={"prompt": "What next?"}), EventSink())
    assert fp.last_json("ollama")["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Why is the build slow?"},
        {"role": "assistant", "content": "The deps are fetched every time."},
        {"role": "user", "content": "What next?"},
    ]


async def test_default_model_and_think_level_for_gpt_oss(fp: FakeProvider) -> None:
    """The default model is ASK_FABLE_OLLAMA_MODEL; gpt-oss takes effort as a think level."""
    fp.enqueue("ollama", text="ok")
    oracle = make_ollama_oracle(load_settings(ollama_base_url=fp.base_url))
    assert oracle.token == "ollama:gpt-oss:120b-cloud"
    reply = await oracle.ask(_request(effort="quick", max_tokens=99), EventSink())
    body = fp.last_json("ollama")
    assert body["model"] == "gpt-oss:120b-cloud"
    assert body["think"] == "low"
    assert body["options"]["num_predict"] == 99
    assert reply.effort == "low"


async def test_non_streamed_json_reply(fp: FakeProvider) -> None:
    """A single JSON object (stream disabled by a proxy) is read as well."""
    import json

    body = json.dumps({"model": "m", "message": {"role": "assistant", "content": "One shot"}, "done": True,
                       "prompt_eval_count": 4, "eval_count": 2})
    fp.enqueue("ollama", body=body.encode(), status=200, headers={"Content-Type": "application/json"})
    reply = await make_ollama_oracle(load_settings(ollama_base_url=fp.base_url)).ask(_request(), EventSink())
    assert reply.text == "One shot"


async def test_remote_endpoint_gets_the_bearer_key() -> None:
    """A remote Ollama endpoint receives the key as a bearer token."""
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        line = b'{"message":{"role":"assistant","content":"remote"},"done":true,"eval_count":1}\n'
        return httpx2.Response(200, content=line, headers={"content-type": "application/x-ndjson"})

    settings = load_settings(ollama_base_url="https://ollama.com", ollama_api_key=OLLAMA_KEY)
    reply = await make_ollama_oracle(settings, transport=httpx2.MockTransport(handler)).ask(_request(),
                                                                                            EventSink())
    assert reply.text == "remote"
    assert str(seen[0].url) == "https://ollama.com/api/chat"
    assert seen[0].headers["authorization"] == f"Bearer {OLLAMA_KEY}"


async def test_remote_endpoint_rejecting_the_key_names_the_key_variable() -> None:
    """ollama.com answering 401 is not_configured; the fix is a valid ASK_FABLE_OLLAMA_API_KEY."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(401, json={"error": "unauthorized"})

    settings = load_settings(ollama_base_url="https://ollama.com", ollama_api_key=OLLAMA_KEY)
    oracle = make_ollama_oracle(settings, transport=httpx2.MockTransport(handler))
    with pytest.raises(NotConfigured) as info:
        await oracle.ask(_request(), EventSink())
    result = info.value.to_result()
    assert "ASK_FABLE_OLLAMA_API_KEY" in result["hint"] and OLLAMA_KEY not in str(result)


async def test_ollama_com_without_a_key_is_not_configured() -> None:
    """Pointing at ollama.com with no key names ASK_FABLE_OLLAMA_API_KEY."""
    oracle = make_ollama_oracle(load_settings(ollama_base_url="https://ollama.com"))
    with pytest.raises(NotConfigured) as info:
        oracle.ensure_available()
    assert "ASK_FABLE_OLLAMA_API_KEY" in info.value.detail


def test_local_daemon_needs_no_key() -> None:
    """The default local daemon is available without any key."""
    make_ollama_oracle(load_settings()).ensure_available()


async def test_error_line_mid_stream_is_upstream_error(fp: FakeProvider) -> None:
    """An {"error": ...} line in the stream is the provider's failure, with its message."""
    from ask_fable.errors import UpstreamError

    fp.enqueue("ollama", body=b'{"error":"model \\"nope\\" not found, try pulling it first"}\n', status=200,
               headers={"Content-Type": "application/x-ndjson"})
    with pytest.raises(UpstreamError) as info:
        await make_ollama_oracle(load_settings(ollama_base_url=fp.base_url), model="nope").ask(_request(),
                                                                                             EventSink())
    assert "not found" in info.value.detail
