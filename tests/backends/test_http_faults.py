"""Faults at the wire, for every wire shape: retries, bounds, structured errors and no leaked key."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from ask_fable.backends.base import EventSink, Oracle, OracleRequest
from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.providers.atlas import make_atlas_oracle
from ask_fable.backends.providers.deepseek import make_deepseek_oracle
from ask_fable.backends.providers.glm import make_glm_oracle
from ask_fable.backends.providers.ollama import make_ollama_oracle
from ask_fable.backends.providers.openrouter import make_openrouter_oracle
from ask_fable.config import Settings, load_settings
from ask_fable.errors import AskFableError, OracleTimeout, UpstreamError
from tests.fakes.fake_provider import FakeProvider

KEY = "sk-PLANTED-secret-0f0f0f0f0f0f0f0f"
FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)

# (name, route, factory): one oracle per wire shape and backend.
BACKENDS: list[tuple[str, str, Callable[..., Oracle]]] = [
    ("glm", "anthropic", make_glm_oracle),
    ("deepseek", "anthropic", make_deepseek_oracle),
    ("atlas", "openai", lambda s, **kw: make_atlas_oracle(s, model="qwen/qwen3-max", **kw)),
    ("openrouter", "openai", make_openrouter_oracle),
    ("ollama", "ollama", make_ollama_oracle),
]
IDS = [b[0] for b in BACKENDS]



def _settings(fp: FakeProvider) -> Settings:
    return load_settings(glm_api_key=KEY, glm_base_url=fp.base_url, deepseek_api_key=KEY,
                         deepseek_base_url=fp.base_url, atlas_api_key=KEY, atlas_base_url=fp.base_url,
                         openrouter_api_key=KEY, openrouter_base_url=f"{fp.base_url}/api/v1",
                         ollama_base_url=fp.base_url, ollama_api_key=KEY)


def _oracle(fp: FakeProvider, factory: Callable[..., Oracle]) -> Oracle:
    return factory(_settings(fp), retry=FAST)


def _request(timeout: float = 5) -> OracleRequest:
    return OracleRequest(system="s", prompt="Is it safe?", timeout=timeout)


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_429_with_retry_after_then_success(fp: FakeProvider, name: str, route: str, factory) -> None:
    """A 429 is retried after its Retry-After; the second answer is returned and a note is emitted."""
    fp.enqueue(route, status=429, retry_after=0.05, error="slow down")
    fp.enqueue(route, text="Recovered answer.")
    notes: list[str] = []
    with anyio.fail_after(5):
        reply = await _oracle(fp, factory).ask(_request(), EventSink(on_note=notes.append))
    assert reply.text == "Recovered answer."
    assert len(fp.requests_for(route)) == 2
    assert any("429" in n for n in notes)


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_repeated_500_is_upstream_error_after_bounded_retries(fp: FakeProvider, name: str, route: str,
                                                                    factory) -> None:
    """A provider failing every time is tried exactly `attempts` times, then upstream_error."""
    fp.enqueue(route, status=500, error="internal boom", times=None)
    with anyio.fail_after(5), pytest.raises(UpstreamError) as info:
        await _oracle(fp, factory).ask(_request(), EventSink())
    assert len(fp.requests_for(route)) == FAST.attempts
    assert "500" in info.value.detail and "internal boom" in info.value.detail


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_400_fails_at_once_with_the_provider_message(fp: FakeProvider, name: str, route: str,
                                                           factory) -> None:
    """A non-retryable 4xx is one request and an upstream_error quoting the provider."""
    fp.enqueue(route, status=400, error="max_tokens is too large for this model")
    with pytest.raises(UpstreamError) as info:
        await _oracle(fp, factory).ask(_request(), EventSink())
    assert len(fp.requests_for(route)) == 1
    assert "max_tokens is too large" in info.value.detail
    assert info.value.to_result()["kind"] == "upstream_error"


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_garbage_body_is_upstream_error(fp: FakeProvider, name: str, route: str, factory) -> None:
    """A 200 whose body is not the provider's JSON is upstream_error, never a crash."""
    fp.enqueue(route, garbage=True)
    with pytest.raises(UpstreamError) as info:
        await _oracle(fp, factory).ask(_request(), EventSink())
    assert info.value.to_result()["kind"] == "upstream_error"


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_hang_is_bounded_by_the_timeout(fp: FakeProvider, name: str, route: str, factory) -> None:
    """A provider that never answers becomes kind=timeout within the request's timeout."""
    fp.enqueue(route, hang=True)
    with anyio.fail_after(5), pytest.raises(OracleTimeout) as info:
        await _oracle(fp, factory).ask(_request(timeout=0.4), EventSink())
    assert info.value.to_result()["kind"] == "timeout"


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_stall_mid_stream_is_bounded(fp: FakeProvider, name: str, route: str, factory) -> None:
    """A stream that stalls between chunks is cut at the deadline."""
    fp.enqueue(route, text="word " * 50, chunk_chars=5, chunk_delay=1.0)
    with anyio.fail_after(5), pytest.raises(OracleTimeout):
        await _oracle(fp, factory).ask(_request(timeout=0.5), EventSink())


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_connection_reset_is_retried(fp: FakeProvider, name: str, route: str, factory) -> None:
    """A reset before any response is retried like a connect failure."""
    fp.enqueue(route, reset=True)
    fp.enqueue(route, text="After the reset.")
    reply = await _oracle(fp, factory).ask(_request(), EventSink())
    assert reply.text == "After the reset."
    assert len(fp.requests_for(route)) == 2


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_reset_every_time_is_upstream_error(fp: FakeProvider, name: str, route: str, factory) -> None:
    """A provider that always resets the connection ends as upstream_error after bounded retries."""
    fp.enqueue(route, reset=True, times=None)
    with pytest.raises(UpstreamError):
        await _oracle(fp, factory).ask(_request(), EventSink())
    assert len(fp.requests_for(route)) == FAST.attempts


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_cut_mid_stream_is_not_retried(fp: FakeProvider, name: str, route: str, factory) -> None:
    """A connection dropped after the answer began is reported, not replayed (reasoning already went out)."""
    fp.enqueue(route, text="word " * 40, chunk_chars=5, cut_after=3)
    with pytest.raises(UpstreamError):
        await _oracle(fp, factory).ask(_request(), EventSink())
    assert len(fp.requests_for(route)) == 1


