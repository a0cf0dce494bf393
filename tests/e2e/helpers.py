"""Helpers for tests that spawn the installed ``ask-fable`` command."""

from __future__ import annotations

import os
import shutil
import sys
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
