"""doctor / diagnose: every backend's state without a model call, and the step that enables it."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client

from ask_fable.backends.breaker import CircuitBreaker
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.core.doctor import BACKENDS, diagnose, format_report
from ask_fable.surface.server import build_server
from tests.e2e.helpers import ask_fable_command
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis
from tests.fakes.fake_provider import FakeProvider

#: The CLI backends doctor probes, by backend name.
CLI_NAMES = ("minimax", "gemini", "codex", "grok", "kimi")


def _script(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH with a working mmx, a hanging codex (with a child holding its stdout) and a failing kimi."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir, "mmx", 'echo "mmx-cli 1.4.2"')
    _script(bin_dir, "codex", "sleep 60 &\nsleep 60")
    _script(bin_dir, "kimi", 'echo "kimi: broken install" >&2; exit 3')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return bin_dir


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_machine_with_nothing_configured_gets_a_step_for_every_backend(fake_path: Path) -> None:
    settings = load_settings(claude_cli=str(fake_path / "no-such-claude"),
                             ollama_base_url=f"http://127.0.0.1:{_closed_port()}")
    with anyio.fail_after(15):
        report = await diagnose(settings, timeout=1.0)
    by_name = {b.name: b for b in report.backends}
    assert [b.name for b in report.backends] == list(BACKENDS)
    for name in ("fable", "opus", "gemini", "grok", "glm", "deepseek", "atlas", "openrouter", "ollama"):
        backend = by_name[name]
        assert backend.status == "missing", name
        assert backend.enable, name
    assert "ASK_FABLE_GLM_API_KEY" in by_name["glm"].enable
    assert "ASK_FABLE_OPENROUTER_API_KEY" in by_name["openrouter"].enable
    assert "agy" in by_name["gemini"].enable
    assert "ollama signin" in by_name["ollama"].enable
    assert by_name["glm"].model == "glm-5.2" and by_name["glm"].timeout_s == 240
    assert "no-such-claude" in by_name["fable"].detail


async def test_cli_backends_are_probed_with_version_only(fake_path: Path) -> None:
    settings = load_settings(codex_timeout=33)
    with anyio.fail_after(15):
        report = await diagnose(settings, timeout=1.0, only=["minimax", "codex", "kimi"])
    by_name = {b.name: b for b in report.backends}
    assert by_name["minimax"].status == "ready" and by_name["minimax"].version == "mmx-cli 1.4.2"
    assert by_name["codex"].status == "unreachable" and "did not answer" in by_name["codex"].detail
    assert by_name["codex"].timeout_s == 33
    assert by_name["kimi"].status == "unreachable" and "exited 3" in by_name["kimi"].detail


async def test_http_backends_are_probed_without_any_request() -> None:
    with FakeProvider() as fake:
        fake.set_json("GET", "/api/version", {"version": "0.12.1"})
        settings = load_settings(
            glm_api_key="sk-glm-0123456789", glm_base_url=f"{fake.base_url}/api/anthropic",
            deepseek_api_key="sk-ds-0123456789", deepseek_base_url=f"http://127.0.0.1:{_closed_port()}/anthropic",
            ollama_base_url=fake.base_url,
        )
        with anyio.fail_after(15):
            report = await diagnose(settings, timeout=1.0, only=["glm", "deepseek", "ollama"])
        model_requests = [r for r in fake.requests if r.route in ("anthropic", "openai", "ollama")]
    by_name = {b.name: b for b in report.backends}
    assert by_name["glm"].status == "ready"
    assert by_name["deepseek"].status == "unreachable" and by_name["deepseek"].configured
    assert by_name["ollama"].status == "ready" and by_name["ollama"].version == "0.12.1"
    assert model_requests == []
    assert "sk-glm-0123456789" not in json.dumps(report.to_dict())


async def test_an_open_breaker_is_reported() -> None:
    breaker = CircuitBreaker(window=5, threshold=0.5, cooldown=300)
    for _ in range(5):
        breaker.record("glm:glm-5.2", False)  # the key the oracle is tracked by
    settings = load_settings(glm_api_key="sk-glm-0123456789", glm_base_url="http://127.0.0.1:9/x")
    report = await diagnose(settings, breaker=breaker, probe=False, only=["glm", "deepseek"])
    by_name = {b.name: b for b in report.backends}
    assert by_name["glm"].breaker == "open" and by_name["glm"].status == "unreachable"
    assert by_name["deepseek"].breaker == "closed"


async def test_the_report_reads_well() -> None:
    report = await diagnose(load_settings(), probe=False)
    text = format_report(report)
    for name in BACKENDS:
        assert name in text
    assert "→ set ASK_FABLE_DEEPSEEK_API_KEY" in text
    assert "backends ready" in text


async def test_the_diagnose_tool_is_read_only_and_reports_every_backend() -> None:
    server = build_server(App(load_settings()), toolsets=["observability"])
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("diagnose", {"probe": False})
        narrowed = await client.call_tool("diagnose", {"probe": False, "backends": ["glm"]})
        bad = await client.call_tool("diagnose", {"backends": ["gpt-9"]})
    assert tools["diagnose"].annotations.read_only_hint is True
    assert not result.is_error
    payload = result.structured_content
    assert [b["name"] for b in payload["backends"]] == list(BACKENDS)
    assert set(payload["ready"]) | set(payload["missing"]) == set(BACKENDS)
    assert [b["name"] for b in narrowed.structured_content["backends"]] == ["glm"]
    assert bad.is_error and bad.structured_content["kind"] == "bad_args"


#: Secrets in the server's environment that no ``--version`` probe may see.
PLANTED = {
    "ASK_FABLE_GLM_API_KEY": "glm-PLANTED-probe-0123456789",
    "OPENROUTER_API_KEY": "sk-or-PLANTED-probe-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-PLANTED-probe-0123456789",
    "AWS_SECRET_ACCESS_KEY": "aws-PLANTED-probe-0123456789",
    "GITHUB_TOKEN": "ghp-PLANTED-probe-0123456789",
}
PROBED = ("mmx", "agy", "codex", "grok", "kimi", "claude")


@pytest.fixture
def env_dumping_clis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """Every CLI on PATH logs the environment it was started with; the server holds planted secrets."""
    fakes = install_fake_clis(tmp_path / "bin")
    for name in PROBED:
        fakes.behave(name, answer=f"{name} 9.9.9\n", report_env=list(PLANTED))
    monkeypatch.setenv("PATH", f"{fakes.bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ASK_FABLE_GLM_BASE_URL", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("ASK_FABLE_CLAUDE_CLI", str(fakes.bin_dir / "claude"))
    return fakes


def _assert_probes_saw_no_secret(fakes: FakeCLIs) -> None:
    for name in PROBED:
        probes = fakes.calls(name)
        assert probes, f"{name} was never probed"
        for probe in probes:
            assert probe["argv"] == ["--version"], name
            assert not set(PLANTED) & set(probe["env_names"]), (name, probe["env_names"])
            assert set(probe["env_values"].values()) == {None}, name
            assert probe["sid"] == probe["pid"], f"{name} --version ran outside its own process session"


async def test_the_diagnose_tools_version_probes_get_no_secret(env_dumping_clis: FakeCLIs) -> None:
    """diagnose runs each CLI's --version in its own session with the base allow-list only."""
    async with Client(build_server(App(), toolsets=["all"])) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("diagnose", {"probe": True, "backends": ["fable", *CLI_NAMES]})
    payload = result.structured_content
    assert payload["status"] == "ok"
    assert all(b["reachable"] for b in payload["backends"]), payload["backends"]
    _assert_probes_saw_no_secret(env_dumping_clis)


def test_the_doctor_commands_version_probes_get_no_secret(env_dumping_clis: FakeCLIs) -> None:
    """`ask-fable doctor` probes the same way: no key of the server's environment reaches a CLI."""
    done = subprocess.run([*ask_fable_command(), "doctor", "--json", "--timeout", "5"], env=dict(os.environ),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    report = {b["name"]: b for b in json.loads(done.stdout)["backends"]}
    assert all(report[name]["reachable"] for name in ("fable", *CLI_NAMES)), report
    _assert_probes_saw_no_secret(env_dumping_clis)
