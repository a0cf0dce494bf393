"""The shared HTTP plumbing: URL rules, Retry-After, provider messages and the retry loop's bounds."""

from __future__ import annotations

import email.utils
import time

import anyio
import httpx2
import pytest

from ask_fable.backends import http_client
from ask_fable.backends.deadline import SharedDeadline, bounded_by
from ask_fable.backends.http_client import (
    RetryPolicy,
    is_loopback,
    normalize_effort,
    provider_message,
    retry_after_seconds,
    send,
    versioned_url,
)
from ask_fable.errors import BadArgs, NotConfigured, OracleTimeout, UpstreamError

FAST = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.02)


async def _json(response: httpx2.Response) -> dict:
    return http_client.loads_object(await response.aread(), "Test")


def _transport(*responses: httpx2.Response | Exception) -> tuple[httpx2.MockTransport, list[httpx2.Request]]:
    seen: list[httpx2.Request] = []
    queue = list(responses)

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(item, Exception):
            raise item
        return item

    return httpx2.MockTransport(handler), seen


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1/chat/completions"),
        ("https://openrouter.ai/api/v1/", "https://openrouter.ai/api/v1/chat/completions"),
        ("https://api.atlascloud.ai", "https://api.atlascloud.ai/v1/chat/completions"),
        ("https://api.z.ai/api/anthropic", "https://api.z.ai/api/anthropic/v1/chat/completions"),
        ("http://127.0.0.1:9/v2", "http://127.0.0.1:9/v2/chat/completions"),
    ],
)
def test_versioned_url_follows_the_base(base: str, expected: str) -> None:
    """A base already ending in a version gets the path appended; any other base gets /v1 first."""
    assert versioned_url(base, "chat/completions") == expected


def test_retry_after_reads_seconds_and_http_dates() -> None:
    """Retry-After is honoured both as delta-seconds and as an HTTP date; junk is ignored."""
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= (retry_after_seconds(date, now=now) or 0) <= 31
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert retry_after_seconds(past, now=now) == 0.0


def test_provider_message_reads_each_error_shape() -> None:
    """OpenAI, Anthropic and Ollama error bodies yield the provider's own message."""
    assert provider_message(b'{"error": {"message": "model not found", "type": "x"}}') == "model not found"
    assert provider_message('{"type": "error", "error": {"type": "t", "message": "bad"}}') == "bad"
    assert provider_message('{"error": "no such model"}') == "no such model"
    assert provider_message("<html> plain   text </html>") == "<html> plain text </html>"
    assert len(provider_message("x" * 5000)) <= http_client.MESSAGE_LIMIT + 1


def test_loopback_detection() -> None:
    """Only this machine counts as the local daemon."""
    assert is_loopback("http://localhost:11434")
    assert is_loopback("http://127.0.0.1:1")
    assert is_loopback("http://[::1]:11434")
    assert not is_loopback("https://ollama.com")
    assert not is_loopback("http://10.0.0.5:11434")


def test_effort_presets_and_synonyms() -> None:
    """quick/standard/deep are accepted (and low/medium/high as synonyms); anything else is bad_args."""
    assert normalize_effort("Deep") == "deep"
    assert normalize_effort("low") == "quick"
    assert normalize_effort(None) is None
    assert normalize_effort(" ") is None
    with pytest.raises(BadArgs):
        normalize_effort("ludicrous")


async def test_retry_after_longer_than_the_deadline_fails_at_once() -> None:
    """A Retry-After that would outlive the call's budget is not slept on."""
    slow = httpx2.Response(429, headers={"retry-after": "60"}, json={"error": "slow down"})
    transport, seen = _transport(slow)
    with anyio.fail_after(5), pytest.raises(UpstreamError) as info:
        await send("GET", "https://p.example/x", label="P", timeout=2, handle=_json, retry=FAST,
                   transport=transport)
    assert len(seen) == 1
    assert "429" in info.value.detail and "deadline" in info.value.detail


@pytest.mark.parametrize("moves", [False, True], ids=["already-short", "moves-during-the-wait"])
async def test_a_retry_never_waits_past_the_shared_deadline(moves: bool) -> None:
    """Under a mode's shared deadline, a retry that would end past it is not waited for: at once when
    the deadline is already too close, or the moment it moves closer during the wait."""
    slow = httpx2.Response(503, headers={"retry-after": "5"}, json={"error": "overloaded"})
    transport, seen = _transport(slow)
    shared = SharedDeadline(anyio.current_time() + (60 if moves else 1), "the test's cut")

    async def move_it() -> None:
        await anyio.sleep(0.2)
        shared.tighten(anyio.current_time() + 1, "the test's cut")

    failures: list[UpstreamError] = []

    async def ask() -> None:
        with bounded_by(shared), pytest.raises(UpstreamError) as info:
            await send("GET", "https://p.example/x", label="P", timeout=30, handle=_json, retry=FAST,
                       transport=transport)
        failures.append(info.value)

    with anyio.fail_after(4):
        async with anyio.create_task_group() as group:
            if moves:
                group.start_soon(move_it)
            group.start_soon(ask)
    assert len(seen) == 1
    [failure] = failures
    assert "503" in failure.detail and "would pass the test's cut" in failure.detail


def test_a_failing_provider_costs_three_requests_by_default() -> None:
    """The default policy makes three requests in all, the first included."""
    assert http_client.DEFAULT_RETRY.attempts == 3


async def test_connect_errors_are_retried_then_reported() -> None:
    """A provider that cannot be reached is retried a bounded number of times."""
    transport, seen = _transport(httpx2.ConnectError("refused"))
    with pytest.raises(UpstreamError) as info:
        await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                   transport=transport)
    assert len(seen) == FAST.attempts
    assert "connection failed" in info.value.detail


