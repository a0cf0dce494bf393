"""Conversations from the installed ``ask-fable`` command: each command is a process of its own, yet a
``--session`` carries over to the next one (its turns are stored), and the help says so; clearing a
session that does not exist names the ones that do, in words that fit the command line."""

from __future__ import annotations

import json
import subprocess

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.fake_provider import FakeProvider

SIDECAR = '\n\n```sidecar\n{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```'


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    done = run_in_process(args, env or child_env())
    assert "Traceback" not in done.stderr
    return done


def _spawn(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The installed command started as a process of its own, as each command a user runs is."""
    done = subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=env)
    assert "Traceback" not in done.stderr
    return done


def test_a_session_carries_over_from_one_command_to_the_next_as_the_help_says() -> None:
    with FakeProvider() as fake:
        fake.enqueue("anthropic", text="Cap retries at three." + SIDECAR, times=2)
        env = child_env(ASK_FABLE_GLM_API_KEY="sk-glm-0123456789", ASK_FABLE_CACHE="0",
                        ASK_FABLE_GLM_BASE_URL=f"{fake.base_url}/api/anthropic")
        first = _run("ask", "How many retries for the payment call?", "--model", "glm", "--session", "retry",
                     env=env)
        second = _spawn("ask", "And the backoff?", "--model", "glm", "--session", "retry", env=env)
        sent = fake.last_json("anthropic")
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert "How many retries for the payment call?" in json.dumps(sent)
    for command in (["ask"], ["opus5"], ["reset-session"]):
        helped = _run(*command, "--help").stdout
        assert "does not carry over" not in helped and "follow-ups need the MCP server" not in helped
        assert "carries over" in " ".join(helped.split()), command


def test_clearing_an_unknown_session_lists_the_stored_ones_or_says_there_are_none() -> None:
    with FakeProvider() as fake:
        fake.enqueue("anthropic", text="Use a lease." + SIDECAR)
        env = child_env(ASK_FABLE_GLM_API_KEY="sk-glm-0123456789", ASK_FABLE_CACHE="0",
                        ASK_FABLE_GLM_BASE_URL=f"{fake.base_url}/api/anthropic")
        none = _run("reset-session", "--model", "glm", "--session", "nope", env=env)
        assert _run("ask", "Lease or lock?", "--model", "glm", "--session", "locks", env=env).returncode == 0
        some = _run("reset-session", "--model", "glm", "--session", "nope", env=env)
    assert none.returncode == 0 and some.returncode == 0
    assert "no stored glm conversation is named 'nope'" in none.stdout
    assert "there are no stored glm conversations" in none.stdout
    assert "sessions: locks" in some.stdout or 'sessions: ["locks"]' in some.stdout
    assert "stored glm conversations are listed in sessions" in some.stdout


def test_a_blank_session_to_clear_is_refused_rather_than_clearing_the_default_one() -> None:
    """``reset-session --session "$S"`` with S set to spaces must not clear the ``default`` conversation
    (as ``ask`` reads a blank session): nothing is cleared, and the usage error says what to give. Over
    MCP the same arguments are bad_args."""
    with FakeProvider() as fake:
        fake.enqueue("anthropic", text="Use a lease." + SIDECAR, times=2)
        env = child_env(ASK_FABLE_GLM_API_KEY="sk-glm-0123456789", ASK_FABLE_CACHE="0",
                        ASK_FABLE_GLM_BASE_URL=f"{fake.base_url}/api/anthropic")
        assert _run("ask", "Lease or lock?", "--model", "glm", env=env).returncode == 0
        blank = _run("reset-session", "--model", "glm", "--session", "   ", env=env)
        assert _run("ask", "And the expiry?", "--model", "glm", env=env).returncode == 0
        sent = fake.last_json("anthropic")
    assert blank.returncode == 2 and blank.stdout == ""
    assert "ask-fable: --session '   ': session is blank: name the conversation to clear" in blank.stderr
    assert "Lease or lock?" in json.dumps(sent)  # the default conversation is still there


async def test_over_mcp_a_blank_session_to_clear_is_bad_args() -> None:
    from mcp import Client

    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server
    from tests.e2e.helpers import structured

    app = App()
    try:
        async with Client(build_server(app)) as client:
            result = await structured(client, "reset_session", {"session": " \t"})
    finally:
        await app.aclose()
    assert (result["status"], result["kind"]) == ("error", "bad_args")
    assert "session is blank" in result["detail"]
