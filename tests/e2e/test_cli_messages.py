"""What the installed command says when something is off: a settings problem once and only where it
may be the cause, text piped into the stdio server, a pipeline written with arrows, near misses of
commands, flags and model tokens, an unreachable provider, the team server's root, ``trace list``
rows, and the README's description of an error, which is what the command prints."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import httpx2

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.reliability.http_server import http_server

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Why does this LRU cache evict entries before their TTL?"
BAD_TIMEOUT = "'abc' is not valid"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    return run_in_process(args, child_env(**{"ASK_FABLE_QUIET": "0", **env}))


def _spawn(*args: str, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process, ``stdin`` piped into it."""
    return subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=120,
                          input=stdin, env=child_env(**{"ASK_FABLE_QUIET": "0", **env}))


def test_an_unrelated_settings_problem_is_said_once_and_kept_out_of_the_error() -> None:
    """ASK_FABLE_TIMEOUT=abc does not explain a missing DeepSeek key: one stderr line says it, the
    error's detail does not, and --json keeps it in warnings only."""
    text = _run("ask", QUESTION, "--model", "deepseek", ASK_FABLE_TIMEOUT="abc")
    assert text.returncode == 1
    assert (text.stdout + text.stderr).count(BAD_TIMEOUT) == 1, text.stderr
    first = text.stderr.splitlines()[0]
    assert first.startswith("ask-fable: settings problem: timeout from ASK_FABLE_TIMEOUT")

    as_json = _run("ask", QUESTION, "--model", "deepseek", "--json", ASK_FABLE_TIMEOUT="abc")
    result = json.loads(as_json.stdout)
    assert result["kind"] == "not_configured" and "settings problem" not in result["detail"]
    assert [w for w in result["warnings"] if BAD_TIMEOUT in w] and len(result["warnings"]) == 1


def test_text_piped_into_the_stdio_server_is_not_a_silent_success() -> None:
    done = _spawn(stdin="hello\n")
    assert done.returncode == 2
    assert "stdin held no MCP message (it began 'hello')" in done.stderr
    assert 'ask-fable ask "<question>"' in done.stderr and done.stdout == ""


def test_a_pipeline_with_arrows_says_stages_are_separated_by_gt() -> None:
    done = _run("chain", QUESTION, "--pipeline", "m3 -> fable")
    assert done.returncode == 1
    assert "stages are separated by '>' (e.g. 'm3 > fable')" in done.stderr


def test_near_misses_of_commands_flags_and_model_tokens_get_a_did_you_mean() -> None:
    command = _run("counsil", QUESTION)
    assert command.returncode == 2 and "did you mean 'council'?" in command.stderr
    action = _run("trace", "lst")
    assert action.returncode == 2 and "did you mean 'list'?" in action.stderr
    flag = _run("ask", QUESTION, "--contxt-file", "cache.py")
    assert flag.returncode == 2 and "--contxt-file: did you mean --context-file?" in flag.stderr
    model = _run("ask", QUESTION, "--model", "fabel")
    assert model.returncode == 1 and "unknown model token 'fabel' (did you mean 'fable'?)" in model.stderr
    member = _run("council", QUESTION, "--models", "deepseak,glm")
    assert "unknown model token 'deepseak' (did you mean 'deepseek'?)" in member.stderr


def test_a_provider_that_cannot_be_reached_names_the_host_and_port_and_what_to_check() -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = _run("ask", QUESTION, "--model", "openrouter:qwen/qwen3-coder", "--json",
                ASK_FABLE_OPENROUTER_API_KEY="or-test-key-0123456789",
                ASK_FABLE_OPENROUTER_BASE_URL=f"http://127.0.0.1:{port}/api/v1")
    result = json.loads(done.stdout)
    assert result["kind"] == "upstream_error", result
    assert f"connection failed (ConnectError; tried 127.0.0.1:{port})" in result["detail"]
    assert f"reaches 127.0.0.1:{port}" in result["hint"] and "ask-fable doctor" in result["hint"]


def test_the_team_servers_root_says_where_mcp_the_web_view_and_health_are(tmp_path: Path) -> None:
    with http_server(child_env(), tmp_path / "stderr.txt") as server:
        root = httpx2.get(f"{server.url}/", timeout=10)
    assert root.status_code == 200 and root.headers["content-type"].startswith("text/plain")
    for path in ("/mcp", "/ui", "/healthz"):
        assert f"  {path} " in root.text


def test_trace_list_leaves_out_its_own_lookups_and_keeps_status_and_elapsed_in_every_row() -> None:
    env = {"XDG_STATE_HOME": child_env()["XDG_STATE_HOME"]}
    assert _run("ask", QUESTION, "--model", "deepseek", **env).returncode == 1
    _run("trace", "list", **env)
    listed = _run("trace", "list", **env)
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if line.startswith("  - ")]
    assert rows and "tool=ask," in rows[0], listed.stdout
    assert all(re.search(r"status=\w+.*elapsed_ms=", row) for row in rows), rows
    lookups = json.loads(_run("trace", "list", "--tool", "trace_list", "--json", **env).stdout)
    assert lookups["count"] >= 2


def test_the_readme_describes_errors_as_the_command_prints_them() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    guide = " ".join((ROOT / "docs" / "GUIDE.md").read_text(encoding="utf-8").split())
    said = "its first line is `error [<kind>]: <detail>`"
    assert said in readme and said in guide
    tool_error = _run("ask", QUESTION, "--model", "deepseek", ASK_FABLE_QUIET="1")
    assert re.match(r"error \[not_configured\]: ", tool_error.stderr)
    assert re.search(r"^trace_id: \w+$", tool_error.stderr, re.MULTILINE)
    assert re.search(r"^hint: ", tool_error.stderr, re.MULTILINE)
    own = ("a failure of the command itself (a file it cannot read, a bug of ours) is one line starting "
           "`ask-fable:`")
    assert own in readme and own in guide
    unreadable = _run("ask", QUESTION, "--context-file", "/nonexistent/cache.py", ASK_FABLE_QUIET="1")
    assert unreadable.stderr.count("\n") == 1 and unreadable.stderr.startswith("ask-fable:")
