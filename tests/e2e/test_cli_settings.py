"""Every ``ask-fable`` subcommand says once, on stderr, which settings it could not use as written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process

BAD_ENV = "settings problem: timeout from ASK_FABLE_TIMEOUT: 'abc' is not valid"
BAD_KEY = "unknown setting 'deepseek_api_kye' (did you mean 'deepseek_api_key'?)"

#: Each subcommand a user may run, with arguments that make it finish on its own.
COMMANDS = [
    ["tools"],
    ["tools", "--json"],
    ["keys", "list"],
    ["keys", "list", "--json"],
    ["db", "status"],
    ["db", "settings"],
    ["doctor", "--no-probe"],
    ["doctor", "--no-probe", "--json"],
    ["config", "claude"],
    ["init", "cursor", "--config-path", "{tmp}/cursor.json"],
    ["help", "--topic", "modes"],
    ["trace", "list"],
    ["stats"],
]
#: The case run by the installed command started as its own process: its stdout holds only the JSON.
SPAWNED = ["doctor", "--no-probe", "--json"]


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"deepseek_api_kye": "sk-not-a-real-key-000"}))
    argv = [part.replace("{tmp}", str(tmp_path)) for part in args]
    env = child_env(ASK_FABLE_TIMEOUT="abc", ASK_FABLE_CONFIG_FILE=str(config))
    if args != SPAWNED:  # run by the command's own entry point in this process
        return run_in_process(argv, env)
    return subprocess.run([*ask_fable_command(), *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=env)


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_subcommand_reports_each_settings_problem_once_on_stderr(
    args: list[str], tmp_path: Path
) -> None:
    """A bad ASK_FABLE_TIMEOUT and a misspelled config key: each named once on stderr, the command
    still does its job (exit 0), nothing on stdout but its own output, no traceback."""
    done = _run(args, tmp_path)
    lines = done.stderr.splitlines()
    print(args, done.returncode, done.stderr[-600:])
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    named = [line for line in lines if BAD_ENV in line]
    assert len(named) == 1 and named[0].startswith("ask-fable: ") and "using the default (240)" in named[0]
    assert len([line for line in lines if BAD_KEY in line]) == 1
    assert "settings problem" not in done.stdout
    if "--json" in args:
        json.loads(done.stdout)
