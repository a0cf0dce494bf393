"""``ask-fable login`` runs the Claude Code login ask-fable itself uses and says where the login is kept;
``ask-fable claude …`` runs that Claude Code with any arguments. Both through the installed command,
on a PATH with no global ``claude``."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.fake_cli import install_fake_clis
from tests.fakes.fixtures import bundled_claude_cli

STATUS_IN = {"loggedIn": True, "authMethod": "claude.ai", "apiProvider": "firstParty"}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    return run_in_process(args, env)


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process: the Claude Code it runs attached writes to
    the same stdout and stderr, as to the user's terminal."""
    return subprocess.run([*ask_fable_command(), *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, check=False)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    config = tmp_path / "claude-config"
    config.mkdir(exist_ok=True)
    env = child_env(PATH="/usr/bin:/bin", CLAUDE_CONFIG_DIR=str(config), **extra)
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def test_login_runs_the_claude_code_login_then_says_where_the_login_is_kept(tmp_path: Path) -> None:
    clis = install_fake_clis(tmp_path / "bin", ["claude"])
    config = tmp_path / "claude-config"
    clis.behave("claude", by_argv={
        "auth login": {"answer": "Opening the browser to sign in…\nLogin successful.\n"},
        "auth status": {"answer": json.dumps({**STATUS_IN, "configDirectory": str(config)})},
    })
    env = _env(tmp_path, ASK_FABLE_CLAUDE_CLI=str(clis.bin_dir / "claude"))

    done = _spawn(["login", "--console"], env)

    assert done.returncode == 0, done.stderr
    assert [call["argv"] for call in clis.calls("claude")] == [["auth", "login", "--console"],
                                                                ["auth", "status", "--json"]]
    assert "Login successful." in done.stdout, "the login talks to the user's terminal directly"
    assert f"kept in {config / '.credentials.json'}" in done.stdout
    assert "ASK_FABLE_CLAUDE_CLI" not in clis.calls("claude")[0]["env_names"]


def test_a_login_that_fails_or_finds_nothing_says_what_to_run(tmp_path: Path) -> None:
    clis = install_fake_clis(tmp_path / "bin", ["claude"])
    env = _env(tmp_path, ASK_FABLE_CLAUDE_CLI=str(clis.bin_dir / "claude"))
    clis.behave("claude", by_argv={"auth login": {"exit_code": 1, "stderr": "OAuth error: access denied\n"}})

    failed = _spawn(["login"], env)

    assert failed.returncode == 1
    assert "OAuth error: access denied" in failed.stderr
    assert "run `ask-fable login` again" in failed.stderr and "Traceback" not in failed.stderr

    not_in = {"answer": json.dumps({"loggedIn": False}), "exit_code": 1}
    clis.behave("claude", by_argv={"auth status": not_in})
    none = _run(["login", "--status"], env)
    assert none.returncode == 1
    assert "no Claude login found" in none.stderr and "run `ask-fable login`" in none.stderr


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no Claude Code CLI here")
def test_status_asks_the_bundled_claude_code_with_no_claude_on_path(tmp_path: Path) -> None:
    """Without ASK_FABLE_CLAUDE_CLI and without a global ``claude``, the Claude Code inside the
    install answers, and names the directory the servers will read the login from."""
    env = _env(tmp_path)

    done = _run(["login", "--status"], env)

    assert done.returncode == 1
    expected = tmp_path / "claude-config" / ".credentials.json"
    assert f"no Claude login found (looked in {expected})" in done.stderr


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no Claude Code CLI here")
def test_ask_fable_claude_runs_the_bundled_claude_code_with_its_own_flags(tmp_path: Path) -> None:
    env = _env(tmp_path)

    done = _spawn(["claude", "auth", "status", "--text"], env)
    version = _spawn(["claude", "--version"], env)

    assert "Not logged in" in done.stdout + done.stderr and done.returncode == 1
    assert version.returncode == 0 and "Claude Code" in version.stdout


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no Claude Code CLI here")
def test_doctor_names_commands_that_run_as_printed(tmp_path: Path) -> None:
    """On a fresh machine with no login and no global ``claude``, doctor's Claude steps name
    ``ask-fable login``, and every ``ask-fable …`` it names is a command the installed program runs."""
    env = _env(tmp_path)

    doctor = _run(["doctor", "--timeout", "2"], env)

    assert doctor.returncode == 0, doctor.stderr
    claude_steps = [line for line in doctor.stdout.splitlines() if "ANTHROPIC_API_KEY" in line]
    assert claude_steps and all("run `ask-fable login`" in line for line in claude_steps)
    assert "`claude`" not in doctor.stdout and "/login" not in doctor.stdout
    named = set(re.findall(r"`ask-fable ([a-z][a-z -]*)`", doctor.stdout))
    assert "login" in named
    for command in sorted(named):
        shown = _run([*command.split(), "--help"], env)
        assert shown.returncode == 0, f"`ask-fable {command}` does not run: {shown.stderr}"
