"""The server's own file paths, hidden from callers that have no business knowing its layout.

A result may name a file on the server: where an answer was saved, a trace's bundle, the config
file a setting came from, the CLI a backend runs, the project ``context_pack`` reads. Over stdio the
caller is the machine's user, and an absolute path is what they need. An HTTP key without the admin
scope belongs to someone else: :func:`hide_server_paths` rewrites every path under the server's
directories relative to them (``answers/2026….md``, ``config.json``; files of the project root
relative to it, the root itself as ``.``), each backend's CLI as its name (``mmx``, ``claude``),
and what is left under the server's home as ``~/…``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ask_fable.config import Settings


def server_roots(settings: Settings) -> list[tuple[str, str]]:
    """``(directory or file, shown as)`` for every path of the server a result may name, longest first.

    Files in the state and config directories and the project root are shown relative to them; the
    answers, sessions and traces directories by their own name wherever they are; each backend's CLI
    by its name; the rest of HOME as ``~``.
    """
    from ask_fable.config import config_file_path

    roots = {
        str(Path.home()): "~",
        **_executables(settings),
        str(settings.state_dir): "",
        str(config_file_path().parent): "",
        str(settings.answers_dir): "answers",
        str(settings.sessions_dir): "sessions",
        str(settings.traces_dir): "traces",
    }
    if settings.project_root is not None:
        project = Path(settings.project_root).expanduser()
        roots.update({str(project): "", str(project.resolve()): ""})
    usable = [(root.rstrip("/"), shown) for root, shown in roots.items() if len(root.rstrip("/")) > 1]
    return sorted(usable, key=lambda item: len(item[0]), reverse=True)


def _executables(settings: Settings) -> dict[str, str]:
    """Where each CLI a backend may run is (as found on PATH, the bundled Claude Code CLI, the pinned
    one), shown as the command's name."""
    import shutil

    from ask_fable.backends.agent_sdk import bundled_cli
    from ask_fable.backends.registry import registered

    names = {backend.binary for backend in registered() if backend.binary} | {"claude"}
    found = {path: name for name in names if (path := shutil.which(name))}
    claude: list[str | Path | None] = [bundled_cli()]
    if settings.claude_cli:
        pinned = Path(settings.claude_cli).expanduser()
        claude += [pinned, shutil.which(str(pinned))]
    for where in claude:
        if where:
            found[str(where)] = "claude"
    return {variant: name for path, name in found.items() if Path(path).is_absolute()
            for variant in {path, str(Path(path).resolve())}}


@functools.lru_cache(maxsize=8)
def _rewriter(roots: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], dict[str, str]]:
    # A root counts only as a whole path component: followed by "/" or by no path character.
    pattern = re.compile("|".join(f"({re.escape(root)})(/|(?![\\w.\\-]))" for root, _ in roots))
    return pattern, dict(roots)


#: Characters JSON writes escaped: a root holding one may not show verbatim in a result's dump.
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def names_no_root(dumped: str, roots: list[tuple[str, str]]) -> bool:
    """Whether a result's JSON dump (``ensure_ascii=False``) shows none of ``roots``, so that
    :func:`hide_server_paths` would leave the result as it is. A root JSON would write escaped
    never counts as absent."""
    return not any(root in dumped or _JSON_ESCAPED.search(root) for root, _shown in roots)


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