async def test_dead_endpoint_is_upstream_error() -> None:
    """Nothing listening: connect failures are retried, then upstream_error naming the provider."""
    with FakeProvider() as fake:
        settings = load_settings(glm_api_key=KEY, glm_base_url=fake.base_url)
    oracle = make_glm_oracle(settings, retry=FAST)
    with anyio.fail_after(5), pytest.raises(UpstreamError) as info:
        await oracle.ask(_request(), EventSink())
    assert "GLM" in info.value.detail and "connection failed" in info.value.detail


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_planted_key_never_leaks(fp: FakeProvider, name: str, route: str, factory) -> None:
    """Providers that echo the key back: no error detail, note, reply or repr carries it."""
    echo = f"invalid key {KEY} for this request"
    seen: list[str] = []
    sink = EventSink(on_note=seen.append, on_reasoning=seen.append)
    oracle = _oracle(fp, factory)
    seen.append(repr(oracle))
    scripts = [
        {"status": 401, "error": echo},
        {"status": 503, "error": echo, "times": FAST.attempts},
        {"status": 200, "body": f"<html>{echo}</html>".encode()},
    ]
    for script in scripts:
        fp.enqueue(route, **script)
        with pytest.raises(AskFableError) as info:
            await oracle.ask(_request(), sink)
        seen.extend([info.value.detail, str(info.value), str(info.value.to_result())])
    fp.enqueue(route, text="fine answer quoting nothing", thinking="private reasoning")
    reply = await oracle.ask(_request(), sink)
    seen.append(reply.model_dump_json())
    assert seen
    assert all(KEY not in text for text in seen)
    assert any("[REDACTED]" in text for text in seen)


