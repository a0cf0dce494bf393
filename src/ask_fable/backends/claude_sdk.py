"""The Agent SDK route: which Claude Code CLI runs, and one single-shot call on a fresh CLI.

Every start offers the model no tools, reads no user Claude settings, allows one turn, runs in a
private directory and turns non-essential CLI traffic off (:mod:`.agent_sdk` holds the options and
the transport). Which CLI runs is chosen once per App (:class:`ClaudeCliChoice`, on the App's
resources): ``ASK_FABLE_CLAUDE_CLI`` when set, else the bundled one unless the one on PATH is
strictly newer (found by running each ``--version`` through the subprocess runner, once).

Cancellation: the transport kills the CLI's whole process group whenever it is closed mid-turn (a
deadline, a cancelled call), so a timeout returns on time and no process is left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ask_fable.backends.agent_sdk import (
    TurnCollector,
    build_options,
    bundled_cli,
    map_sdk_error,
    run_query,
)
from ask_fable.backends.base import EventSink, OracleRequest, Reply
from ask_fable.backends.claude_common import (
    PROVIDER,
    SdkStartError,
    StderrTail,
    parse_version,
    usage_from,
)
from ask_fable.errors import BinaryMissing

if TYPE_CHECKING:
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

__all__ = [
    "PROVIDER",
    "ClaudeCliChoice",
    "SdkStartError",
    "TurnCollector",
    "bundled_cli",
    "cli_exists",
    "resolve_cli_path",
    "sdk_ask",
    "usage_from",
]

_VERSION_TIMEOUT = 10.0


# --- which CLI binary ----------------------------------------------------------------------------


async def cli_version(path: str) -> tuple[int, int, int] | None:
    """Run ``<path> --version`` through the subprocess runner and parse it; ``None`` when it fails."""
    from ask_fable.backends.subprocess_runner import probe_version

    ok, text = await probe_version(path, _VERSION_TIMEOUT)
    return parse_version(text) if ok else None


async def bundled_version(path: Path) -> tuple[int, int, int] | None:
    """The bundled CLI's version: recorded beside the binary (sparing a ~400 MB binary start), else asked."""
    recorded = path.with_name("claude.version")
    with contextlib.suppress(OSError):
        found = parse_version(recorded.read_text(encoding="utf-8"))
        if found:
            return found
    return await cli_version(str(path))


def _missing() -> BinaryMissing:
    return BinaryMissing(
        "no Claude Code CLI: claude-agent-sdk has no bundled one and `claude` is not on PATH "
        "(install Claude Code or set ASK_FABLE_CLAUDE_CLI)",
        binary="claude",
        hint="reinstall ask-fable (its claude-agent-sdk dependency bundles Claude Code), install Claude Code "
        "(npm install -g @anthropic-ai/claude-code), or set ASK_FABLE_CLAUDE_CLI to a Claude Code binary",
    )


def _pinned_cli(settings: Settings) -> str | None:
    if not settings.claude_cli:
        return None
    pinned = shutil.which(os.path.expanduser(settings.claude_cli))
    if pinned is None:
        raise BinaryMissing(
            f"ASK_FABLE_CLAUDE_CLI={settings.claude_cli} is not an executable file", binary="claude",
            hint="point ASK_FABLE_CLAUDE_CLI at a Claude Code binary, or unset it to use the one bundled "
            "with ask-fable",
        )
    return pinned


def cli_exists(settings: Settings) -> None:
    """Raise :class:`BinaryMissing` unless some Claude Code CLI can run (file checks only)."""
    if _pinned_cli(settings) is None and bundled_cli() is None and shutil.which("claude") is None:
        raise _missing()


class ClaudeCliChoice:
    """Which Claude Code CLI runs: ``settings.claude_cli``; else the bundled one unless PATH's is
    strictly newer. The comparison runs at most once per (bundled, PATH) pair."""

    def __init__(self) -> None:
        self._chosen: dict[tuple[str | None, str | None], str] = {}
        self._lock = threading.Lock()

    async def path(self, settings: Settings) -> str:
        """The CLI to run; :class:`BinaryMissing` when there is none."""
        pinned = _pinned_cli(settings)
        if pinned is not None:
            return pinned
        bundled = bundled_cli()
        on_path = shutil.which("claude")
        key = (str(bundled) if bundled else None, on_path)
        with self._lock:
            known = self._chosen.get(key)
        if known is not None:
            return known
        if bundled is None and on_path is None:
            raise _missing()
        chosen = str(bundled) if bundled else str(on_path)
        if bundled and on_path and os.path.realpath(on_path) != os.path.realpath(bundled):
            theirs, ours = await cli_version(on_path), await bundled_version(bundled)
            if theirs and ours and theirs > ours:
                chosen = on_path
        with self._lock:
            return self._chosen.setdefault(key, chosen)


async def resolve_cli_path(settings: Settings, resources: Resources) -> str:
    """The CLI the App's choice names for ``settings``."""
    return await claude_cli_choice(resources).path(settings)


def claude_cli_choice(resources: Resources) -> ClaudeCliChoice:
    """Which Claude Code CLI runs for ``resources``' App (chosen once per bundled / PATH pair)."""
    return resources.part("claude_cli", ClaudeCliChoice)


# --- one single-shot call -----------------------------------------------------------------------


async def sdk_ask(
    settings: Settings, model: str, request: OracleRequest, sink: EventSink, resources: Resources
) -> Reply:
    """One prompt (earlier exchanges folded in) through ``query()`` on a fresh CLI; no transcript is kept."""
    cli_path = await resolve_cli_path(settings, resources)
    tail = StderrTail(settings)
    options = build_options(settings, model=model, system=request.system, cli_path=cli_path, stderr=tail)
    collector = TurnCollector(model, sink, settings, tail)
    try:
        # One slot of the per-binary "claude" gate, as the bridge takes; the caller's deadline
        # encloses this, so time spent queued counts against the timeout.
        async with resources.gates.slot("claude", settings.cli_max_parallel):
            await run_query(request.folded_prompt(), options, collector.feed)
    except Exception as exc:
        # After an error result the CLI exits non-zero on purpose; the result says why.
        if collector.result is None:
            raise map_sdk_error(exc, model, tail, started=collector.seen > 0) from exc
    return collector.reply()
