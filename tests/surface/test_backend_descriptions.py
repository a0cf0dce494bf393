"""Tool descriptions name each backend as it is configured now, from its one descriptor."""

from __future__ import annotations

import json
import subprocess

import pytest
from mcp import Client

from ask_fable.backends.registry import get_backend, registered
from ask_fable.config import config_file_path, load_settings
from ask_fable.core.app import App
from ask_fable.surface.registry import all_tools
from ask_fable.surface.server import build_server
from tests.e2e.helpers import ask_fable_command, child_env


async def _descriptions(app: App) -> dict[str, str]:
    server = build_server(app, toolsets=["all"])
    async with Client(server) as client:
        return {tool.name: tool.description or "" for tool in (await client.list_tools()).tools}


async def test_a_changed_model_setting_shows_in_the_tool_descriptions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASK_FABLE_GLM_MODEL", "glm-9-air")
    monkeypatch.setenv("ASK_FABLE_MINIMAX_MODEL", "MiniMax-M9")
    monkeypatch.setenv("ASK_FABLE_OPUS_MODEL", "claude-opus-9")
    monkeypatch.setenv("ASK_FABLE_ATLAS_MODEL", "qwen/qwen9")
    described = await _descriptions(App(load_settings()))
    assert "GLM (glm-9-air)" in described["ask_glm"] and "glm-5.2" not in described["ask_glm"]
    assert "MiniMax (MiniMax-M9)" in described["ask_m3"]
    assert "(claude-opus-9)" in described["ask_opus5"]
    assert "default qwen/qwen9" in described["ask_atlas"]
    assert "ASK_FABLE_ATLAS_API_KEY or ATLASCLOUD_API_KEY" in described["ask_atlas"]


async def test_a_config_file_change_shows_on_the_next_listing() -> None:
    path = config_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"deepseek_model": "deepseek-a"}), encoding="utf-8")
    server = build_server(App(), toolsets=["single"])
    async with Client(server) as client:
        before = {tool.name: tool.description for tool in (await client.list_tools()).tools}
        path.write_text(json.dumps({"deepseek_model": "deepseek-bb"}), encoding="utf-8")
        after = {tool.name: tool.description for tool in (await client.list_tools()).tools}
    assert "(deepseek-a)" in (before["ask_deepseek"] or "")
    assert "(deepseek-bb)" in (after["ask_deepseek"] or "")


def test_the_shell_commands_help_names_the_configured_model() -> None:
    done = subprocess.run([*ask_fable_command(), "glm", "--help"], capture_output=True, text=True, timeout=60,
                          env=child_env(ASK_FABLE_GLM_MODEL="glm-9-air"), check=False)
    assert done.returncode == 0, done.stderr
    assert "glm-9-air" in done.stdout


def test_each_single_model_tool_and_its_backend_name_each_other() -> None:
    """A tool that asks one backend is listed in that backend's descriptor, and the other way round."""
    tools = {spec.name: spec for spec in all_tools()}
    for spec in tools.values():
        if spec.backend is not None:
            assert spec.name in get_backend(spec.backend).tool_names, spec.name
    for backend in registered():
        for name in backend.tool_names:
            assert name in tools, f"{backend.name} names the unknown tool {name}"
        asks = [name for name in backend.tool_names if tools[name].family == "single" or name == "ask"]
        assert all(tools[name].backend == backend.name for name in asks), backend.name
