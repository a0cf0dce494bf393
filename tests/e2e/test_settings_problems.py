"""Settings a user got wrong never stop ``ask-fable``: each is reported and falls back, over stdio."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.e2e.helpers import TEST_KEY, ask_fable_command, child_env, run_in_process
from tests.fakes.fake_provider import FakeProvider
from tests.spec_tools import ALL_SPEC_TOOLS

SECRET = "sk-live-abcdefghijklmnopqrstuvwx0123"


@asynccontextmanager
async def served(errlog: IO[str], *args: str, **env: str) -> AsyncIterator[Client]:
    """The installed ``ask-fable`` over stdio (legacy handshake), its stderr going to ``errlog``."""
    command, *rest = ask_fable_command()
    params = StdioServerParameters(command=command, args=[*rest, *args], env=child_env(**env))
    with anyio.fail_after(60):
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            yield client


async def call(client: Client, tool: str, arguments: dict) -> dict:
    """A tool's structured result."""
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return result.structured_content


def stderr_lines(errlog: IO[str]) -> list[str]:
    """What the server wrote on stderr."""
    errlog.flush()
    return Path(errlog.name).read_text().splitlines()


async def test_a_bad_environment_value_falls_back_and_is_reported_where_it_matters(
    fp: FakeProvider, tmp_path: Path
) -> None:
    """ASK_FABLE_TIMEOUT=abc: the server starts, says so first on stderr and in its instructions,
    and warns on the calls that use the timeout (a model call), not on those that do not (help)."""
    with open(tmp_path / "stderr.txt", "w+") as errlog:
        async with served(errlog, "--toolsets", "default,single", ASK_FABLE_TIMEOUT="abc",
                          ASK_FABLE_GLM_API_KEY=TEST_KEY,
                          ASK_FABLE_GLM_BASE_URL=fp.base_url) as client:
            instructions = client.instructions or ""
            answered = await call(client, "ask_glm", {"question": "Is the retry loop bounded?"})
            helped = await call(client, "ask_fable_help", {"topic": "modes"})
        lines = stderr_lines(errlog)
    expected = "timeout from ASK_FABLE_TIMEOUT: 'abc' is not valid"
    assert expected in instructions and "using the default (240)" in instructions
    assert lines[0].startswith(f"ask-fable: settings problem: {expected}")
    assert answered["status"] == "ok"
    assert [w for w in answered["warnings"] if expected in w and "using the default (240)" in w]
    assert helped["status"] == "ok" and "warnings" not in helped


async def test_a_config_file_with_a_trailing_comma_is_reported_on_every_call(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"timeout": 30,}\n')
    with open(tmp_path / "stderr.txt", "w+") as errlog:
        async with served(errlog, ASK_FABLE_CONFIG_FILE=str(config)) as client:
            instructions = client.instructions or ""
            helped = await call(client, "ask_fable_help", {"topic": "modes"})
        lines = stderr_lines(errlog)
    problem = f"config file {config}: is not valid JSON"
    assert problem in instructions
    assert lines[0].startswith(f"ask-fable: settings problem: {problem}")
    assert helped["status"] == "ok"
    assert [w for w in helped["warnings"] if problem in w and "none of its settings apply" in w]


async def test_a_misspelled_key_is_reported_with_the_setting_it_probably_meant(tmp_path: Path) -> None:
    """deepseek_api_kye: named with its did-you-mean, in the warnings and the detail of the DeepSeek
    call it leaves unconfigured; the key's value is never echoed."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"deepseek_api_kye": SECRET}))
    with open(tmp_path / "stderr.txt", "w+") as errlog:
        async with served(errlog, "--toolsets", "default,single",
                          ASK_FABLE_CONFIG_FILE=str(config)) as client:
            instructions = client.instructions or ""
            asked = await call(client, "ask_deepseek", {"question": "Is this index partial?"})
        stderr = Path(errlog.name).read_text()
    hint = "unknown setting 'deepseek_api_kye' (did you mean 'deepseek_api_key'?)"
    assert hint in instructions and hint in stderr.splitlines()[0]
    assert asked["kind"] == "not_configured"
    assert any(hint in warning for warning in asked["warnings"])
    assert hint in asked["detail"]
    assert SECRET not in instructions + stderr + json.dumps(asked)


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    return run_in_process(args, child_env(**env))


def _spawn(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process."""
    return subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=child_env(**env))


