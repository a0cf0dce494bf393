"""A command run in the test's process (``run_in_process``) leaves the process as it found it and
shows what the installed command would."""

from __future__ import annotations

import logging
import os

import pytest

import ask_fable.cli as cli
from tests.e2e.helpers import child_env, run_in_process


def test_a_library_warning_reaches_the_commands_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli._run

    def noisy(arguments: list[str]) -> int:
        logging.getLogger("some.library").warning("library says hello")
        return real(arguments)

    monkeypatch.setattr(cli, "_run", noisy)
    done = run_in_process(["--version"], child_env())
    assert done.returncode == 0 and "library says hello" in done.stderr


def test_the_environment_and_every_loggers_level_are_as_they_were_after() -> None:
    """A command quiets some libraries' loggers for its run (the stores' outage log among them):
    another test in this process must still see those lines."""
    environ = dict(os.environ)
    before = logging.getLogger("ask_fable.database").level
    done = run_in_process(["keys", "list"], child_env(ASK_FABLE_SOMETHING_SET="1"))
    assert done.returncode == 0, done.stderr
    assert logging.getLogger("ask_fable.database").level == before
    assert dict(os.environ) == environ
