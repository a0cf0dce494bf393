"""The server's own file paths, hidden from callers that have no business knowing its layout.

A result may name a file on the server: where an answer was saved, a trace's bundle, the config
file a setting came from. Over stdio the caller is the machine's user, and an absolute path is what
they need. A read-scoped HTTP key belongs to someone else: :func:`hide_server_paths` rewrites every
path under the server's directories relative to them (``answers/2026….md``, ``config.json``), and
what is left under the server's home as ``~/…``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ask_fable.config import Settings


def server_roots(settings: Settings) -> list[tuple[str, str]]:
    """``(directory, shown as)`` for every directory of the server a result may name, longest first.

    Files in the state and config directories are shown relative to them; the answers, sessions and
    traces directories by their own name wherever they are; the rest of HOME as ``~``.
    """
    from ask_fable.config import config_file_path

    roots = {
        str(Path.home()): "~",
        str(settings.state_dir): "",
        str(config_file_path().parent): "",
        str(settings.answers_dir): "answers",
        str(settings.sessions_dir): "sessions",
        str(settings.traces_dir): "traces",
    }
    usable = [(root.rstrip("/"), shown) for root, shown in roots.items() if len(root.rstrip("/")) > 1]
    return sorted(usable, key=lambda item: len(item[0]), reverse=True)


@functools.lru_cache(maxsize=8)
def _rewriter(roots: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], dict[str, str]]:
    # A root counts only as a whole path component: followed by "/" or by no path character.
    pattern = re.compile("|".join(f"({re.escape(root)})(/|(?![\\w.\\-]))" for root, _ in roots))
    return pattern, dict(roots)


def hide_server_paths(obj: Any, roots: list[tuple[str, str]]) -> Any:
    """``obj`` (a result: dicts, lists, strings) with every path under ``roots`` rewritten."""
    if not roots:
        return obj
    pattern, shown = _rewriter(tuple(roots))

    def replace(match: re.Match[str]) -> str:
        groups = match.groups()
        for index in range(0, len(groups), 2):
            if groups[index] is not None:
                label, slash = shown[groups[index]], groups[index + 1]
                if slash:
                    return f"{label}/" if label else ""
                return label or "."
        return match.group(0)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(replace, value) if "/" in value else value
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(obj)
