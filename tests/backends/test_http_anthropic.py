"""GLM and DeepSeek over the Anthropic Messages shape, at the wire against the fake provider."""

from __future__ import annotations

import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.providers.deepseek import make_deepseek_oracle
from ask_fable.backends.providers.glm import make_glm_oracle
from ask_fable.config import Settings, load_settings
from ask_fable.errors import NotConfigured
from tests.fakes.fake_provider import FakeProvider

GLM_KEY = "glm-PLANTED-key-4242424242"
DEEPSEEK_KEY = "ds-PLANTED-key-7373737373"



def _settings(fp: FakeProvider, **extra: object) -> Settings:
    return load_settings(glm_api_key=GLM_KEY, glm_base_url=f"{fp.base_url}/api/anthropic",
                         deepseek_api_key=DEEPSEEK_KEY, deepseek_base_url=f"{fp.base_url}/anthropic",
                         max_tokens=4096, **extra)


def _request(**extra: object) -> OracleRequest:
    return OracleRequest(system="You are terse.", prompt="Is this migration safe?", timeout=10, **extra)


async def test_glm_sends_the_anthropic_request(fp: FakeProvider) -> None:
    """Path, headers and body fields of a GLM call, streamed."""
    fp.enqueue("anthropic", text="Yes, it is safe.")
    reply = await make_glm_oracle(_settings(fp)).ask(_request(), EventSink())
    [req] = fp.requests_for("anthropic")
    assert req.method == "POST"
    assert req.path == "/api/anthropic/v1/messages"
    assert req.headers["x-api-key"] == GLM_KEY
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.json["model"] == "glm-5.2"
    assert req.json["max_tokens"] == 4096
    assert req.json["stream"] is True
    assert req.json["system"] == "You are terse."
    assert req.json["messages"] == [{"role": "user", "content": "Is this migration safe?"}]
    assert "thinking" not in req.json
    assert reply.text == "Yes, it is safe."
    assert (reply.model, reply.provider) == ("glm-5.2", "glm")


@pytest.mark.parametrize(("effort", "budget"), [("quick", 2048), ("standard", 3072), ("deep", 3072)])
async def test_effort_becomes_a_thinking_budget_below_max_tokens(fp: FakeProvider, effort: str,
                                                                 budget: int) -> None:
    """Effort maps to budget_tokens, always below max_tokens (4096 here)."""
    fp.enqueue("anthropic", text="ok")
    reply = await make_glm_oracle(_settings(fp)).ask(_request(effort=effort), EventSink())
    assert fp.last_json("anthropic")["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert reply.effort == effort


async def test_request_max_tokens_wins(fp: FakeProvider) -> None:
    """A per-request max_tokens overrides ASK_FABLE_MAX_TOKENS."""
    fp.enqueue("anthropic", text="ok")
    await make_glm_oracle(_settings(fp)).ask(_request(max_tokens=777), EventSink())
    assert fp.last_json("anthropic")["max_tokens"] == 777


async def test_thinking_streams_to_the_sink_and_usage_is_reported(fp: FakeProvider) -> None:
    """Reasoning deltas reach the sink as they arrive; usage comes from the stream."""
    thinking = "First, check the lock order. Then the index build. " * 4
    fp.enqueue("anthropic", text="Apply it.", thinking=thinking,
               usage={"input_tokens": 120, "output_tokens": 45}, chunk_chars=16)
    chunks: list[str] = []
    reply = await make_deepseek_oracle(_settings(fp)).ask(_request(effort="deep"),
                                                          EventSink(on_reasoning=chunks.append))
    assert len(chunks) > 1
    assert "".join(chunks) == thinking
    assert reply.thinking == thinking
    assert reply.text == "Apply it."
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (120, 45)
    req = fp.requests_for("anthropic")[-1]
    assert req.path == "/anthropic/v1/messages"
    assert req.headers["x-api-key"] == DEEPSEEK_KEY
    assert req.json["model"] == "deepseek-v4-pro"


async def test_each_key_goes_only_to_its_own_provider() -> None:
    """GLM's key never reaches DeepSeek's endpoint and vice versa."""
    with FakeProvider() as glm, FakeProvider() as deepseek:
        settings = load_settings(glm_api_key=GLM_KEY, glm_base_url=glm.base_url,
                                 deepseek_api_key=DEEPSEEK_KEY, deepseek_base_url=deepseek.base_url)
        await make_glm_oracle(settings).ask(_request(), EventSink())
        await make_deepseek_oracle(settings).ask(_request(), EventSink())
        glm_seen = " ".join(str(r.headers) + r.body.decode() for r in glm.requests)
        ds_seen = " ".join(str(r.headers) + r.body.decode() for r in deepseek.requests)
    assert GLM_KEY in glm_seen and DEEPSEEK_KEY not in glm_seen
    assert DEEPSEEK_KEY in ds_seen and GLM_KEY not in ds_seen


@pytest.mark.parametrize(("factory", "variable"), [(make_glm_oracle, "ASK_FABLE_GLM_API_KEY"),
                                                   (make_deepseek_oracle, "ASK_FABLE_DEEPSEEK_API_KEY")])
async def test_missing_key_is_not_configured_and_sends_nothing(fp: FakeProvider, factory,
                                                                variable: str) -> None:
    """Without a key the oracle names the variable to set and never touches the wire."""
    settings = load_settings(glm_base_url=fp.base_url, deepseek_base_url=fp.base_url)
    oracle = factory(settings)
    with pytest.raises(NotConfigured) as info:
        oracle.ensure_available()
    assert variable in info.value.detail
    with pytest.raises(NotConfigured):
        await oracle.ask(_request(), EventSink())
    assert info.value.to_result()["kind"] == "not_configured"
    assert fp.requests == []


async def test_json_reply_is_accepted_when_the_provider_does_not_stream(fp: FakeProvider) -> None:
    """A provider that answers one JSON message instead of a stream is still read."""
    import json

    body = json.dumps({"type": "message", "content": [{"type": "thinking", "thinking": "hm"},
                                                      {"type": "text", "text": "Plain JSON answer"}],
                       "usage": {"input_tokens": 3, "output_tokens": 4}, "stop_reason": "end_turn"})
    fp.enqueue("anthropic", body=body.encode(), status=200, headers={"Content-Type": "application/json"})
    reply = await make_glm_oracle(_settings(fp)).ask(_request(), EventSink())
    assert reply.text == "Plain JSON answer"
    assert reply.thinking == "hm"
    assert reply.usage is not None and reply.usage.output_tokens == 4
