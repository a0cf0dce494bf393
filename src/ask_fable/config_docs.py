"""Render the configuration reference table from :class:`ask_fable.config.Settings` and each
registered backend's own settings.

The table of ``docs/configuration.md`` between ``<!-- config-table -->`` and ``<!-- /config-table -->``
is this module's output, and a test keeps the two equal. Regenerate it after changing a setting::

    python -m ask_fable.config_docs --write docs/configuration.md

Each field becomes a row: its ``ASK_FABLE_*`` variable (plus any other accepted names from its
``validation_alias``), its default (derived defaults, such as files under the state directory,
are spelled out) and its description. Rows are grouped by the ``# --- group ---`` comments in
``config.py``, in declaration order.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from ask_fable import config_sources
from ask_fable.backends.registry import registered
from ask_fable.config import ENV_PREFIX, Settings, section_fields

START_MARKER = "<!-- config-table -->"
END_MARKER = "<!-- /config-table -->"

STATE = "$STATE"
STATE_NOTE = (
    f"`{STATE}` is `${{XDG_STATE_HOME:-~/.local/state}}/ask_fable` (directories 0700, files 0600)."
)

#: Path settings whose unset default is a file or directory under the state dir, and the
#: Settings property that resolves it.
DERIVED_PATHS: dict[str, str] = {
    "context_path": "context_db",
    "cache_path": "cache_db",
    "hub_path": "hub_db",
    "trace_path": "traces_db",
    "trace_dir": "traces_dir",
    "audit_path": "audit_file",
    "output_dir": "answers_dir",
}

#: Settings read outside the Settings object (they decide where settings come from).
EXTRA_ROWS: tuple[tuple[str, str, str, str], ...] = (
    (
        "Config file",
        f"{ENV_PREFIX}CONFIG_FILE",
        "`${XDG_CONFIG_HOME:-~/.config}/ask_fable/config.json`",
        "JSON file whose values override the environment; the configure_* tools write to it (to the "
        "shared database instead when ASK_FABLE_DATABASE_URL is set).",
    ),
)

_SECTION = re.compile(r"^\s*# --- (?P<name>[^-].*?) -+\s*$")
_DERIVED_DEFAULT = re.compile(r"\(default: ([^()]*(?:\([^()]*\)[^()]*)*)\)")
_FIELD = re.compile(r"^    (?P<name>[a-z_][a-z0-9_]*)\s*:")


def field_sections() -> dict[str, str]:
    """Each field's group title, read from the ``# --- group ---`` comments in ``Settings``."""
    sections: dict[str, str] = {}
    current = "General"
    for line in inspect.getsource(Settings).splitlines():
        section = _SECTION.match(line)
        if section:
            title = section.group("name").strip()
            current = title[:1].upper() + title[1:]
            continue
        match = _FIELD.match(line)
        if match and match.group("name") in Settings.model_fields:
            sections.setdefault(match.group("name"), current)
    return sections


def env_names(name: str, field: FieldInfo) -> list[str]:
    """The environment variables that set ``name``: the canonical one first, then aliases."""
    return config_sources.env_names(name, field, ENV_PREFIX)


def _number(value: float | int) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _derived_path(name: str) -> str:
    """``$STATE/<name>`` for a path setting whose default lives under the state dir."""
    settings = Settings.model_construct()
    resolved = Path(getattr(settings, DERIVED_PATHS[name]))
    try:
        relative = resolved.relative_to(settings.state_dir)
    except ValueError:
        return f"`{resolved}`"
    return f"`{STATE}/{relative.as_posix()}`"


def default_text(name: str, field: FieldInfo) -> str:
    """A human reading of a field's default."""
    if name in DERIVED_PATHS:
        return _derived_path(name)
    value: Any = field.get_default(call_default_factory=True)
    if value is None:
        derived = _DERIVED_DEFAULT.search(field.description or "")
        return f"unset ({derived.group(1)})" if derived else "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, list | tuple):
        return ", ".join(f"`{item}`" for item in value) if value else "empty"
    if isinstance(value, Path):
        return f"`{value.as_posix()}`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def rows() -> list[tuple[str, str, str, str]]:
    """``(group, variables, default, description)`` for every setting, in declaration order."""
    sections = field_sections()
    out: list[tuple[str, str, str, str]] = [
        (group, f"`{var}`", default, desc) for group, var, default, desc in EXTRA_ROWS
    ]
    for name, field in Settings.model_fields.items():
        variables = " / ".join(f"`{var}`" for var in env_names(name, field))
        description = field.description or ""
        out.append((sections.get(name, "General"), variables, default_text(name, field), description))
    for backend in registered():
        if backend.settings_model is None:
            continue
        group = f"{backend.label} (HTTP backend `{backend.name}`)"
        for name, field in section_fields(backend.name, backend.settings_model).items():
            variables = " / ".join(f"`{var}`" for var in env_names(name, field))
            out.append((group, variables, default_text(name, field), field.description or ""))
    return out


def render_table() -> str:
    """The Markdown reference: one table per group, each row a setting."""
    lines = [STATE_NOTE, ""]
    current: str | None = None
    for group, variables, default, description in rows():
        if group != current:
            if current is not None:
                lines.append("")
            lines += [f"**{group}**", "", "| Variable | Default | Meaning |", "|---|---|---|"]
            current = group
        lines.append(f"| {variables} | {_cell(default)} | {_cell(description)} |")
    return "\n".join(lines)


def replace_block(text: str, table: str, start_marker: str = START_MARKER,
                  end_marker: str = END_MARKER) -> str:
    """``text`` with the block between the markers (the config-table ones by default) replaced."""
    start = text.index(start_marker) + len(start_marker)
    end = text.index(end_marker)
    return f"{text[:start]}\n{table}\n{text[end:]}"


def extract_block(text: str, start_marker: str = START_MARKER, end_marker: str = END_MARKER) -> str:
    """The text between the markers (the config-table ones by default), without the surrounding newlines."""
    start = text.index(start_marker) + len(start_marker)
    end = text.index(end_marker)
    return text[start:end].strip("\n")


def render_cli(argv: Sequence[str] | None, render: Callable[[], str], what: str,
               start_marker: str = START_MARKER, end_marker: str = END_MARKER) -> int:
    """Print ``render()``, or ``--write FILE`` to replace the block between the markers in that file."""
    parser = argparse.ArgumentParser(description=f"Render the ask-fable {what}.")
    parser.add_argument("--write", metavar="FILE", help=f"replace the {what} block in FILE")
    args = parser.parse_args(argv)
    table = render()
    if args.write:
        path = Path(args.write)
        text = replace_block(path.read_text(encoding="utf-8"), table, start_marker, end_marker)
        path.write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(table + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, or ``--write FILE`` to replace the marked block in that file."""
    return render_cli(argv, render_table, "configuration reference table")


if __name__ == "__main__":
    raise SystemExit(main())
