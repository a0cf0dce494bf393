"""The installed ``ask-fable`` command on the edges a new user meets: a state directory it cannot use,
odd option values. One clear line and a non-zero exit where it cannot proceed, never a traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import ask_fable_command, child_env


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=child_env(**env))


#: Commands that need the stores, and so cannot proceed without a usable state directory.
NEEDS_STORES = [
    ["keys", "list"],
    ["keys", "create", "--name", "alice"],
    ["db", "upgrade"],
    ["trace", "list"],
    ["context", "list"],
]


@pytest.mark.parametrize("args", NEEDS_STORES, ids=[" ".join(a) for a in NEEDS_STORES])
def test_a_state_directory_that_cannot_be_used_is_one_clear_line(args: list[str], tmp_path: Path) -> None:
    """XDG_STATE_HOME is a file: the command exits 1 with the path and the fix, no traceback."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory should go\n")
    done = _run(*args, XDG_STATE_HOME=str(blocker))
    print(args, done.returncode, done.stdout[-400:], done.stderr[-1200:])
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    shown = done.stderr + done.stdout
    assert str(blocker / "ask_fable") in shown
    assert "XDG_STATE_HOME" in shown


def test_a_question_still_gets_its_answer_without_a_usable_state_directory(tmp_path: Path) -> None:
    """help needs no store: it answers (exit 0) and says only that its trace could not be kept."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    done = _run("help", "--topic", "modes", XDG_STATE_HOME=str(blocker))
    assert done.returncode == 0
    assert "## modes" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
def test_doctor_refuses_a_probe_timeout_that_is_not_a_positive_number(value: str) -> None:
    """doctor --timeout takes seconds above zero; anything else is a usage error naming the value."""
    done = _run("doctor", f"--timeout={value}")
    assert done.returncode == 2
    assert f"invalid value {value!r}" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
