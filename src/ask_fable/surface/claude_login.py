"""``ask-fable login`` and ``ask-fable claude``: the Claude Code that ask-fable runs, by hand.

ask-fable reaches Fable and Opus 5 through a Claude Code CLI: the one inside the claude-agent-sdk
install (so no separate Claude Code is needed), a newer ``claude`` on PATH, or the one
``ASK_FABLE_CLAUDE_CLI`` pins. ``login`` runs that CLI's ``auth login`` attached to the terminal and
then asks it where the login landed; ``claude ARGS…`` runs it with any arguments (``claude mcp add
…`` on a machine without a global Claude Code).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Seconds ``auth status`` may take (it reads local files; no network).
STATUS_TIMEOUT = 30.0
LOGIN_COMMAND = "ask-fable login"


def claude_program() -> str:
    """The Claude Code CLI the servers run (:class:`BinaryMissing` when there is none)."""
    import anyio

    from ask_fable.backends.claude_sdk import ClaudeCliChoice
    from ask_fable.config import load_settings

    settings = load_settings()

    async def choose() -> str:
        return await ClaudeCliChoice().path(settings)

    return anyio.run(choose)


def _own_env() -> dict[str, str]:
    """The user's environment for a command they run by hand, without ask-fable's own settings."""
    return {name: value for name, value in os.environ.items() if not name.startswith("ASK_FABLE_")}


def claude_command(arguments: Sequence[str]) -> int:
    """``ask-fable claude ARGS…``: run the CLI with ``ARGS`` on this terminal; its exit status."""
    from ask_fable.backends.subprocess_runner import run_attached

    return run_attached([claude_program(), *arguments], _own_env())


@dataclass(frozen=True)
class LoginState:
    """What the CLI reports about its login, as the servers will see it."""

    logged_in: bool
    method: str
    config_dir: Path

    def kept_in(self) -> str:
        """Where the login is kept, in words a user can follow."""
        if os.environ.get("ANTHROPIC_API_KEY"):
            return "ANTHROPIC_API_KEY in this environment (it is used before any saved login)"
        if platform.system() == "Darwin":
            return (f"your macOS login keychain (entry \"Claude Code-credentials\"); settings in "
                    f"{self.config_dir}")
        return str(self.config_dir / ".credentials.json")


def _config_dir(env: Mapping[str, str]) -> Path:
    base = env.get("CLAUDE_CONFIG_DIR")
    return Path(base).expanduser() if base else Path(env.get("HOME") or Path.home()) / ".claude"


def login_state(program: str) -> LoginState:
    """Ask ``program auth status`` with the environment the servers give it; a missing or older CLI
    answer falls back to looking for the credentials file."""
    import anyio

    from ask_fable.backends.claude_common import claude_cli_env, login_found
    from ask_fable.backends.subprocess_runner import run_process
    from ask_fable.errors import AskFableError

    env = claude_cli_env()
    fallback = LoginState(login_found(), "unknown", _config_dir(env))

    async def ask() -> bytes:
        result = await run_process([program, "auth", "status", "--json"], stdin=None, env=env,
                                   timeout=STATUS_TIMEOUT, kill_grace=0.5)
        return result.stdout

    try:
        data = json.loads(anyio.run(ask))
    except (AskFableError, ValueError):
        return fallback
    if not isinstance(data, dict) or not isinstance(data.get("loggedIn"), bool):
        return fallback
    folder = data.get("configDirectory")
    return LoginState(data["loggedIn"], str(data.get("authMethod") or "unknown"),
                      Path(folder) if isinstance(folder, str) and folder else fallback.config_dir)


def login_command(args: argparse.Namespace) -> int:
    """``ask-fable login``: run the CLI's login on this terminal, then say where the login is kept.
    Exit 0 when a login is found afterwards, 1 when not (``--status``: only report)."""
    from ask_fable.backends.subprocess_runner import run_attached

    program = claude_program()
    if not args.status:
        flags = [flag for flag, on in (("--console", args.console), ("--sso", args.sso)) if on]
        if args.email:
            flags += ["--email", args.email]
        print(f"ask-fable: starting the Claude Code login ({program} auth login)", file=sys.stderr,
              flush=True)
        code = run_attached([program, "auth", "login", *flags], _own_env())
        if code == 130:
            print(f"ask-fable: login interrupted; nothing was saved. Run `{LOGIN_COMMAND}` again.",
                  file=sys.stderr)
            return 130
        if code != 0:
            print(f"ask-fable: the Claude Code login ended with exit status {code}; run `{LOGIN_COMMAND}` "
                  "again (or set ANTHROPIC_API_KEY for the server instead)", file=sys.stderr)
            return 1
    state = login_state(program)
    if not state.logged_in:
        print(f"ask-fable: no Claude login found (looked in {state.kept_in()}); run `{LOGIN_COMMAND}` "
              "(or set ANTHROPIC_API_KEY for the server)", file=sys.stderr)
        return 1
    print(f"Logged in to Claude ({state.method}). The login is kept in {state.kept_in()}; every ask-fable "
          "server of this user uses it from its next call. Log out with `ask-fable claude auth logout`.")
    return 0
