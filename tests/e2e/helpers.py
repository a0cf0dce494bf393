"""Helpers for tests that spawn the installed ``ask-fable`` command."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


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
