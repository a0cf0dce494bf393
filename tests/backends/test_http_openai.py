"""Atlas Cloud and OpenRouter over the OpenAI chat shape, at the wire against the fake provider."""

from __future__ import annotations

import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.providers.atlas import make_atlas_oracle
from ask_fable.backends.providers.openrouter import make_openrouter_oracle
from ask_fable.config import Settings, load_settings
from ask_fable.errors import BadArgs, NotConfigured
from tests.fakes.fake_provider import FakeProvider

ATLAS_KEY = "atlas-PLANTED-key-5151515151"
OPENROUTER_KEY = "or-PLANTED-key-6262626262"



def _settings(fp: FakeProvider, **extra: object) -> Settings:
    values: dict[str, object] = {
        "atlas_api_key": ATLAS_KEY, "atlas_base_url": fp.base_url,
        "openrouter_api_key": OPENROUTER_KEY, "openrouter_base_url": f"{fp.base_url}/api/v1",
        "atlas_model": "deepseek-ai/deepseek-v4-pro",
    }
    values.update(extra)
    return load_settings(**values)


def _request(**extra: object) -> OracleRequest:
    return OracleRequest(system="Be brief.", prompt="Which index should I add?", timeout=10, **extra)


def _or_catalog(fp: FakeProvider, efforts: list[str] | None, reasoning: bool = True) -> None:
    entry: dict[str, object] = {
        "id": "deepseek/deepseek-v4-pro", "name": "DeepSeek V4 Pro", "created": 1767225600,
        "context_length": 163840, "pricing": {"prompt": "0.0000004", "completion": "0.0000016"},
        "supported_parameters": ["max_tokens", "temperature"] + (["reasoning"] if reasoning else []),
    }
    if reasoning:
        entry["reasoning"] = {"default_effort": "medium", "mandatory": False, "supported_efforts": efforts}
    fp.set_json("GET", "/api/v1/models", {"data": [entry]})


async def test_atlas_sends_the_openai_request(fp: FakeProvider) -> None:
    """Atlas: /v1/chat/completions under a version-less base, bearer key, reasoning_effort, stream."""
    fp.enqueue("openai", text="Add a partial index.")
    reply = await make_atlas_oracle(_settings(fp), effort="standard").ask(_request(), EventSink())
    [req] = fp.requests_for("openai")
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {ATLAS_KEY}"
    assert "x-api-key" not in req.headers
    body = req.json
    assert body["model"] == "deepseek-ai/deepseek-v4-pro"
    assert body["stream"] is True
    assert body["reasoning_effort"] == "medium"
    assert "reasoning" not in body and "max_tokens" not in body
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Which index should I add?"}]
    assert reply.text == "Add a partial index."
    assert (reply.provider, reply.model, reply.effort) == ("atlas", "deepseek-ai/deepseek-v4-pro", "medium")


async def test_atlas_default_effort_is_deep(fp: FakeProvider) -> None:
    """ASK_FABLE_ATLAS_EFFORT defaults to deep → reasoning_effort high; a request effort overrides it."""
    fp.enqueue("openai", text="a", times=2)
    oracle = make_atlas_oracle(_settings(fp))
    await oracle.ask(_request(), EventSink())
    assert fp.last_json("openai")["reasoning_effort"] == "high"
    await oracle.ask(_request(effort="quick", max_tokens=500), EventSink())
    assert fp.last_json("openai")["reasoning_effort"] == "low"
    assert fp.last_json("openai")["max_tokens"] == 500


async def test_reasoning_content_streams_to_the_sink(fp: FakeProvider) -> None:
    """Either reasoning field (reasoning / reasoning_content) is forwarded live and kept."""
    fp.enqueue("openai", text="Answer.", thinking="Weighing B-tree against hash. " * 3,
               reasoning_key="reasoning_content", chunk_chars=10,
               usage={"input_tokens": 50, "output_tokens": 20, "reasoning_tokens": 12})
    chunks: list[str] = []
    reply = await make_atlas_oracle(_settings(fp)).ask(_request(), EventSink(on_reasoning=chunks.append))
    assert len(chunks) > 1
    assert reply.thinking == "".join(chunks)
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.reasoning_tokens) == (50, 20, 12)
    assert reply.usage.cost_usd is None


async def test_openrouter_request_cost_and_headers(fp: FakeProvider) -> None:
    """OpenRouter: /api/v1/chat/completions, reasoning.effort, usage accounting, real dollar cost."""
    _or_catalog(fp, efforts=None)
    fp.enqueue("openai", text="Use a covering index.", thinking="think",
               usage={"input_tokens": 10, "output_tokens": 5, "cost": 0.001234})
    reply = await make_openrouter_oracle(_settings(fp), effort="deep").ask(_request(), EventSink())
    [req] = fp.requests_for("openai")
    assert req.path == "/api/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {OPENROUTER_KEY}"
    assert req.json["model"] == "deepseek/deepseek-v4-pro"
    assert req.json["reasoning"] == {"effort": "high"}
    assert req.json["usage"] == {"include": True}
    assert "reasoning_effort" not in req.json
    assert reply.usage is not None and reply.usage.cost_usd == pytest.approx(0.001234)
    assert reply.provider == "openrouter"


