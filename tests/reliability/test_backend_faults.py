"""Backend faults at the wire, through the tools: bounded retries, structured errors, degraded councils."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.support import (
    DEEPSEEK_MODEL,
    GLM_MODEL,
    KEY,
    SIDECAR,
    call,
    make_server,
    wired_settings,
)

FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
QUESTION = "Should the session cache be write-through or write-back?"
GOOD = "ollama:good-model:cloud"
BAD = "ollama:bad-model:cloud"



# fault name → (reply specs for the glm model, expected kind, expected number of requests)
FAULTS: dict[str, tuple[list[dict[str, Any]], str, int]] = {
    "500 every time": (
        [{"status": 500, "error": f"internal boom for {KEY}", "times": None}],
        "upstream_error",
        FAST.attempts,
    ),
    "503 every time": (
        [{"status": 503, "error": "overloaded", "times": None}],
        "upstream_error",
        FAST.attempts,
    ),
    "reset every time": ([{"reset": True, "times": None}], "upstream_error", FAST.attempts),
    "garbage body": ([{"garbage": True}], "upstream_error", 1),
    "hang": ([{"hang": True}], "timeout", 1),
    "slow body past the deadline": (
        [{"text": "word " * 60, "chunk_chars": 5, "chunk_delay": 0.5}],
        "timeout",
        1,
    ),
    "401 with the key echoed": ([{"status": 401, "error": f"invalid x-api-key {KEY}"}], "not_configured", 1),
    "429 whose Retry-After passes the deadline": (
        [{"status": 429, "retry_after": 60, "times": None}],
        "upstream_error",
        1,
    ),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_fault_becomes_a_structured_error_after_bounded_retries(fp: FakeProvider, fault: str) -> None:
    """Every fault ends as status=error with the right kind, within the attempts bound, key never echoed."""
    replies, kind, requests = FAULTS[fault]
    # Only the deadline faults need a short deadline; the others get room for a busy machine.
    timeout = 1.5 if kind == "timeout" else 15.0
    async with Client(make_server(retry=FAST, **wired_settings(fp, timeout=timeout))) as client:
        fp.enqueue("anthropic", text=f"Warm.\n\n{SIDECAR}", match=GLM_MODEL)
        assert (await call(client, "ask_glm", {"question": QUESTION}))["status"] == "ok"
        fp.clear()
        for reply in replies:
            fp.enqueue("anthropic", match=GLM_MODEL, **reply)
        with anyio.fail_after(40):
            result = await call(client, "ask_glm", {"question": QUESTION})
        sent = len(fp.requests_for("anthropic"))
        print(f"{fault}: kind={result.get('kind')} requests={sent} detail={result.get('detail')!r}")
        assert (result["status"], result["kind"]) == ("error", kind), result
        assert sent == requests
        assert KEY not in str(result)
        fp.clear()
        fp.enqueue("anthropic", text=f"Recovered.\n\n{SIDECAR}", match=GLM_MODEL)
        again = await call(client, "ask_glm", {"question": QUESTION})
        assert again["status"] == "ok" and again["answer"] == "Recovered.", again


async def test_429_retry_after_is_honoured_then_the_answer_arrives(fp: FakeProvider) -> None:
    """A 429 with Retry-After: 0.3 is retried no sooner than 0.3 s later and the call succeeds."""
    fp.enqueue("anthropic", status=429, retry_after=0.3, error="slow down", match=GLM_MODEL)
    fp.enqueue("anthropic", text=f"After the wait.\n\n{SIDECAR}", match=GLM_MODEL)
    async with Client(make_server(retry=FAST, **wired_settings(fp))) as client:
        with anyio.fail_after(10):
            result = await call(client, "ask_glm", {"question": QUESTION})
    first, second = fp.requests_for("anthropic")
    gap = second.received_at - first.received_at
    print(f"429 then ok: retried after {gap:.3f}s")
    assert result["status"] == "ok" and result["answer"] == "After the wait."
    assert gap >= 0.3


def _panel(fp: FakeProvider, deepseek: list[dict[str, Any]], bad: dict[str, Any]) -> None:
    fp.enqueue(
        "anthropic", text=f"Write-through keeps readers consistent.\n\n{SIDECAR}", match=GLM_MODEL, times=None
    )
    for spec in deepseek:
        fp.enqueue("anthropic", match=DEEPSEEK_MODEL, **spec)
    fp.enqueue(
        "ollama",
        text=f"Write-through, with a bounded queue.\n\n{SIDECAR}",
        match="good-model:cloud",
        times=None,
    )
    fp.enqueue("ollama", match="bad-model:cloud", **bad)


@pytest.mark.parametrize(
    ("deepseek", "bad", "quorum"),
    [
        ([{"status": 500, "error": "boom", "times": None}], {"garbage": True, "times": None}, "2/4"),
        ([{"reset": True, "times": None}], {"hang": True}, "2/4"),
        (
            [{"status": 429, "retry_after": 0.05}, {"text": f"Write-back is fine here.\n\n{SIDECAR}"}],
            {"status": 500, "times": None},
            "3/4",
        ),
    ],
    ids=["500+garbage", "reset+hang", "429-recovers+500"],
)
async def test_council_degrades_with_the_right_quorum(
    fp: FakeProvider, deepseek: list[dict[str, Any]], bad: dict[str, Any], quorum: str
) -> None:
    """A council of glm, deepseek and two ollama models answers from the members that worked."""
    _panel(fp, deepseek, bad)
    # The hung member ends at its own 2 s timeout: a straggler wait of at least 30 s never races it.
    settings = wired_settings(fp, timeout=2, council_straggler_floor=30)
    async with Client(make_server(retry=FAST, **settings)) as client:
        with anyio.fail_after(30):
            result = await call(
                client,
                "ask_council",
                {"question": QUESTION, "models": ["glm", "deepseek", GOOD, BAD], "synthesizer": "glm"},
            )
    statuses = {s["token"]: (s["status"], s.get("kind")) for s in result["sources"]}
    print(f"council quorum {result.get('quorum')}: {statuses}")
    assert result["status"] == "ok" and result["quorum"] == quorum, result
    assert result["degraded"] is True
    assert statuses["glm"][0] == statuses[GOOD][0] == "ok"
    assert statuses[BAD][0] != "ok" and statuses[BAD][1] in ("upstream_error", "timeout")
    assert result["synthesizer"] == "glm"
    assert KEY not in str(result)


async def test_council_with_every_member_failing_is_an_error_with_quorum_zero(fp: FakeProvider) -> None:
    """No member answered: a structured upstream_error carrying quorum 0/3 and every source."""
    fp.enqueue("anthropic", status=500, error="down", times=None)
    fp.enqueue("ollama", garbage=True, times=None)
    async with Client(make_server(retry=FAST, **wired_settings(fp, timeout=2))) as client:
        with anyio.fail_after(30):
            result = await call(
                client,
                "ask_council",
                {"question": QUESTION, "models": ["glm", "deepseek", BAD], "synthesizer": "glm"},
            )
        assert (result["status"], result["kind"]) == ("error", "upstream_error"), result
        assert result.get("quorum") == "0/3"
        assert {s["token"] for s in result["sources"]} == {"glm", "deepseek", BAD}
        print(f"all failed: {result['detail']}")
        assert (await call(client, "ask_fable_help", {}))["status"] == "ok"
