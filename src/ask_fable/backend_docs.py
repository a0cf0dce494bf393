"""Render the backends table of docs/GUIDE.md from the backend registry.

The guide's table between ``<!-- backend-table -->`` and ``<!-- /backend-table -->`` is this
module's output, and a test keeps the two equal. Regenerate it after adding or changing a backend::

    python -m ask_fable.backend_docs --write docs/GUIDE.md

Each registered backend becomes a row: its name, the tokens that reach it, the tools that ask it,
what it needs (a logged-in CLI, a key variable) and the step that enables it.

The README's model-token paragraph, between ``<!-- token-list -->`` and ``<!-- /token-list -->``, is
rendered from the same registry (``python -m ask_fable.backend_docs --tokens --write README.md``).

The key variables ``server.json`` declares (one per backend with a key, marked secret) come from the
same registry; regenerate them with ``python -m ask_fable.backend_docs --server-json server.json``.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ask_fable.backends.descriptor import Backend
from ask_fable.backends.registry import registered
from ask_fable.config import section_fields
from ask_fable.config_docs import render_cli

START_MARKER = "<!-- backend-table -->"
END_MARKER = "<!-- /backend-table -->"
TOKENS_START = "<!-- token-list -->"
TOKENS_END = "<!-- /token-list -->"
#: The width the README's token paragraph is wrapped to.
TOKENS_WIDTH = 120


def _code(text: str) -> str:
    return f"`{text}`"


def tokens_cell(backend: Backend) -> str:
    """The tokens that reach ``backend``, each with its aliases."""
    if backend.prefix:
        return _code(f"{backend.prefix}:<id>")
    cells = []
    for token in backend.tokens:
        aliases = f" ({', '.join(map(_code, token.aliases))})" if token.aliases else ""
        cells.append(_code(token.name) + aliases)
    return ", ".join(cells)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def render_table() -> str:
    """The Markdown table: one row per registered backend, in registration order."""
    lines = ["| Backend | Tokens | Tools | Needs | To enable |", "|---|---|---|---|---|"]
    for backend in registered():
        tools = ", ".join(map(_code, backend.tool_names)) or "—"
        cells = (backend.label, tokens_cell(backend), tools, backend.requirement(), backend.enable)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def _listed(items: list[str], last: str = "and") -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def render_tokens() -> str:
    """The README's model-token paragraph: each registered token with its note and aliases, the
    provider prefixes, and the ``twin`` group with its spellings."""
    from ask_fable.core.tokens import GROUP_ALIASES, GROUPS

    named: list[str] = []
    prefixes: list[str] = []
    for backend in registered():
        if backend.prefix:
            prefixes.append(_code(f"{backend.prefix}:<id>"))
            continue
        for token in backend.tokens:
            notes = ([token.about] if token.about else []) + [_code(alias) for alias in token.aliases]
            named.append(_code(token.name) + (f" ({', '.join(notes)})" if notes else ""))
    group, members = next(iter(GROUPS.items()))
    spellings = [_code(alias) for alias in GROUP_ALIASES if alias != group and GROUP_ALIASES[alias] == group]
    text = (
        f"Councils, chains and debates name models with tokens: {', '.join(named)}"
        + (f", and any provider model as {_listed(prefixes, 'or')}" if prefixes else "")
        + f". The group {_code(group)} (also {', '.join(spellings)}) means {' + '.join(members)} wherever "
        "a list of models is taken. An unknown token is a `bad_args` error listing the known ones."
    )
    # A code span is never split across lines: its spaces are held apart while wrapping.
    spans = text.split("`")
    held = "`".join(part.replace(" ", "\x00") if index % 2 else part for index, part in enumerate(spans))
    wrapped = textwrap.fill(held, TOKENS_WIDTH, break_long_words=False, break_on_hyphens=False)
    return wrapped.replace("\x00", " ")


def key_variables() -> list[dict[str, Any]]:
    """``server.json``'s entry for each registered backend's key variable, in registration order."""
    entries: list[dict[str, Any]] = []
    for backend in registered():
        if backend.settings_model is None or not backend.key_vars:
            continue
        field = section_fields(backend.name, backend.settings_model)[f"{backend.name}_api_key"]
        entries.append({"name": backend.key_vars[0], "description": (field.description or "").rstrip("."),
                        "isRequired": False, "isSecret": True})
    return entries


def with_key_variables(text: str) -> str:
    """``server.json`` text with its package's secret variables replaced by :func:`key_variables`."""
    data = json.loads(text)
    for package in data["packages"]:
        kept = [v for v in package.get("environmentVariables", []) if not v.get("isSecret")]
        package["environmentVariables"] = kept + key_variables()
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, ``--write FILE`` to replace the marked block in that file, ``--tokens`` (with
    or without ``--write FILE``) for the README's token paragraph, or ``--server-json FILE`` to
    rewrite that file's key variables."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--tokens"]:
        return render_cli(args[1:], render_tokens, "model-token paragraph", TOKENS_START, TOKENS_END)
    if args[:1] == ["--server-json"] and len(args) == 2:
        path = Path(args[1])
        path.write_text(with_key_variables(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    return render_cli(args, render_table, "backends table", START_MARKER, END_MARKER)


if __name__ == "__main__":
    raise SystemExit(main())
