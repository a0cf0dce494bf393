"""What the installed ``ask-fable`` command prints in words that fit a shell: a hint or note that
points at another tool names the command that runs it (``ask-fable trace list``, not ``trace_list``),
as ``--json`` keeps the tool's own result; an empty value in a usage error shows as ``''``; an empty
``--tenant`` is named as such."""

from __future__ import annotations

import json
import subprocess

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    done = run_in_process(args, child_env())
    assert "Traceback" not in done.stdout + done.stderr
    return done


def _spawn(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process, its stdin closed."""
    done = subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=child_env())
    assert "Traceback" not in done.stdout + done.stderr
    return done


def test_a_hint_names_the_command_that_runs_the_tool_it_points_at() -> None:
    trace = _spawn("trace", "get", "nope")
    context = _run("context", "read", "nope")
    peek = _run("session", "peek", "nope")
    assert trace.returncode == 1 and "hint: `ask-fable trace list` shows the stored traces" in trace.stderr
    assert "hint: `ask-fable context list` shows the stored keys" in context.stderr
    assert "`ask-fable session list` shows the known ones" in peek.stdout
    for done in (trace, context, peek):
        assert "trace_list" not in done.stdout + done.stderr and "context_list" not in done.stderr
        assert "session_list" not in done.stdout
    missing = _run("ask", "How should the orders table be sharded?", "--context-ref", "nope")
    assert missing.returncode == 0 and "Store the material with `ask-fable context write`" in missing.stdout
    raw = json.loads(_run("trace", "get", "nope", "--json").stdout)
    assert raw["hint"] == "trace_list shows the stored traces"


def test_an_empty_value_in_a_usage_error_is_shown_as_empty_quotes() -> None:
    done = _run("ask", "Why is the cache cold?", "--session", "")
    assert done.returncode == 2
    assert "ask-fable: --session '': String should have at least 1 character" in done.stderr
    paths = _run("context", "pack", "k", "--paths", ",")
    assert paths.returncode == 2 and "ask-fable: --paths ,: List should have at least 1 item" in paths.stderr


def test_an_empty_tenant_for_a_new_key_is_named_as_empty() -> None:
    done = _run("keys", "create", "--name", "ci bot", "--tenant", " ")
    assert done.returncode == 2 and done.stdout == ""
    assert "ask-fable: --tenant is empty: give a tenant name, or leave --tenant out" in done.stderr


def test_a_trace_status_no_result_has_is_a_usage_error_listing_the_statuses() -> None:
    """Before, ``trace list --status weird`` listed nothing and said nothing of why."""
    done = _run("trace", "list", "--status", "weird")
    assert done.returncode == 2 and done.stdout == ""
    assert "argument --status: invalid choice: 'weird' (choose from 'ok', 'refused', 'error'" in done.stderr
    assert _run("trace", "list", "--status", "refused").returncode == 0
