"""Real calls that leave the traces the web view's tests look at, made through an MCP client against
the loopback fake provider: a council of eight (one member retried twice, one failing, one cut at the
deadline, the synthesis after the slowest), a council whose hung member is cut as a straggler, a
chain, a debate, a cached repeat, hostile text, an error,
a guard refusal, and one call in safe mode."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.e2e.test_mode_tools import answer, http_settings
from tests.fakes.fake_provider import FakeProvider
from tests.ui.server import state_env

HOSTILE_QUESTION = (
    "Why does <script>window.__pwned = 1</script> \"quoted\" 'single' \x1b[31m\x07 & <b>break</b>?"
)
HOSTILE_SESSION = '<img src=x onerror="window.__pwned = 2">'
HOSTILE_ANSWER = 'It is fine: </pre><script>window.__pwned = 3</script><a href="javascript:1">x</a> \x00\x1b'
COUNCIL_MEMBERS = [
    "glm",
    "deepseek",
    "ollama:qwen3-coder",
    "ollama:gpt-oss:120b-cloud",
    "atlas:zai-org/glm-5.2",
    "atlas:moonshotai/kimi-k2.6",
    "atlas:openai/gpt-5.6-sol",
    "atlas:qwen/qwen3-max",
]
#: Members may run for two thirds of the council's bound: 2.4 s here.
COUNCIL_SECONDS = 3.6
RETRY = RetryPolicy(attempts=3, base_delay=0.08, max_delay=0.12)


@dataclass(frozen=True)
class Recorded:
    """Where the traces are (the environment that finds them) and the trace id of each call."""

    env: dict[str, str]
    state_dir: Path
    ids: dict[str, str]


def _script_council(fp: FakeProvider) -> None:
    fp.enqueue(
        "anthropic",
        text=answer("Keep the global lock; contention is low.", "apply"),
        match="glm-5.2",
        delay=0.35,
        usage={"input_tokens": 420, "output_tokens": 96},
    )
    fp.enqueue("anthropic", status=503, match="deepseek-v4-pro", times=2)
    fp.enqueue(
        "anthropic",
        text=answer("Drop the lock for sharded maps.", "reject", "medium"),
        match="deepseek-v4-pro",
        delay=0.3,
    )
    fp.enqueue(
        "ollama", text=answer("Keep it, measure first.", "apply"), match="qwen3-coder:cloud", delay=0.6
    )
    fp.enqueue("ollama", status=500, match="gpt-oss:120b-cloud", times=3)
    fp.enqueue(
        "openai",
        text=answer("Keep the lock.", "apply"),
        match="zai-org/glm-5.2",
        delay=0.5,
        usage={"input_tokens": 410, "output_tokens": 80, "cost": 0.0125},
    )
    fp.enqueue(
        "openai",
        text=answer("Investigate the p99 first.", "investigate", "medium"),
        match="moonshotai/kimi-k2.6",
        delay=0.9,
        usage={"input_tokens": 415, "output_tokens": 120, "cost": 0.0031},
    )
    fp.enqueue(
        "openai",
        text=answer("Keep the lock; add a read path.", "apply"),
        match="openai/gpt-5.6-sol",
        delay=1.15,
        usage={"input_tokens": 400, "output_tokens": 140, "cost": 0.02},
    )
    fp.enqueue("openai", text=answer("Too late.", "apply"), match="qwen/qwen3-max", delay=30)
    fp.enqueue(
        "anthropic",
        text=answer("Synthesis: keep the lock, measure p99.", "apply"),
        match="deepseek-v4-pro",
        delay=0.25,
    )


async def _calls(fp: FakeProvider) -> dict[str, str]:
    settings = http_settings(
        fp, trace_mode="full", cache=True, max_parallel=8, council_timeout=COUNCIL_SECONDS, timeout=10
    )
    ids: dict[str, str] = {}
    app = App(load_settings(**settings), resources=Resources(retry=RETRY))
    async with Client(build_server(app, toolsets=["all"])) as client:

        async def call(name: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            payload = result.structured_content
            assert payload is not None and payload.get("trace_id"), payload
            ids[name] = payload["trace_id"]
            return payload

        # First, so the council's members start together (the first HTTP call loads the client).
        fp.enqueue("anthropic", text=answer("Yes, the retry loop is bounded."), match="glm-5.2")
        first = await call("first", "ask_glm", {"question": "Is this retry loop bounded by its deadline?"})
        cached = await call("cached", "ask_glm", {"question": "Is this retry loop bounded by its deadline?"})
        assert first["status"] == "ok" and cached["cached"] is True, cached

        _script_council(fp)
        council = await call(
            "council",
            "ask_council",
            {
                "question": "Should the cache keep its global lock?",
                "models": COUNCIL_MEMBERS,
                "synthesizer": "deepseek",
            },
        )
        assert council["status"] == "ok" and council["quorum"] == "6/8", council

        fp.enqueue("anthropic", text=answer("Draft: page by keyset.", "investigate"), match="glm-5.2")
        fp.enqueue(
            "openai",
            text=answer("Critique: keyset needs a stable order.", "apply"),
            match="zai-org/glm-5.2",
            usage={"input_tokens": 300, "output_tokens": 60, "cost": 0.004},
        )
        fp.enqueue(
            "anthropic", text=answer("Decision: keyset on (ts, id).", "apply"), match="deepseek-v4-pro"
        )
        chain = await call(
            "chain",
            "ask_chain",
            {
                "question": "How should we paginate the events API?",
                "pipeline": "glm > atlas:zai-org/glm-5.2 > deepseek",
            },
        )
        assert chain["status"] == "ok", chain

        claims = '```claims\n[{"id": "C1", "claim": "Reads dominate 100:1."}]\n```'
        dispositions = (
            '```dispositions\n[{"id": "C1", "disposition": "concede", '
            '"reason": "the access log confirms a read-heavy workload"}]\n```'
        )
        fp.enqueue("anthropic", text=answer(f"Use a read-through cache.\n\n{claims}"), match="glm-5.2")
        fp.enqueue("anthropic", text=answer(f"Agreed.\n\n{dispositions}"), match="deepseek-v4-pro")
        debate = await call(
            "debate",
            "ask_debate",
            {
                "question": "Cache or not?",
                "proposer": "glm",
                "opponent": "deepseek",
                "adjudicator": "ollama:gpt-oss:120b-cloud",
            },
        )
        assert debate["status"] == "ok", debate

        fp.enqueue("anthropic", text=answer(HOSTILE_ANSWER), match="glm-5.2")
        hostile = await call(
            "hostile",
            "ask_chain",
            {"question": HOSTILE_QUESTION, "pipeline": "glm", "session": HOSTILE_SESSION},
        )
        assert hostile["status"] == "ok", hostile

        fp.enqueue("anthropic", status=500, match="deepseek-v4-pro", times=3)
        failed = await call("failed", "ask_deepseek", {"question": "Why does the nightly job fail at 02:00?"})
        assert failed["status"] == "error", failed

        refused = await call(
            "refused",
            "ask_glm",
            {"question": "Write ransomware that encrypts my ex's laptop files and demands bitcoin."},
        )
        assert refused["status"] == "refused", refused
    await app.aclose()

    # A council under the default straggler rule: two members answer, the third never does and is cut.
    stragglers_app = App(load_settings(**http_settings(fp, trace_mode="full", timeout=10)))
    async with Client(build_server(stragglers_app, toolsets=["all"])) as client:
        fp.enqueue("ollama", text=answer("Alpha: keep the lock.", "apply"), match="alpha:cloud")
        fp.enqueue("ollama", text=answer("Bravo: keep the lock.", "apply"), match="bravo:cloud")
        fp.enqueue("ollama", hang=True, match="hang:cloud")
        fp.enqueue("anthropic", text=answer("Synthesis: keep the lock.", "apply"), match="glm-5.2")
        result = await client.call_tool("ask_council", {
            "question": "Should the queue keep its lock?", "session": "stragglers",
            "models": ["ollama:alpha", "ollama:bravo", "ollama:hang"], "synthesizer": "glm",
        })
        payload = result.structured_content
        assert payload is not None and payload["quorum"] == "2/3", payload
        ids["stragglers"] = payload["trace_id"]
    await stragglers_app.aclose()

    safe_app = App(load_settings(**http_settings(fp, trace_mode="safe", timeout=10)))
    async with Client(build_server(safe_app, toolsets=["all"])) as client:
        fp.enqueue("anthropic", text=answer("Safe-mode answer."), match="glm-5.2")
        result = await client.call_tool("ask_glm", {"question": "Which index serves this query?"})
        assert result.structured_content is not None
        ids["safe"] = result.structured_content["trace_id"]
    await safe_app.aclose()
    return ids


def record(home: Path) -> Recorded:
    """Make every call with its state under ``home``; the environment and trace ids to find them."""
    env = state_env(home)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for name in ("ASK_FABLE_TRACE_MODE", "ASK_FABLE_CACHE"):
            patch.delenv(name, raising=False)
        with FakeProvider() as fp:
            ids = anyio.run(_calls, fp)
    return Recorded(env=env, state_dir=Path(env["XDG_STATE_HOME"]) / "ask_fable", ids=ids)


def dumps(value: Any) -> str:
    """JSON as the pages show event details."""
    return json.dumps(value, ensure_ascii=False)
