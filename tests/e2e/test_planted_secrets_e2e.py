"""Planted keys, end to end: full trace mode, saved answers and raw audit on, then zero hits anywhere.

A configured key (``ASK_FABLE_GLM_API_KEY``) and key-shaped strings (an Anthropic key, an ask-fable
API key) travel through prompts, context, the context bus, a packed file, model answers and
reasoning, a provider error body and provider response headers, and are used as context key names,
session labels and filters. Afterwards every file under HOME (state, config and whatever else was
written there; names and bytes), every tool result and the server's stderr are searched for them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.resources import Resources
from ask_fable.config import config_file_path, state_dir
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.fakes.fake_provider import FakeProvider

CONFIGURED = "glmPLANTEDconfiguredKey9f8e7d6c5b4a"
OTHER = "dsPLANTEDotherKey1a2b3c4d5e6f"
SHAPED = "sk-ant-api03-PLANTEDshaped0123456789abcdefXYZ"
API_KEY = "afk_PLANTEDapiKey0123456789abcdefghijklmnop"
NEEDLES = [CONFIGURED, OTHER, SHAPED, API_KEY]
#: Pieces that would survive a lower-casing or slugging of the keys (file names are slugs).
FRAGMENTS = ["plantedconfiguredkey", "plantedotherkey", "plantedshaped", "plantedapikey"]
SIDECAR = '```sidecar\n{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```'



#: Quick retries for the server under test.
FAST = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02)


def _leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [n for n in NEEDLES if n in text] + [f for f in FRAGMENTS if f in lowered]


@dataclass
class Run:
    """What one scenario produced: every tool result by tool name, and the server's stderr."""

    results: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stderr: str = ""