async def test_connect_error_then_success() -> None:
    """One refused connection, then an answer: the caller sees only the answer."""
    transport, seen = _transport(httpx2.ConnectError("refused"), httpx2.Response(200, json={"ok": 1}))
    assert await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                      transport=transport) == {"ok": 1}
    assert len(seen) == 2


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
async def test_retryable_statuses(status: int) -> None:
    """408, 409, 429 and 5xx are retried."""
    transport, seen = _transport(httpx2.Response(status, json={"error": "x"}),
                                 httpx2.Response(200, json={"a": 1}))
    assert await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                      transport=transport) == {"a": 1}
    assert len(seen) == 2


@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_credentials_are_not_configured_at_once(status: int) -> None:
    """401 / 403 are a configuration state: not retried, kind not_configured, the caller's fix as hint."""
    transport, seen = _transport(httpx2.Response(status, json={"error": {"message": f"bad key {status}"}}))
    with pytest.raises(NotConfigured) as info:
        await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                   transport=transport, auth_hint="set P_KEY")
    assert len(seen) == 1
    result = info.value.to_result()
    assert result["kind"] == "not_configured" and f"bad key {status}" in result["detail"]
    assert result["hint"] == "set P_KEY"


@pytest.mark.parametrize(("status", "body"), [
    (402, {"error": {"message": "Insufficient Balance"}}),
    (429, {"error": {"code": "1113", "message": "余额不足或无可用资源包,请充值。"}}),
    (429, {"error": {"type": "insufficient_quota", "message": "You exceeded your current quota"}}),
    (400, {"error": {"message": "Your credit balance is too low to access the Anthropic API."}}),
    (403, {"error": "this model requires a subscription, upgrade for access"}),
])
async def test_an_account_out_of_credits_is_not_configured_at_once(status: int, body: dict) -> None:
    """A refusal over the account's balance or plan is not retried and names the billing fix."""
    transport, seen = _transport(httpx2.Response(status, json=body))
    with pytest.raises(NotConfigured) as info:
        await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                   transport=transport, auth_hint="set P_KEY")
    assert len(seen) == 1
    assert "add credits to the P account" in info.value.to_result()["hint"]


@pytest.mark.parametrize("body", [
    {"error": {"type": "rate_limit_error", "message": "Rate limit reached for requests per minute"}},
    {"error": "too many concurrent requests"},
])
async def test_a_rate_limit_is_still_retried(body: dict) -> None:
    """A 429 that says nothing of balance or plan is a rate limit: retried, not an account state."""
    transport, seen = _transport(httpx2.Response(429, json=body), httpx2.Response(200, json={"a": 1}))
    assert await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                      transport=transport) == {"a": 1}
    assert len(seen) == 2


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_other_client_errors_fail_at_once(status: int) -> None:
    """Non-retryable 4xx fail on the first answer, with the provider's message."""
    transport, seen = _transport(httpx2.Response(status, json={"error": {"message": f"nope {status}"}}))
    with pytest.raises(UpstreamError) as info:
        await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                   transport=transport)
    assert len(seen) == 1
    assert f"nope {status}" in info.value.detail
    assert info.value.to_result()["kind"] == "upstream_error"


async def test_read_timeout_is_an_oracle_timeout() -> None:
    """A provider that stops answering becomes kind=timeout, not a crash."""
    transport, _ = _transport(httpx2.ReadTimeout("stalled"))
    with pytest.raises(OracleTimeout):
        await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                   transport=transport)


async def test_key_never_appears_in_a_retry_note_or_error() -> None:
    """Messages echoing the key are scrubbed, in notes and in the final error."""
    key = "sk-planted-ZZZ-0123456789abcdef"
    transport, _ = _transport(httpx2.Response(500, json={"error": {"message": f"bad key {key}"}}))
    notes: list[str] = []
    from ask_fable.backends.base import EventSink

    with pytest.raises(UpstreamError) as info:
        await send("GET", "https://p.example/x", label="P", timeout=5, handle=_json, retry=FAST,
                   transport=transport, secrets=[key], sink=EventSink(on_note=notes.append))
    assert notes
    assert all(key not in n for n in notes)
    assert key not in info.value.detail and key not in str(info.value.to_result())


async def test_no_redirect_is_followed() -> None:
    """A redirect is not followed, so a key header never travels to another host."""
    transport, seen = _transport(httpx2.Response(302, headers={"location": "https://evil.example/"}))

    async def handle(response: httpx2.Response) -> int:
        return response.status_code

    assert await send("GET", "https://p.example/x", label="P", timeout=5, handle=handle, retry=FAST,
                      transport=transport, headers={"x-api-key": "k"}) == 302
    assert [str(r.url) for r in seen] == ["https://p.example/x"]


@pytest.mark.parametrize("base", ["ftp://provider.example", "provider.example/v1", "http://[::1"])
async def test_invalid_base_url_is_not_configured_at_once(base: str) -> None:
    """A malformed base URL is configuration: not_configured on the first attempt, never retried."""
    from ask_fable.backends.base import EventSink, OracleRequest
    from ask_fable.backends.providers.glm import make_glm_oracle
    from ask_fable.config import load_settings
    from ask_fable.errors import NotConfigured

    notes: list[str] = []
    oracle = make_glm_oracle(load_settings(glm_api_key="k" * 12, glm_base_url=base),
                             retry=http_client.RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02))
    with anyio.fail_after(5), pytest.raises(NotConfigured, match="invalid base URL") as info:
        await oracle.ask(OracleRequest(system="s", prompt="q?", timeout=5), EventSink(on_note=notes.append))
    assert info.value.kind == "not_configured" and notes == []
