"""``ask-fable ui`` started as a user would, in its own process, over a given state directory."""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.e2e.helpers import ask_fable_command


def state_env(home: Path) -> dict[str, str]:
    """An environment whose HOME, state and config directories live under ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_FABLE_")}
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        env.pop(name, None)
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CONFIG_HOME=str(home / ".config"),
        ASK_FABLE_QUIET="1",
    )
    return env


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(timeout=0.1):
            return proc.stdout.readline().strip()
        if proc.poll() is not None:
            break
    raise AssertionError(f"ask-fable ui printed no address (exit {proc.poll()})")


@contextlib.contextmanager
def ask_fable_ui(
    env: dict[str, str], *args: str, browser: bool = False
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Run ``ask-fable ui`` (with ``--no-browser`` unless ``browser``, plus ``args``); yields the address
    it printed and the process."""
    flags = [] if browser else ["--no-browser"]
    proc = subprocess.Popen(
        [*ask_fable_command(), "ui", *flags, *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        yield _first_line(proc, 30), proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
