"""Helpers for tests of the ``ask-fable`` command: started as the installed command, or run by its
entry point in the test's process."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


def ask_fable_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m ask_fable``."""
    script = Path(sys.executable).with_name("ask-fable")
    if script.exists():
        return [str(script)]
    found = shutil.which("ask-fable")
    return [found] if found else [sys.executable, "-m", "ask_fable"]


def child_env(**extra: str) -> dict[str, str]:
    """The test's isolated environment (HOME, XDG dirs, no keys) plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_FABLE_")}
    env["ASK_FABLE_QUIET"] = "1"
    env.update(extra)
    return env


def run_in_process(args: Sequence[str], environ: Mapping[str, str], *, stdin: str = ""
                   ) -> subprocess.CompletedProcess[str]:
    """``ask-fable ARGS`` through the installed command's own entry point (``cli.main``), run in this
    process with ``environ`` as its whole environment and ``stdin`` as its input: its exit code,
    stdout and stderr, as the spawned command gives them.

    For what does not depend on being a process of its own (arguments, messages, exit codes, files
    written): each module that uses it still starts the installed command where that is the point
    (the console script, signals, a terminal, a server's lifetime). A tool command runs its own event
    loop, so this is for synchronous tests.
    """
    from ask_fable.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    _become(environ)
    time.tzset()  # the local zone of readable times follows TZ, as in a new process
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _stdin(io.StringIO(stdin)), _unconfigured_logging():
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's usage errors, as the interpreter would end
                code = _exit_status(exit_.code, err)
    finally:
        _become(saved)
        time.tzset()
    return subprocess.CompletedProcess(["ask-fable", *args], code, out.getvalue(), err.getvalue())


def _become(environ: Mapping[str, str]) -> None:
    """Make this process's environment ``environ`` by changing only the variables that differ: each
    change is a ``setenv`` a thread still running C code (a driver connecting) may be reading."""
    for name in [name for name in os.environ if name not in environ]:
        del os.environ[name]
    for name, value in environ.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@contextlib.contextmanager
def _unconfigured_logging() -> Iterator[None]:
    """The root logger as a new process has it (no handler, WARNING), so a library's warning goes
    to stderr through logging's last resort, as it would, not to pytest's log capture; and every
    logger's level as it was before, after (a command quiets some libraries' loggers for its run)."""
    manager = logging.Logger.manager
    root = logging.getLogger()
    handlers = root.handlers[:]
    levels = {name: logger.level for name, logger in manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    root_level = root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(root_level)
        for name, logger in list(manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                logger.setLevel(levels.get(name, logging.NOTSET))


@contextlib.contextmanager
def _stdin(stream: io.StringIO) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def _exit_status(code: object, err: io.StringIO) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


def command_output(args: list[str], environ: Mapping[str, str]) -> str:
    """The stdout of ``ask-fable ARGS`` run in this process (:func:`run_in_process`), after checking
    it exited 0: for a test's setup (a key to call with), where the command is not what it checks."""
    done = run_in_process(args, environ)
    assert done.returncode == 0, f"ask-fable {' '.join(args)} exited {done.returncode}: {done.stderr}"
    return done.stdout


TEST_KEY = "glm-test-key-0123456789"


def wired_app(fp: Any = None, **overrides: Any) -> Any:
    """An App whose GLM and DeepSeek backends point at the fake provider ``fp`` (when given)."""
    from ask_fable.config import load_settings
    from ask_fable.core.app import App

    values: dict[str, Any] = {"cache": False, "timeout": 10}
    if fp is not None:
        values.update(glm_api_key=TEST_KEY, glm_base_url=fp.base_url, deepseek_api_key=TEST_KEY,
                      deepseek_base_url=fp.base_url)
    values.update(overrides)
    return App(load_settings(**values))


async def structured(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool`` and return its structured result, checking isError mirrors ``status: error``."""
    result = await client.call_tool(tool, arguments)
    payload = result.structured_content
    assert payload is not None
    assert result.is_error is (payload["status"] == "error")
    return payload


async def in_one_utc_minute(burst_s: float) -> None:
    """Wait, when needed, for a UTC minute with ``burst_s`` left: calls per minute count in fixed UTC
    minutes, and calls across two of them may be admitted in both."""
    import anyio

    left = 60 - time.time() % 60
    if left < burst_s:
        await anyio.sleep(left + 0.1)
