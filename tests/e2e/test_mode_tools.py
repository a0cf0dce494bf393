"""ask_council / ask_chain / ask_debate / provider councils / configure_* through the MCP client,
with HTTP members on the loopback fake provider and fake CLIs on PATH."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ask_fable.backends.providers.ollama import OllamaSettings
from ask_fable.backends.providers.openrouter import OpenRouterSettings
from ask_fable.config import load_settings, read_config_file
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.fakes.fake_cli import install_fake_clis
from tests.fakes.fake_provider import FakeProvider

KEY = "sk-test-0123456789"


def answer(text: str, rec: str = "apply", confidence: str = "high") -> str:
    sidecar = {"recommendation": rec, "confidence": confidence, "needs_context": []}
    return f"{text}\n\n```sidecar\n{json.dumps(sidecar)}\n```"


def http_settings(fp: FakeProvider, **extra: Any) -> dict[str, Any]:
    """Settings pointing GLM, DeepSeek, Ollama and Atlas at the fake provider."""
    return {
        "glm_api_key": KEY, "glm_base_url": f"{fp.base_url}/api/anthropic",
        "deepseek_api_key": KEY, "deepseek_base_url": f"{fp.base_url}/anthropic",
        "ollama_base_url": fp.base_url,
        "atlas_api_key": KEY, "atlas_base_url": fp.base_url,
        "cache": False, "hub": False,
        **extra,
    }


async def call(tool: str, arguments: dict[str, Any], settings: dict[str, Any],
               progress: list[tuple[float, float | None, str | None]] | None = None,
               toolsets: list[str] | None = None) -> dict[str, Any]:
    server = build_server(App(load_settings(**settings)), toolsets=toolsets or ["all"])

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        if progress is not None:
            progress.append((done, total, message))

    async with Client(server) as client:
        result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    payload = result.structured_content
    assert payload is not None
    assert result.is_error is (payload["status"] == "error")
    return payload


async def test_council_over_http_members_synthesizes_anonymously(fp: FakeProvider) -> None:
    fp.enqueue("anthropic", text=answer("As GLM, I say keep the lock.", "apply"), match="glm-5.2")
    fp.enqueue("anthropic", text=answer("deepseek-v4-pro here: drop it.", "reject"), match="deepseek-v4-pro")
    fp.enqueue("ollama", text=answer("Qwen says keep it.", "apply"))
    fp.enqueue("anthropic", text=answer("Synthesis: keep the lock.", "apply"), match="deepseek-v4-pro")
    progress: list[tuple[float, float | None, str | None]] = []
    result = await call(
        "ask_council",
        {"question": "Should the cache keep its global lock?",
         "models": ["glm", "deepseek", "ollama:qwen3-coder"], "synthesizer": "deepseek"},
        http_settings(fp), progress,
    )
    assert result["status"] == "ok", result
    assert result["mode"] == "council" and result["synthesizer"] == "deepseek"
    assert result["answer"] == "Synthesis: keep the lock."
    assert result["quorum"] == "3/3" and result["degraded"] is False
    assert result["consensus"] == "divergent" and result["material_disagreement"] is True
    assert result["confidence"] == "low"
    assert {s["token"]: s["recommendation"] for s in result["sources"]} == {
        "glm": "apply", "deepseek": "reject", "ollama:qwen3-coder:cloud": "apply"}
    assert result["trace_id"]
    body = fp.requests_for("anthropic")[-1].json
    synth_prompt = json.dumps([body.get("system"), body["messages"]])
    for name in ("glm-5.2", "qwen3-coder", "As GLM", "deepseek-v4-pro"):
        assert name not in synth_prompt
    assert "Expert A" in synth_prompt and "As [model], I say keep the lock." in synth_prompt
    assert progress and progress[-1][0] == progress[-1][1]


async def test_council_degrades_to_one_opinion_when_a_member_is_unconfigured(
    fp: FakeProvider,
) -> None:
    fp.enqueue("anthropic", text=answer("Only GLM answered.", "investigate"), match="glm-5.2")
    args = {"question": "Is this retry loop bounded?", "models": ["glm", "deepseek"]}
    result = await call("ask_council", args, http_settings(fp, deepseek_api_key=None))
    assert result["status"] == "ok", result
    assert result["quorum"] == "1/2" and result["degraded"] is True
    assert result["consensus"] == "unknown" and "one opinion" in result["recommended_next_action"]
    deepseek = next(s for s in result["sources"] if s["token"] == "deepseek")
    assert deepseek["status"] == "not_configured"
    assert result["answer"] == "Only GLM answered."


async def test_group_as_synthesizer_and_unknown_tokens_are_bad_args(fp: FakeProvider) -> None:
    settings = http_settings(fp)
    twin = await call("ask_council", {"question": "Is this safe?", "synthesizer": "twin"}, settings)
    unknown = await call("ask_chain", {"question": "Is this safe?", "pipeline": "m3 > gpt6"}, settings)
    debate = await call("ask_debate", {"question": "Is this safe?", "opponent": "twin flames"}, settings)
    assert twin["kind"] == unknown["kind"] == debate["kind"] == "bad_args"
    assert "gpt6" in unknown["detail"] and "minimax" in unknown["detail"]
    assert not fp.requests


async def test_chain_runs_stages_in_order_over_http(fp: FakeProvider) -> None:
    fp.enqueue("anthropic", text=answer("Draft.", "investigate"), match="glm-5.2")
    fp.enqueue("ollama", text=answer("Critique and extension.", "apply"))
    fp.enqueue("anthropic", text=answer("Decision.", "apply"), match="deepseek-v4-pro")
    result = await call("ask_chain", {"question": "How should we paginate?",
                                      "pipeline": "glm > ollama:gpt-oss:120b-cloud > deepseek"},
                        http_settings(fp))
    assert result["status"] == "ok", result
    assert result["pipeline"] == ["glm", "ollama:gpt-oss:120b-cloud", "deepseek"]
    assert [s["role"] for s in result["stages"]] == ["draft", "critique", "decide"]
    assert result["answered_by"] == "deepseek" and result["answer"] == "Decision."
    assert result["recommendation_drift"] == ["investigate", "apply", "apply"]
    assert result["answered"] == result["requested"] == 3
    # Every stage is priced from the tokens it reported; the chain costs their sum, not the last one.
    costs = [s["cost_usd"] for s in result["stages"]]
    assert all(c > 0 for c in costs) and {s["cost_source"] for s in result["stages"]} == {"estimated"}
    assert result["cost_usd"] == round(sum(costs), 10) and result["cost_source"] == "estimated"


async def test_debate_over_http_is_conceded(fp: FakeProvider) -> None:
    claims = '```claims\n[{"id": "C1", "claim": "Reads dominate 100:1."}]\n```'
    dispositions = ('```dispositions\n[{"id": "C1", "disposition": "concede", '
                    '"reason": "the access log confirms a read-heavy workload"}]\n```')
    fp.enqueue("anthropic", text=answer(f"Use a read-through cache.\n\n{claims}"), match="glm-5.2")
    fp.enqueue("anthropic", text=answer(f"Agreed.\n\n{dispositions}"), match="deepseek-v4-pro")
    result = await call("ask_debate", {"question": "Cache or not?", "proposer": "glm", "opponent": "deepseek",
                                       "adjudicator": "ollama:gpt-oss:120b-cloud"}, http_settings(fp))
    assert result["status"] == "ok", result
    assert result["debate"]["resolution"] == "conceded"
    assert result["debate"]["pairing"] == "glm vs deepseek"
    assert [t["role"] for t in result["turns"]] == ["proposer", "opponent"]
    assert result["answer"] == "Use a read-through cache."
    assert "transcript" not in result
    costs = [t["cost_usd"] for t in result["turns"]]
    assert len(costs) == 2 and all(c > 0 for c in costs)
    assert result["cost_usd"] == round(sum(costs), 10) and result["cost_source"] == "estimated"


async def test_atlas_council_falls_back_from_missing_codex_to_atlas_gpt(
    fp: FakeProvider,
) -> None:
    fp.enqueue("openai", text=answer("Member one.", "apply"), match="zai-org/glm-5.2")
    fp.enqueue("openai", text=answer("Member two.", "apply"), match="deepseek-ai/deepseek-v4-pro")
    fp.enqueue("openai", text=answer("GPT ruling.", "apply"), match="openai/gpt-5.6-sol")
    models = ["atlas:zai-org/glm-5.2", "deepseek-ai/deepseek-v4-pro"]
    result = await call("ask_atlas_council", {"question": "Which queue?", "models": models},
                        http_settings(fp))
    assert result["status"] == "ok", result
    assert result["synthesizer"] == "atlas:openai/gpt-5.6-sol"
    synthesis = result["synthesis"]
    assert synthesis["requested"] == "codex" and synthesis["fallback"] is True
    codex_step = "install OpenAI's codex CLI (npm install -g @openai/codex) and run `codex login` once"
    assert synthesis["tried"][0] == {"token": "codex", "status": "binary_missing", "kind": "binary_missing",
                                     "hint": codex_step}
    assert result["answer"] == "GPT ruling."


async def test_atlas_council_uses_the_local_codex_cli_first(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    clis = install_fake_clis(tmp_path / "bin", names=("codex",))
    monkeypatch.setenv("PATH", f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = await call("ask_atlas_council", {"question": "Which queue?", "models": ["a/one", "b/two"]},
                        http_settings(fp, atlas_council=["ignored/model"]))
    assert result["status"] == "ok", result
    assert result["synthesizer"] == "codex" and result["synthesis"]["fallback"] is False
    assert len(clis.calls("codex")) == 1
    assert {r.json["model"] for r in fp.requests_for("openai")} == {"a/one", "b/two"}


async def test_ollama_council_uses_the_configured_set(fp: FakeProvider) -> None:
    fp.enqueue("ollama", text=answer("Only one.", "apply"), match="minimax-m3:cloud")
    fp.enqueue("ollama", status=404, error="model not found", match="glm-5.2:cloud")
    result = await call("ask_ollama_council", {"question": "Is this index useful?"},
                        http_settings(fp, ollama_council=["minimax-m3", "ollama:glm-5.2"]))
    assert result["status"] == "ok", result
    assert [s["token"] for s in result["sources"]] == ["ollama:minimax-m3:cloud", "ollama:glm-5.2:cloud"]
    assert result["quorum"] == "1/2"


async def test_configure_tools_persist_normalized_choices() -> None:
    settings = {"hub": False}
    ollama = await call("configure_ollama_council",
                        {"models": ["minimax-m3", "ollama:glm-5.2", "gpt-oss:120b-cloud"],
                         "default_model": "qwen3-coder:480b-cloud"}, settings)
    atlas = await call("configure_atlas_council", {"models": ["atlas:zai-org/glm-5.2", "xai/grok-4.6"],
                                                   "synthesizer": "openai/gpt-5.6-sol"}, settings)
    gpt = await call("configure_atlas_council", {"models": ["xai/grok-4.6"], "synthesizer": "gpt"}, settings)
    router = await call("configure_openrouter_council",
                        {"models": ["openrouter:qwen/qwen3-coder"], "synthesizer": "opus5", "effort": "Deep"},
                        settings)
    assert ollama["ollama_council"] == ["minimax-m3:cloud", "glm-5.2:cloud", "gpt-oss:120b-cloud"]
    assert atlas["atlas_synthesizer"] == "atlas:openai/gpt-5.6-sol"
    assert gpt["atlas_synthesizer"] == "codex"
    assert router["openrouter_synthesizer"] == "opus" and router["openrouter_effort"] == "deep"
    saved = read_config_file()
    assert saved["ollama_model"] == "qwen3-coder:480b-cloud"
    assert saved["atlas_council"] == ["xai/grok-4.6"]
    fresh = load_settings()
    ollama = fresh.section("ollama", OllamaSettings)
    assert ollama.council == ["minimax-m3:cloud", "glm-5.2:cloud", "gpt-oss:120b-cloud"]
    assert fresh.section("openrouter", OpenRouterSettings).council == ["qwen/qwen3-coder"]


async def test_config_file_overrides_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_OLLAMA_COUNCIL", "from-env:cloud")
    await call("configure_ollama_council", {"models": ["from-file"]}, {"hub": False})
    assert load_settings().section("ollama", OllamaSettings).council == ["from-file:cloud"]


async def test_configure_rejects_bad_input() -> None:
    empty = await call("configure_ollama_council", {"models": [" "]}, {"hub": False})
    group = await call("configure_atlas_council", {"models": ["a/b"], "synthesizer": "twins"}, {"hub": False})
    effort = await call("configure_openrouter_council", {"models": ["a/b"], "effort": "max"}, {"hub": False})
    assert empty["kind"] == group["kind"] == effort["kind"] == "bad_args"
    assert read_config_file() == {}


async def test_listing_declares_families_annotations_and_schemas() -> None:
    async with Client(build_server(App(load_settings()), toolsets=["all"]), mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("ask_council", "ask_chain", "ask_debate", "ask_ollama_council", "ask_atlas_council",
                 "ask_openrouter_council", "configure_ollama_council", "configure_atlas_council",
                 "configure_openrouter_council"):
        assert tools[name].output_schema is not None
    assert tools["ask_council"].annotations.read_only_hint is True
    assert tools["configure_atlas_council"].annotations.read_only_hint is False
    roles = {"proposer", "opponent", "adjudicator", "rounds"}
    assert set(tools["ask_debate"].input_schema["properties"]) >= roles


async def test_openrouter_council_uses_the_configured_panel_and_gpt_adjudicator(
    fp: FakeProvider,
) -> None:
    fp.enqueue("openai", text=answer("Ruling by GPT.", "reject"), match="openai/gpt-5.6-sol")
    settings = http_settings(fp, openrouter_api_key=KEY, openrouter_base_url=f"{fp.base_url}/api/v1",
                             openrouter_council=["qwen/qwen3-coder", "openrouter:z-ai/glm-5.2"])
    result = await call("ask_openrouter_council", {"question": "Which index?"}, settings)
    assert result["status"] == "ok", result
    members = ["openrouter:qwen/qwen3-coder", "openrouter:z-ai/glm-5.2"]
    assert [s["token"] for s in result["sources"]] == members
    assert result["synthesizer"] == "openrouter:openai/gpt-5.6-sol"
    assert result["answer"] == "Ruling by GPT."
    models = [r.json["model"] for r in fp.requests_for("openai")]
    assert sorted(models[:2]) == ["qwen/qwen3-coder", "z-ai/glm-5.2"] and models[2] == "openai/gpt-5.6-sol"


async def test_openrouter_council_notes_the_built_in_panel_when_the_catalog_is_unreachable(
    fp: FakeProvider,
) -> None:
    fp.set_json("GET", "/api/v1/models", {"error": "down"}, status=503)
    fp.enqueue("openai", text=answer("Ruling by GPT.", "apply"), match="openai/gpt-5.6-sol")
    settings = http_settings(fp, openrouter_api_key=KEY, openrouter_base_url=f"{fp.base_url}/api/v1")
    result = await call("ask_openrouter_council", {"question": "Which index?"}, settings)
    assert result["status"] == "ok", result
    assert [s["token"] for s in result["sources"]] == [
        "openrouter:deepseek/deepseek-v4-pro", "openrouter:z-ai/glm-5.2", "openrouter:qwen/qwen3-coder"]
    assert "catalog could not be reached" in result["note"] and "built-in panel" in result["note"]


async def test_configure_openrouter_effort_accepts_what_normalize_effort_accepts() -> None:
    high = await call("configure_openrouter_council", {"models": ["a/b"], "effort": "High"}, {"hub": False})
    assert high["openrouter_effort"] == "deep"
    low = await call("configure_openrouter_council", {"models": ["a/b"], "effort": "low"}, {"hub": False})
    assert low["openrouter_effort"] == "quick"
    assert load_settings().section("openrouter", OpenRouterSettings).effort == "quick"