def test_every_command_starts_with_a_bad_setting() -> None:
    for args in (["doctor", "--no-probe"], ["tools"], ["keys", "list"], ["help", "--topic", "modes"]):
        done = _run(*args, ASK_FABLE_TIMEOUT="abc")
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr and "ValidationError" not in done.stderr
    assert "ASK_FABLE_TIMEOUT" in _run("doctor", "--no-probe", ASK_FABLE_TIMEOUT="abc").stdout
    helped = _run("help", "--topic", "modes", ASK_FABLE_TIMEOUT="abc")
    first = helped.stderr.splitlines()[0]
    assert first.startswith("ask-fable: settings problem: timeout from ASK_FABLE_TIMEOUT")


def test_doctor_reports_a_bad_secret_without_printing_it(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"deepseek_api_key": [SECRET], "max_parallel": 0}))
    done = _run("doctor", "--no-probe", "--json", ASK_FABLE_CONFIG_FILE=str(config))
    assert done.returncode == 0, done.stderr
    problems = {p["setting"]: p for p in json.loads(done.stdout)["settings_problems"]}
    assert problems["deepseek_api_key"]["source"] == f"config file {config}"
    assert "not shown" in problems["deepseek_api_key"]["problem"]
    assert problems["max_parallel"]["using"] == "using the default (16)"
    assert SECRET not in done.stdout + done.stderr
    text = _run("doctor", "--no-probe", ASK_FABLE_CONFIG_FILE=str(config))
    assert "deepseek_api_key from config file" in text.stdout and SECRET not in text.stdout + text.stderr


async def test_help_names_what_is_served_and_the_toolset_of_every_other_tool(tmp_path: Path) -> None:
    """The default server's help lists exactly the served tools; every other tool comes with the
    exact option that serves it, and calling one says the same instead of a bare unknown_tool."""
    with open(tmp_path / "stderr.txt", "w+") as errlog:
        async with served(errlog) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            helped = await call(client, "ask_fable_help", {"topic": "tools"})
            hidden = await call(client, "context_write", {"key": "k", "value": "v"})
    named = {line.split(" — ")[0] for lines in helped["tools"].values() for line in lines}
    assert named == listed and len(listed) == 6
    others = {other["toolset"]: other for other in helped["other_toolsets"]}
    assert listed.isdisjoint(name for other in others.values() for name in other["tools"])
    assert len(listed) + sum(len(other["tools"]) for other in others.values()) == len(ALL_SPEC_TOOLS)
    assert others["context"]["flag"] == "--toolsets default,context"
    assert others["context"]["env"] == "ASK_FABLE_TOOLSETS=default,context"
    assert "context_write" in others["context"]["tools"]
    assert "--toolsets default,context" in helped["text"]
    assert hidden["status"] == "error" and hidden["kind"] == "unknown_tool"
    assert "'context' toolset" in hidden["detail"]
    assert "--toolsets default,context" in hidden["hint"]
    assert "ASK_FABLE_TOOLSETS=default,context" in hidden["hint"]
    assert hidden["trace_id"]


async def test_removals_alone_start_from_default(tmp_path: Path) -> None:
    with open(tmp_path / "stderr.txt", "w+") as errlog:
        async with served(errlog, "--toolsets=-context") as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
    assert listed == {"ask", "ask_council", "ask_chain", "ask_debate", "ask_fable_help", "reset_session"}


def test_toolsets_that_leave_no_tool_are_an_error_at_start() -> None:
    done = _spawn("--toolsets=-core")
    assert done.returncode == 2
    assert "'-core' leave no tool to serve" in done.stderr and "'default'" in done.stderr