async def _scenario(fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                    capfd: pytest.CaptureFixture[str], *, label: str = "rotation-plan") -> Run:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "settings.py").write_text(f'GLM_KEY = "{CONFIGURED}"\nANTHROPIC = "{SHAPED}"\n')
    env = {
        "ASK_FABLE_GLM_API_KEY": CONFIGURED, "ASK_FABLE_GLM_BASE_URL": fp.base_url,
        "ASK_FABLE_DEEPSEEK_API_KEY": OTHER, "ASK_FABLE_DEEPSEEK_BASE_URL": fp.base_url,
        "ASK_FABLE_TRACE_MODE": "full", "ASK_FABLE_SAVE": "1", "ASK_FABLE_AUDIT_RAW": "1",
        "ASK_FABLE_RETURN_THINKING": "1", "ASK_FABLE_PROJECT_ROOT": str(project), "ASK_FABLE_QUIET": "0",
        "ASK_FABLE_TIMEOUT": "10", "ASK_FABLE_AGENT_ID": "leak-test",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capfd.readouterr()

    run = Run()
    echoed = f"Your key {CONFIGURED} and {SHAPED} and {OTHER} are fine.\n\n{SIDECAR}"
    thinking = f"the user pasted {CONFIGURED}; Authorization: Bearer {SHAPED}"
    async with Client(build_server(App(resources=Resources(retry=FAST)), toolsets=["all"])) as c:
        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await c.call_tool(tool, arguments)
            assert result.structured_content is not None
            texts = [getattr(part, "text", "") for part in result.content]
            run.results.append((tool, {**result.structured_content, "_text": texts}))
            return result.structured_content

        await call("context_write", {"key": "creds", "value": f"token={CONFIGURED}\nx-api-key: {SHAPED}",
                                     "description": f"has {CONFIGURED}"})
        packed = await call("context_pack", {"key": "settings", "paths": ["settings.py"]})
        assert packed["status"] == "ok"
        await call("context_read", {"key": "creds"})
        await call("context_read", {"key": "settings"})
        for secret in (SHAPED, API_KEY, CONFIGURED):  # a secret used as a key name is refused, never echoed
            named = await call("context_write", {"key": secret, "value": "rotation notes"})
            assert (named["status"], named["kind"]) == ("error", "bad_args"), named
            await call("context_read", {"key": secret})
            await call("context_delete", {"key": secret})
        await call("context_list", {})
        for secret in (SHAPED, API_KEY):  # and as session labels and filters
            await call("reset_session", {"session": f"rotate {secret}"})
            await call("trace_list", {"session": f"rotate {secret}"})
            await call("stats", {"session": secret})
            await call("session_peek", {"session_key": secret})

        fp.enqueue("anthropic", text=echoed, thinking=thinking)
        ok = await call("ask_glm", {
            "question": f"Is it safe to log the key {CONFIGURED} and {SHAPED}?",
            "context": f"Authorization: Bearer {CONFIGURED}\nheaders = {{'x-api-key': '{OTHER}'}}",
            "context_ref": ["creds", "settings"],
        })
        assert ok["status"] == "ok", ok

        fp.enqueue("anthropic", status=401, error=f"invalid x-api-key {CONFIGURED} (also {SHAPED})",
                   headers={"x-api-key": CONFIGURED, "x-request-echo": SHAPED})
        failed = await call("ask_glm", {"question": f"Why does {OTHER} get rejected upstream?"})
        assert failed["status"] == "error"

        fp.enqueue("anthropic", status=502, body=f"<html>bad gateway for key {CONFIGURED}</html>".encode(),
                   times=5)
        garbage = await call("ask_glm", {"question": "Why does the gateway fail for this key?"})
        assert garbage["status"] == "error"

        fp.enqueue("anthropic", text=echoed, thinking=thinking, times=3)
        council = await call("ask_council", {"question": f"Rotate {CONFIGURED} now?",
                                             "models": ["glm", "deepseek"], "synthesizer": "glm",
                                             "session": label})
        assert council["status"] == "ok", council

        fp.enqueue("anthropic", text=echoed, thinking=thinking, times=3)
        debate = await call("ask_debate", {"question": f"Should {SHAPED} be rotated today?",
                                           "proposer": "glm", "opponent": "deepseek", "adjudicator": "glm"})
        assert debate["status"] == "ok", debate
        assert Path(debate["saved"]).is_file()

        for result in (ok, failed, garbage, council, debate):
            await call("trace_get", {"trace_id": result["trace_id"], "include_content": True,
                                     "max_chars": 100_000})
        await call("trace_list", {"limit": 50})
        await call("stats", {"by": "session"})
        await call("session_list", {"all_projects": True, "active_only": False})
        await call("session_peek", {"session_key": "ask_glm"})
        await call("session_peek", {"session_key": label})
        await call("session_stats", {"all_projects": True, "window_s": 0})
        await call("configure_tracing", {"trace_mode": "full", "stream_reasoning": True})

    # The planted values did reach the provider, so the scenario exercised real traffic.
    sent = b"".join(r.body for r in fp.requests)
    assert CONFIGURED.encode() in sent and SHAPED.encode() in sent
    assert fp.requests[0].headers.get("x-api-key") == CONFIGURED
    run.stderr = capfd.readouterr().err
    return run


def _file_leaks() -> list[tuple[str, list[str]]]:
    """Every file or directory under HOME (the state and config dirs are in it) whose name or bytes
    hold a key."""
    found: list[tuple[str, list[str]]] = []
    files = 0
    assert state_dir().is_relative_to(Path.home()) and config_file_path().is_relative_to(Path.home())
    for base in (Path.home(),):
        for dirpath, dirnames, filenames in os.walk(base):
            for name in [*dirnames, *filenames]:
                if _leaks(name):
                    found.append((os.path.join(dirpath, name), _leaks(name)))
            for name in filenames:
                data = (Path(dirpath) / name).read_bytes().decode("utf-8", "replace")
                files += 1
                if _leaks(data):
                    found.append((os.path.join(dirpath, name), _leaks(data)))
    assert files >= 10  # context/cache/hub/traces dbs, bundles, answers, audit, config
    return found


#: Tools whose results carry model-written text (answers, sources, reasoning).
ANSWER_TOOLS = {"ask_glm", "ask_council", "ask_debate"}


async def test_no_file_and_no_bus_trace_or_error_result_holds_a_planted_key(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    run = await _scenario(fp, tmp_path, monkeypatch, capfd)
    assert _file_leaks() == []
    assert any(state_dir().joinpath("answers").iterdir())
    assert any(state_dir().joinpath("traces").glob("*.jsonl"))
    for tool, result in run.results:
        if tool in ANSWER_TOOLS and result["status"] != "error":
            continue
        assert not _leaks(json.dumps(result)), (tool, result)
    errors = [r for tool, r in run.results if tool in ANSWER_TOOLS and r["status"] == "error"]
    assert len(errors) == 2 and all(r["detail"] for r in errors)


async def test_answers_returned_to_the_caller_hold_no_planted_key(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    run = await _scenario(fp, tmp_path, monkeypatch, capfd)
    for tool, result in run.results:
        assert not _leaks(json.dumps(result)), (tool, result)


async def test_console_trace_holds_no_planted_key(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    run = await _scenario(fp, tmp_path, monkeypatch, capfd)
    assert "thinking:" in run.stderr  # reasoning excerpts were printed
    assert not _leaks(run.stderr), _leaks(run.stderr)


async def test_a_key_inside_a_session_label_is_not_stored(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    await _scenario(fp, tmp_path, monkeypatch, capfd, label=f"rotate {SHAPED}")
    assert _file_leaks() == []
