"""ask_m3 / ask_gemini / ask_codex / ask_grok / ask_kimi through the MCP client, fake CLIs on PATH."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, is_alive, stdin_bytes

TOOLS = {"ask_m3": "mmx", "ask_gemini": "agy", "ask_codex": "codex", "ask_grok": "grok", "ask_kimi": "kimi"}
MODELS = {"ask_m3": "MiniMax-M3", "ask_gemini": "Gemini 3.1 Pro (High)", "ask_codex": "gpt-5.6-sol",
          "ask_grok": "grok-4.6", "ask_kimi": "kimi-code/k3"}


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """Fake CLIs first on PATH."""
    handle = install_fake_clis(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{handle.bin_dir}{os.pathsep}{os.environ['PATH']}")
    return handle


async def _call(
    tool: str, arguments: dict[str, Any], mode: str | None = None, **settings: Any
) -> dict[str, Any]:
    server = build_server(App(load_settings(**settings)), toolsets=["single"])
    kwargs = {"mode": mode} if mode else {}
    async with Client(server, **kwargs) as client:
        result = await client.call_tool(tool, arguments)
    payload = result.structured_content
    assert result.is_error is (payload["status"] == "error")
    return payload


@pytest.mark.parametrize("tool", list(TOOLS))
async def test_each_cli_tool_answers_with_model_answer_sidecar_and_trace(fakes: FakeCLIs, tool: str) -> None:
    """ok, model, answer minus its sidecar block, the parsed sidecar, a trace_id; the CLI saw the question."""
    question = f"Should the {tool} cache key include the tenant id?"
    result = await _call(tool, {"question": question, "context": "def key(t): ...  # --flag $(x) 中文"})
    assert result["status"] == "ok", result
    assert result["model"] == MODELS[tool]
    assert result["answer"] == f"Answer from {TOOLS[tool]}."
    assert result["sidecar"] == {"recommendation": "apply", "confidence": "high", "needs_context": []}
    assert result["trace_id"]
    call = fakes.calls(TOOLS[tool])[0]
    carried = stdin_bytes(call).decode() + "\n".join(call["argv"])
    assert question in carried and "def key(t): ...  # --flag $(x) 中文" in carried


async def test_listing_declares_the_effort_arguments(fakes: FakeCLIs) -> None:
    """ask_grok and ask_kimi take a preset or their CLI's own levels; ask_m3 / ask_gemini / ask_codex not."""
    async with Client(build_server(App(load_settings()), toolsets=["single"]), mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(TOOLS) <= set(tools)
    grok_effort = str(tools["ask_grok"].input_schema["properties"]["effort"])
    kimi_effort = str(tools["ask_kimi"].input_schema["properties"]["effort"])
    presets = ("quick", "standard", "deep")
    assert all(f"'{level}'" in grok_effort for level in (*presets, "low", "medium", "high"))
    assert all(f"'{level}'" in kimi_effort for level in (*presets, "low", "high", "max"))
    assert "effort" not in tools["ask_m3"].input_schema["properties"]
    assert tools["ask_codex"].output_schema is not None


async def test_effort_reaches_the_cli(fakes: FakeCLIs) -> None:
    """ask_kimi(deep) runs kimi at max; ask_grok(deep) stays low unless ASK_FABLE_GROK_REASONING is set."""
    kimi = await _call("ask_kimi", {"question": "Is this lock ordering safe?", "effort": "deep"})
    grok = await _call("ask_grok", {"question": "Is this lock ordering safe?", "effort": "deep"})
    grok_high = await _call("ask_grok", {"question": "Is this retry loop bounded?", "effort": "deep"},
                            grok_reasoning="high")
    assert kimi["effort"] == "max" and fakes.calls("kimi")[0]["argv"][4] == "max"
    assert grok["effort"] == "low" and grok_high["effort"] == "high"
    assert [c["argv"][3] for c in fakes.calls("grok")] == ["low", "high"]


async def test_native_effort_levels_are_accepted_and_passed_through(fakes: FakeCLIs) -> None:
    """grok's low/medium/high and kimi's low/high/max reach the CLI as given; effort reports the level."""
    question = "Is this retry loop bounded?"
    grok = [await _call("ask_grok", {"question": question, "effort": e}) for e in ("low", "medium", "high")]
    kimi = [await _call("ask_kimi", {"question": question, "effort": e}) for e in ("low", "high", "max")]
    assert [r["status"] for r in grok + kimi] == ["ok"] * 6, grok + kimi
    assert [c["argv"][2:4] for c in fakes.calls("grok")] == [
        ["--reasoning-effort", "low"], ["--reasoning-effort", "medium"], ["--reasoning-effort", "high"]]
    assert [r["effort"] for r in grok] == ["low", "medium", "high"]
    assert [c["argv"][3:5] for c in fakes.calls("kimi")] == [["--effort", "low"], ["--effort", "high"],
                                                             ["--effort", "max"]]
    assert [r["effort"] for r in kimi] == ["low", "high", "max"]


async def test_grok_presets_climb_up_to_the_configured_cap(fakes: FakeCLIs) -> None:
    """With ASK_FABLE_GROK_REASONING=medium: quick runs low, standard and deep run medium."""
    question = "Is this retry loop bounded?"
    results = [await _call("ask_grok", {"question": question, "effort": preset}, grok_reasoning="medium")
               for preset in ("quick", "standard", "deep")]
    assert [c["argv"][3] for c in fakes.calls("grok")] == ["low", "medium", "medium"]
    assert [r["effort"] for r in results] == ["low", "medium", "medium"]


async def test_effort_outside_a_clis_levels_is_bad_args(fakes: FakeCLIs) -> None:
    """kimi has no medium and grok no max: the schema rejects them before anything runs."""
    kimi = await _call("ask_kimi", {"question": "Is this retry loop bounded?", "effort": "medium"})
    grok = await _call("ask_grok", {"question": "Is this retry loop bounded?", "effort": "max"})
    assert kimi["kind"] == "bad_args" and grok["kind"] == "bad_args"
    assert fakes.calls("kimi") == [] and fakes.calls("grok") == []


async def test_kimi_oversized_prompt_is_refused_without_spawning(fakes: FakeCLIs) -> None:
    """A 200 KB context to ask_kimi is context_too_large pointing at the HTTP route; kimi never ran."""
    result = await _call("ask_kimi", {"question": "Review this module.", "context": "x" * 200_000})
    assert result["status"] == "error" and result["kind"] == "context_too_large"
    assert "moonshotai/kimi-k3" in result["detail"]
    assert fakes.events("kimi") == []


async def test_missing_binary_is_binary_missing(fakes: FakeCLIs) -> None:
    """Without codex on PATH, ask_codex says what to install."""
    fakes.remove("codex")
    result = await _call("ask_codex", {"question": "Which index fits this query?"})
    assert result["kind"] == "binary_missing" and "codex" in result["detail"]


async def test_failing_cli_is_upstream_error_without_secrets(fakes: FakeCLIs) -> None:
    """A non-zero exit quotes stderr with configured keys removed."""
    secret = "dsk-live-0123456789abcdef"
    fakes.behave("mmx", exit_code=1, stderr=f"quota exceeded for key {secret}\n")
    result = await _call("ask_m3", {"question": "Is the migration reversible?"}, deepseek_api_key=secret)
    assert result["kind"] == "upstream_error" and "quota exceeded" in result["detail"]
    assert secret not in str(result)


async def test_timeout_through_the_tool_leaves_no_orphans(fakes: FakeCLIs) -> None:
    """ASK_FABLE_GEMINI_TIMEOUT bounds ask_gemini; the hung agy and its child are gone afterwards."""
    fakes.behave("agy", hang=True, spawn_child=True)
    with anyio.fail_after(30):
        result = await _call("ask_gemini", {"question": "Why does this deadlock?"}, gemini_timeout=1)
    assert result["kind"] == "timeout"
    pids = [fakes.calls("agy")[0]["pid"], *fakes.child_pids("agy")]
    with anyio.move_on_after(3):
        while any(is_alive(p) for p in pids):
            await anyio.sleep(0.02)
    assert [p for p in pids if is_alive(p)] == []


async def test_repeat_is_served_from_cache(fakes: FakeCLIs) -> None:
    """The same question twice runs the CLI once (modern protocol)."""
    first = await _call("ask_grok", {"question": "Is this cache key complete?"}, mode=None)
    second = await _call("ask_grok", {"question": "Is this cache key complete?"}, mode=None)
    assert first["status"] == second["status"] == "ok"
    assert second.get("cached") is True and len(fakes.calls("grok")) == 1