@pytest.mark.parametrize(("effort", "supported", "sent"), [
    ("deep", ["medium", "low"], "medium"),
    ("quick", ["high", "medium"], "medium"),
    ("standard", ["high", "medium", "low"], "medium"),
    ("deep", ["xhigh", "high", "medium"], "high"),
    ("standard", ["high", "low"], "low"),
])
async def test_openrouter_clamps_effort_to_the_catalog(fp: FakeProvider, effort: str, supported: list[str],
                                                       sent: str) -> None:
    """The effort sent is the nearest one the model's catalog entry lists (ties go cheaper)."""
    _or_catalog(fp, efforts=supported)
    fp.enqueue("openai", text="ok")
    reply = await make_openrouter_oracle(_settings(fp), effort=effort).ask(_request(), EventSink())
    assert fp.last_json("openai")["reasoning"] == {"effort": sent}
    assert reply.effort == sent
    assert len(fp.requests_for("openai")) == 1  # no probe request


async def test_openrouter_sends_no_effort_to_a_model_that_does_not_reason(fp: FakeProvider) -> None:
    """A catalog entry without reasoning support gets no reasoning field at all."""
    _or_catalog(fp, efforts=None, reasoning=False)
    fp.enqueue("openai", text="ok")
    await make_openrouter_oracle(_settings(fp), effort="deep").ask(_request(), EventSink())
    assert "reasoning" not in fp.last_json("openai")


async def test_openrouter_catalog_is_fetched_once_and_without_the_key(fp: FakeProvider) -> None:
    """The clamp reads the cached public catalog: one GET, no Authorization header."""
    _or_catalog(fp, efforts=["high"])
    fp.enqueue("openai", text="ok", times=2)
    oracle = make_openrouter_oracle(_settings(fp), effort="deep")
    await oracle.ask(_request(), EventSink())
    await oracle.ask(_request(), EventSink())
    gets = [r for r in fp.requests if r.method == "GET"]
    assert [r.path for r in gets] == ["/api/v1/models"]
    assert "authorization" not in gets[0].headers


async def test_openrouter_without_effort_skips_the_catalog(fp: FakeProvider) -> None:
    """No effort asked → no reasoning field and no catalog request."""
    fp.enqueue("openai", text="ok")
    await make_openrouter_oracle(_settings(fp)).ask(_request(), EventSink())
    assert "reasoning" not in fp.last_json("openai")
    assert [r.method for r in fp.requests] == ["POST"]


async def test_json_completion_when_not_streamed(fp: FakeProvider) -> None:
    """A provider that ignores stream=true and answers one JSON completion is still read."""
    import json

    body = json.dumps({"choices": [{"message": {"content": "JSON answer", "reasoning": "r"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 7, "completion_tokens": 3, "cost": 0.5}})
    fp.enqueue("openai", body=body.encode(), status=200)
    reply = await make_atlas_oracle(_settings(fp)).ask(_request(), EventSink())
    assert (reply.text, reply.thinking) == ("JSON answer", "r")
    assert reply.usage is not None and reply.usage.cost_usd == 0.5


@pytest.mark.parametrize(("factory", "variable"), [(make_atlas_oracle, "ASK_FABLE_ATLAS_API_KEY"),
                                                   (make_openrouter_oracle, "ASK_FABLE_OPENROUTER_API_KEY")])
async def test_missing_key_names_the_variable(fp: FakeProvider, factory, variable: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """No key → not_configured naming the variable, and nothing is sent."""
    monkeypatch.setenv("PATH", "/nonexistent")  # no grok/kimi CLI to reroute to
    oracle = factory(load_settings(atlas_base_url=fp.base_url, openrouter_base_url=fp.base_url),
                     model="deepseek/deepseek-v4-pro")
    with pytest.raises(NotConfigured) as info:
        await oracle.ask(_request(), EventSink())
    assert variable in info.value.detail
    assert variable in info.value.to_result()["hint"]
    assert fp.requests == []


def test_alternate_key_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """ATLASCLOUD_API_KEY and OPENROUTER_API_KEY configure the same oracles."""
    monkeypatch.setenv("ATLASCLOUD_API_KEY", ATLAS_KEY)
    monkeypatch.setenv("OPENROUTER_API_KEY", OPENROUTER_KEY)
    monkeypatch.setenv("PATH", "/nonexistent")
    settings = load_settings()
    make_atlas_oracle(settings, model="qwen/qwen3").ensure_available()
    make_openrouter_oracle(settings).ensure_available()


def test_bad_effort_is_bad_args() -> None:
    """An effort outside quick/standard/deep is the caller's error."""
    with pytest.raises(BadArgs):
        make_atlas_oracle(load_settings(atlas_api_key="k" * 10), model="qwen/qwen3", effort="max")
