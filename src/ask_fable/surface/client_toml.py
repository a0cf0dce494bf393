"""Codex's ``config.toml``: edit one ``[mcp_servers.<name>]`` table in place with tomlkit.

tomlkit keeps the rest of the text as written (comments, key order, spacing, the other tables).
Only the keys the merge changed are set or removed; then the result is parsed again and must equal
the old settings with just that entry replaced. A layout tomlkit cannot edit that way (dotted keys
spread over the file, for example) is refused with the entry to paste by hand.
"""

from __future__ import annotations

import tomllib
from typing import Any

from ask_fable.surface.client_files import ConfigFileError


def parse(text: str, where: str) -> dict[str, Any]:
    """``text`` as plain TOML data; a file that is not valid TOML is refused."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{where} is not valid TOML ({exc}); fix it first") from exc


def servers(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``mcp_servers`` table of parsed settings (empty when absent)."""
    table = data.get("mcp_servers", {})
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where} has an 'mcp_servers' value that is not a table; fix it first")
    return table


def snippet(name: str, entry: dict[str, Any]) -> str:
    """``[mcp_servers.<name>]`` holding ``entry``, as text to paste."""
    import tomlkit

    document = tomlkit.document()
    holder = tomlkit.table(is_super_table=True)
    holder[name] = entry
    document["mcp_servers"] = holder
    return tomlkit.dumps(document)


def _edit(text: str, name: str, entry: dict[str, Any], keys: tuple[str, ...]) -> str:
    import tomlkit

    document = tomlkit.parse(text)
    if "mcp_servers" not in document:
        holder = tomlkit.table(is_super_table=True)
        holder[name] = entry
        document["mcp_servers"] = holder
    elif name not in document["mcp_servers"]:
        table = tomlkit.table()
        for key, value in entry.items():
            table[key] = value
        table.add(tomlkit.nl())  # a blank line before whatever table follows
        document["mcp_servers"][name] = table
    else:
        table = document["mcp_servers"][name]
        for key in keys:
            if key in entry:
                table[key] = entry[key]
            elif key in table:
                del table[key]
    out = tomlkit.dumps(document)
    return out.rstrip("\n") + "\n"


def rewrite(text: str, name: str, entry: dict[str, Any], keys: tuple[str, ...], where: str) -> str:
    """``text`` with ``[mcp_servers.<name>]`` set to ``entry`` (only ``keys`` written when it exists)."""
    expected = parse(text, where)
    expected.setdefault("mcp_servers", {})[name] = entry
    refusal = (f"[mcp_servers.{name}] in {where} is laid out in a way this command cannot edit safely; "
               f"edit it by hand:\n{snippet(name, entry)}")
    try:
        out = _edit(text, name, entry, keys)
    except Exception as exc:  # tomlkit raises assorted internal errors on layouts it cannot edit
        raise ConfigFileError(refusal) from exc
    try:
        if tomllib.loads(out) != expected:
            raise ConfigFileError(refusal)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(refusal) from exc
    return out