MALFORMED = {
    "anthropic": b'{"type": "message", "content": [{"type": "text", "text": 5}]}',
    "openai": b'{"choices": [{"message": "just a string"}]}',
    "ollama": b'{"message": "just a string", "done": true}\n',
}


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_valid_json_in_the_wrong_shape_is_upstream_error(fp: FakeProvider, name: str, route: str,
                                                               factory) -> None:
    """JSON that parses but is not the provider's reply shape is upstream_error, never a crash."""
    fp.enqueue(route, body=MALFORMED[route], status=200)
    with pytest.raises(UpstreamError):
        await _oracle(fp, factory).ask(_request(), EventSink())


_HALF_STREAMS = {
    "anthropic": ("text/event-stream",
                  b'event: message_start\ndata: {"type":"message_start","message":{"usage":{}}}\n\n'
                  b'event: content_block_delta\ndata: {"type":"content_block_delta",'
                  b'"delta":{"type":"text_delta","text":"Half an ans"}}\n\n'),
    "openai": ("text/event-stream", b'data: {"choices":[{"delta":{"content":"Half an ans"}}]}\n\n'),
    "ollama": ("application/x-ndjson", b'{"message":{"role":"assistant","content":"Half an ans"}}\n'),
}


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_stream_closed_cleanly_before_completion_is_upstream_error(
    name: str, route: str, factory: Callable[..., Oracle]
) -> None:
    """A stream that ends without its end marker (message_stop / [DONE] or finish_reason / done) is
    reported, never returned as half an answer."""
    import httpx2

    content_type, body = _HALF_STREAMS[route]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": content_type}, content=body)

    base = "http://provider.invalid"
    settings = load_settings(glm_api_key=KEY, glm_base_url=base, deepseek_api_key=KEY, deepseek_base_url=base,
                             atlas_api_key=KEY, atlas_base_url=base, openrouter_api_key=KEY,
                             openrouter_base_url=f"{base}/api/v1", ollama_base_url=base)
    oracle = factory(settings, retry=FAST, transport=httpx2.MockTransport(answer))
    with anyio.fail_after(5), pytest.raises(UpstreamError, match="stream ended before completion"):
        await oracle.ask(_request(), EventSink())


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_streamed_answers_one_after_another_reuse_one_connection(
    fp: FakeProvider, name: str, route: str, factory: Callable[..., Oracle]
) -> None:
    """Once a streamed answer is whole, the rest of its body is read, so the pooled connection serves
    the next request instead of being closed and opened again."""
    from ask_fable.backends.resources import Resources

    fp.enqueue(route, text="A streamed answer, in many small deltas.", chunk_chars=4, times=None)
    resources = Resources()
    oracle = factory(_settings(fp), retry=FAST, resources=resources)
    try:
        with anyio.fail_after(10):
            for _ in range(3):
                reply = await oracle.ask(_request(), EventSink())
                assert reply.text == "A streamed answer, in many small deltas."
    finally:
        await resources.aclose()
    requests = fp.requests_for(route)
    assert len(requests) == 3 and all(r.json.get("stream", True) is not False for r in requests)
    assert len({r.client_port for r in requests}) == 1


@pytest.mark.parametrize(("name", "route", "factory"), BACKENDS, ids=IDS)
async def test_a_stream_held_open_after_its_final_event_still_answers_before_the_timeout(
    fp: FakeProvider, name: str, route: str, factory: Callable[..., Oracle]
) -> None:
    """A provider that sends its final event but keeps the body open gets its answer returned within
    the short grace for the body to end, not after the call's timeout."""
    fp.enqueue(route, text="Whole answer, body left open.", linger=60)
    with anyio.fail_after(5):
        reply = await _oracle(fp, factory).ask(_request(timeout=30), EventSink())
    assert reply.text == "Whole answer, body left open."
