"""Render the backends table of docs/GUIDE.md from the backend registry.

The guide's table between ``<!-- backend-table -->`` and ``<!-- /backend-table -->`` is this
module's output, and a test keeps the two equal. Regenerate it after adding or changing a backend::

    python -m ask_fable.backend_docs --write docs/GUIDE.md

Each registered backend becomes a row: its name, the tokens that reach it, the tools that ask it,
what it needs (a logged-in CLI, a key variable) and the step that enables it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ask_fable.backends.descriptor import Backend
from ask_fable.backends.registry import registered
from ask_fable.config_docs import render_cli

START_MARKER = "<!-- backend-table -->"
END_MARKER = "<!-- /backend-table -->"


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
        tools = ", ".join(map(_code, backend.tools)) or "—"
        cells = (backend.label, tokens_cell(backend), tools, backend.requirement(), backend.enable)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, or ``--write FILE`` to replace the marked block in that file."""
    return render_cli(argv, render_table, "backends table", START_MARKER, END_MARKER)


if __name__ == "__main__":
    raise SystemExit(main())
