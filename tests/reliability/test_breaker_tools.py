"""The circuit breaker through the tools: opens on a failing backend, sheds, half-opens, closes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.surface.registry import all_tools
from tests.fakes.fake_cli import install_fake_clis
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.support import GLM_MODEL, KEY, SIDECAR, call, make_server, wired_settings

ONE_TRY = RetryPolicy(attempts=1, base_delay=0.01, max_delay=0.01)
QUESTION = "Is the lock ordering between the pool and the cache safe?"
GOOD = "ollama:good-model:cloud"
COOLDOWN = 3.0  # long enough that a loaded machine finishes the shed checks inside it



def _glm_requests(fp: FakeProvider) -> int:
    return sum(1 for r in fp.requests_for("anthropic") if r.model == GLM_MODEL)


async def _until_probe_allowed(client: Client, fp: FakeProvider, shed: list[str]) -> dict:
    """Call ask_glm until the breaker lets a probe reach the provider; each shed call lands in ``shed``."""
    before = _glm_requests(fp)
    with anyio.fail_after(COOLDOWN * 10):
        while True:
            result = await call(client, "ask_glm", {"question": QUESTION})
            if _glm_requests(fp) > before:
                return result
            assert result["kind"] == "circuit_open", result
            shed.append(result["trace_id"])
            await anyio.sleep(0.1)


async def test_breaker_opens_sheds_half_opens_and_closes(fp: FakeProvider) -> None:
    """60% failures over 5 calls open glm; it is shed (also in a council); a good probe closes it."""
    # Two successes, then failures: the error rate reaches the 0.5 threshold at the 5th call.
    fp.enqueue("anthropic", text=f"Fine.\n\n{SIDECAR}", match=GLM_MODEL, times=2)
    fp.enqueue("anthropic", status=500, error="overloaded", match=GLM_MODEL, times=None)
    fp.enqueue(
        "ollama",
        text=f"Safe if the pool lock is taken first.\n\n{SIDECAR}",
        match="good-model:cloud",
        times=None,
    )
    settings = wired_settings(fp, breaker_cooldown=COOLDOWN, breaker_threshold=0.5, breaker_window=10)
    async with Client(make_server(retry=ONE_TRY, **settings)) as client:
        kinds = [(await call(client, "ask_glm", {"question": QUESTION})).get("kind") for _ in range(5)]
        assert kinds == [None, None, "upstream_error", "upstream_error", "upstream_error"]
        sent = _glm_requests(fp)

        first_shed = await call(client, "ask_glm", {"question": QUESTION})
        assert (first_shed["status"], first_shed["kind"]) == ("error", "circuit_open"), first_shed
        assert _glm_requests(fp) == sent, "a shed call reached the provider"
        shed = [first_shed["trace_id"]]

        council = await call(
            client, "ask_council", {"question": QUESTION, "models": ["glm", GOOD], "synthesizer": GOOD}
        )
        sources = {s["token"]: s for s in council["sources"]}
        print(f"open breaker in a council: quorum {council.get('quorum')}, glm={sources['glm']['status']}")
        assert council["status"] == "ok" and council["quorum"] == "1/2"
        assert sources["glm"]["status"] == "circuit_open" and sources[GOOD]["status"] == "ok"
        assert _glm_requests(fp) == sent

        # Half-open: after the cooldown one probe goes through; it fails, so the breaker reopens.
        probe = await _until_probe_allowed(client, fp, shed)
        assert probe["kind"] == "upstream_error"
        reopened = await call(client, "ask_glm", {"question": QUESTION})
        assert reopened["kind"] == "circuit_open"
        shed.append(reopened["trace_id"])

        # The provider recovers: the next probe succeeds and the breaker closes.
        fp.clear()
        fp.enqueue("anthropic", text=f"Recovered.\n\n{SIDECAR}", match=GLM_MODEL, times=None)
        fp.enqueue("ollama", text=f"Safe.\n\n{SIDECAR}", match="good-model:cloud", times=None)
        probe = await _until_probe_allowed(client, fp, shed)
        assert probe["status"] == "ok" and probe["answer"] == "Recovered."
        after = [await call(client, "ask_glm", {"question": QUESTION}) for _ in range(3)]
        assert all(r["status"] == "ok" for r in after)
        assert _glm_requests(fp) == 4  # the probe and three calls: nothing shed after closing
        healed = await call(
            client, "ask_council", {"question": QUESTION, "models": ["glm", GOOD], "synthesizer": GOOD}
        )
        assert healed["quorum"] == "2/2"

        if "stats" in {spec.name for spec in all_tools()}:
            stats = await call(client, "stats", {"window": "all", "by": "tool"})
            print(f"stats: {stats.get('totals')}; shed ask_glm calls: {len(shed)}")
            totals = stats["totals"]
            assert totals["circuit_open"] == len(shed)  # shed calls are counted as circuit_open ...
            assert totals["errors"] == 4  # ... not as errors: three failures that opened it, the failed probe


async def test_an_open_breaker_says_why_and_when(fp: FakeProvider) -> None:
    """The shed result names the last real error (redacted) and carries retry_after_s; so does its source."""
    fp.enqueue("anthropic", status=500, error=f"overloaded, key {KEY}", match=GLM_MODEL, times=None)
    fp.enqueue("ollama", text=f"Take the pool lock first.\n\n{SIDECAR}", match="good-model:cloud", times=None)
    settings = wired_settings(fp, breaker_cooldown=300, breaker_threshold=0.5, breaker_window=10)
    async with Client(make_server(retry=ONE_TRY, **settings)) as client:
        failures = [await call(client, "ask_glm", {"question": QUESTION}) for _ in range(5)]
        assert {r["kind"] for r in failures} == {"upstream_error"}
        shed = await call(client, "ask_glm", {"question": QUESTION})
        council = await call(
            client, "ask_council", {"question": QUESTION, "models": ["glm", GOOD], "synthesizer": GOOD}
        )
    print(f"shed: {shed['detail']!r} retry_after_s={shed.get('retry_after_s')}")
    assert (shed["status"], shed["kind"]) == ("error", "circuit_open")
    assert "open after 5 failures in the last 5 calls" in shed["detail"]
    assert "last error: upstream_error: GLM HTTP 500: overloaded" in shed["detail"]
    assert "next probe in" in shed["detail"]
    assert 0 < shed["retry_after_s"] <= 300
    source = {s["token"]: s for s in council["sources"]}["glm"]
    assert source["status"] == "circuit_open" and 0 < source["retry_after_s"] <= 300
    assert KEY not in str(shed) and KEY not in str(council)


async def test_config_states_and_refusals_never_open_the_breaker(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 refusals, 8 missing binaries, 8 oversized prompts: never circuit_open; the next call goes out."""
    clis = install_fake_clis(tmp_path / "bin", names=["kimi"])
    monkeypatch.setenv("PATH", str(clis.bin_dir))  # kimi only: codex is not installed
    fp.enqueue("anthropic", text="REFUSED: not a software question", match=GLM_MODEL, times=8)
    fp.enqueue("anthropic", text=f"Fine.\n\n{SIDECAR}", match=GLM_MODEL)
    huge = "x" * 200_000  # over the argv limit kimi's prompt travels in
    async with Client(make_server(retry=ONE_TRY, **wired_settings(fp))) as client:
        refused = [await call(client, "ask_glm", {"question": QUESTION}) for _ in range(8)]
        missing = [await call(client, "ask_codex", {"question": QUESTION}) for _ in range(8)]
        oversized = {"question": QUESTION, "context": huge}
        too_large = [await call(client, "ask_kimi", oversized) for _ in range(8)]
        glm_after = await call(client, "ask_glm", {"question": QUESTION})
        kimi_after = await call(client, "ask_kimi", {"question": QUESTION})
    assert [r["status"] for r in refused] == ["refused"] * 8
    assert [r["kind"] for r in missing] == ["binary_missing"] * 8
    assert [r["kind"] for r in too_large] == ["context_too_large"] * 8
    assert glm_after["status"] == "ok" and _glm_requests(fp) == 9
    assert kimi_after["status"] == "ok" and len(clis.calls("kimi")) == 1
