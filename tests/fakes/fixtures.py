"""Environment builders around the bundled Claude Code CLI and :class:`FakeProvider`.

The fake provider itself is the ``fp`` fixture of ``tests/conftest.py``; import what you need from
here into a test module::

    from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env
"""

from __future__ import annotations

from pathlib import Path


def bundled_claude_cli() -> Path | None:
    """Path of the Claude Code CLI shipped inside claude-agent-sdk, or ``None`` when absent."""
    from ask_fable.backends.agent_sdk import bundled_cli

    return bundled_cli()


def claude_cli_env(base_url: str, home: Path, api_key: str = "dummy") -> dict[str, str]:
    """Environment that points the Claude Code CLI at ``base_url`` with an isolated home, offline.

    Non-essential traffic, telemetry, the auto-updater and retries are off, so one turn sends
    exactly one ``POST /v1/messages?beta=true`` and a dead endpoint fails at once.
    """
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def claude_with_a_child(directory: Path) -> tuple[Path, Path]:
    """A Claude Code CLI that first starts a child process (``sleep 3600``, holding the CLI's stdout
    and stderr, its pid appended to the returned file) and then becomes the bundled CLI.

    Returns (the executable to pin with ``ASK_FABLE_CLAUDE_CLI``, the pid file).
    """
    bundled = bundled_claude_cli()
    if bundled is None:
        raise RuntimeError("claude-agent-sdk ships no CLI here")
    directory.mkdir(parents=True, exist_ok=True)
    pids = directory / "children.pids"
    script = directory / "claude"
    script.write_text(f'#!/bin/sh\nsleep 3600 &\necho $! >> "{pids}"\nexec "{bundled}" "$@"\n')
    script.chmod(0o755)
    return script, pids


def child_pids(pid_file: Path) -> list[int]:
    """The pids a :func:`claude_with_a_child` CLI recorded."""
    if not pid_file.exists():
        return []
    return [int(line) for line in pid_file.read_text().split()]
