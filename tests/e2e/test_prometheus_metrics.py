"""The team server's Prometheus metrics, scraped from the real ``ask-fable serve --http --metrics-port``
after calls whose outcomes the test knows."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.helpers import ask_fable_command, child_env, in_one_utc_minute
from tests.e2e.team_server import TeamServer, create_key, free_port, team_server
from tests.e2e.test_caps import provider_env
from tests.fakes.fake_provider import DEFAULT_SIDECAR, FakeProvider

ANSWER = f"Bound it.\n\n```sidecar\n{json.dumps(DEFAULT_SIDECAR)}\n```"


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


async def _status(server: TeamServer, key: str, tool: str, question: str | None) -> tuple[str, str | None]:
    response = await server.post(key, _call(tool, {} if question is None else {"question": question}))
    assert response.status_code == 200, response.text
    result = response.json()["result"]["structuredContent"]
    return result["status"], result.get("kind")


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_a_scrape_counts_the_calls_that_were_made(fp: FakeProvider) -> None:
    """Two answered GLM calls, one GLM call the provider fails, one OpenRouter call that reports its
    cost, and a key with one call a minute making a help call (not a model call), one GLM call and
    one call over its limit: /metrics on the metrics port counts each by tool,
    status and kind, the backend requests, tokens and dollars by backend and tenant, the refusal by
    limit, the latency histograms and each backend's breaker state; the /mcp port serves no metrics."""
    fp.enqueue("anthropic", text=ANSWER, usage={"input_tokens": 40, "output_tokens": 9})
    fp.enqueue("anthropic", text=ANSWER, usage={"input_tokens": 60, "output_tokens": 11})
    fp.enqueue("anthropic", status=400, error="the request is malformed")
    fp.enqueue("openai", text=ANSWER, usage={"input_tokens": 100, "output_tokens": 20, "cost": 0.25})
    fp.enqueue("anthropic", text=ANSWER, usage={"input_tokens": 5, "output_tokens": 1})
    team = create_key("Agent", "--tenant", "team")["key"]
    limited = create_key("Limited", "--tenant", "other", "--rpm", "1")["key"]
    port = free_port()
    async with team_server(provider_env(fp), ["--metrics-port", str(port)]) as server:
        ok, failed = ("ok", None), ("error", "upstream_error")
        assert await _status(server, team, "ask_glm", "Is the lock order in the uploader safe?") == ok
        assert await _status(server, team, "ask_glm", "Does the cache sweep race with puts?") == ok
        assert await _status(server, team, "ask_glm", "Is the retry loop bounded?") == failed
        assert await _status(server, team, "ask_openrouter", "Which index fits the tenant lookup?") == ok
        assert await _status(server, limited, "ask_fable_help", None) == ("ok", None)
        await in_one_utc_minute(burst_s=8)  # both of the limited key's asks in one minute
        assert await _status(server, limited, "ask_glm", "Is the queue drained on stop?") == ("ok", None)
        assert await _status(server, limited, "ask_glm", "Is the queue drained on restart?") == \
            ("error", "quota_exceeded")
        async with httpx2.AsyncClient() as http:
            scraped = await http.get(f"http://127.0.0.1:{port}/metrics")
            on_mcp_port = await http.get(f"{server.url}/metrics")
    assert scraped.status_code == 200
    assert on_mcp_port.status_code != 200 and "ask_fable_" not in on_mcp_port.text
    samples = _samples(scraped.text)
    calls = "ask_fable_tool_calls_total"
    assert _value(samples, calls, tool="ask_glm", status="ok", kind="") == 3
    assert _value(samples, calls, tool="ask_glm", status="error", kind="upstream_error") == 1
    assert _value(samples, calls, tool="ask_glm", status="error", kind="quota_exceeded") == 1
    assert _value(samples, calls, tool="ask_openrouter", status="ok", kind="") == 1
    assert _value(samples, calls, tool="ask_fable_help", status="ok", kind="") == 1
    assert _value(samples, "ask_fable_tool_call_duration_seconds_count", tool="ask_glm") == 5
    assert _value(samples, "ask_fable_quota_refusals_total", limit="rpm") == 1

    backend = "ask_fable_backend_requests_total"
    assert _value(samples, backend, backend="glm", status="ok") == 3
    assert _value(samples, backend, backend="glm", status="error") == 1
    assert _value(samples, backend, backend="openrouter", status="ok") == 1
    assert _value(samples, "ask_fable_backend_request_duration_seconds_count", backend="glm") == 4
    tokens = "ask_fable_tokens_total"
    assert _value(samples, tokens, backend="glm", tenant="team", direction="input") == 100
    assert _value(samples, tokens, backend="glm", tenant="team", direction="output") == 20
    assert _value(samples, tokens, backend="glm", tenant="other", direction="input") == 5
    assert _value(samples, tokens, backend="openrouter", tenant="team", direction="input") == 100
    cost = _value(samples, "ask_fable_cost_usd_total", backend="openrouter", tenant="team")
    assert cost == pytest.approx(0.25)
    breaker = "ask_fable_breaker_state"
    assert _value(samples, breaker, backend="glm", model="glm-5.2", state="closed") == 1
    assert (breaker, frozenset({"backend": "glm", "model": "glm-5.2", "state": "open"}.items())) in samples
    assert _value(samples, "ask_fable_warm_sessions") == 0
    assert _value(samples, "ask_fable_database_up") == 1


def test_metrics_port_needs_the_http_server() -> None:
    """``serve --metrics-port`` without ``--http`` is a usage error naming what to add."""
    done = subprocess.run([*ask_fable_command(), "serve", "--metrics-port", "9464"], env=child_env(),
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "--http" in done.stderr
