"""Register ask-fable with MCP clients: write (``init``) or print (``config``) their server entry.

Each client keeps its servers in its own file and shape:

==========  ==========================================  =========================================
client      file                                        entry
==========  ==========================================  =========================================
claude      ``~/.claude.json`` (user scope)             ``mcpServers.<name>``: stdio or ``type: http``
cursor      ``~/.cursor/mcp.json``                      ``mcpServers.<name>``: command or ``url``
windsurf    ``~/.codeium/windsurf/mcp_config.json``     ``mcpServers.<name>``: command or ``serverUrl``
opencode    ``~/.config/opencode/opencode.json``        ``mcp.<name>`` (``mcp.servers.<name>`` in v2
                                                        files): ``type: local|remote``
codex       ``~/.codex/config.toml``                    ``[mcp_servers.<name>]``: command/args or url
==========  ==========================================  =========================================

Writing keeps every other entry and every other setting, replaces only an entry of the same name,
saves a timestamped backup of the previous file next to it, and replaces the file atomically.
For HTTP entries the API key is never written: each client reads it from ``ASK_FABLE_API_KEY``
(or ``--key-env``) through its own environment interpolation.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ask_fable.errors import BadArgs

CLIENTS: tuple[str, ...] = ("claude", "cursor", "windsurf", "opencode", "codex")
DEFAULT_NAME = "ask_fable"
DEFAULT_KEY_ENV = "ASK_FABLE_API_KEY"
_NAME = re.compile(r"[A-Za-z0-9_\-]+")


@dataclass(frozen=True)
class InstallResult:
    """What ``install`` did."""

    client: str
    path: Path
    name: str
    created: bool
    replaced: bool
    backup: Path | None


def _check(client: str, name: str) -> None:
    if client not in CLIENTS:
        raise BadArgs(f"unknown client {client!r}; known clients: {', '.join(CLIENTS)}")
    if not _NAME.fullmatch(name):
        raise BadArgs(f"server name {name!r} must use letters, digits, '_' or '-'")


def default_command() -> list[str]:
    """How a client should start the stdio server: the absolute path of ``ask-fable`` when it is on
    PATH (editors started from a desktop launcher do not see the shell's PATH), else this Python."""
    found = shutil.which("ask-fable")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "ask_fable"]


def config_path(client: str) -> Path:
    """The user-level config file each client reads its MCP servers from."""
    home = Path.home()
    if client == "claude":
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else home) / ".claude.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "windsurf":
        return home / ".codeium" / "windsurf" / "mcp_config.json"
    if client == "opencode":
        xdg = os.environ.get("XDG_CONFIG_HOME")
        return (Path(xdg) if xdg else home / ".config") / "opencode" / "opencode.json"
    if client == "codex":
        base = os.environ.get("CODEX_HOME")
        return (Path(base).expanduser() if base else home / ".codex") / "config.toml"
    raise BadArgs(f"unknown client {client!r}; known clients: {', '.join(CLIENTS)}")


def server_entry(client: str, *, http_url: str | None = None, command: list[str] | None = None,
                 key_env: str = DEFAULT_KEY_ENV) -> dict[str, Any]:
    """The server entry in ``client``'s shape: stdio by default, Streamable HTTP with ``http_url``."""
    if http_url:
        if client == "claude":
            return {"type": "http", "url": http_url, "headers": {"Authorization": f"Bearer ${{{key_env}}}"}}
        if client == "cursor":
            return {"url": http_url, "headers": {"Authorization": f"Bearer ${{env:{key_env}}}"}}
        if client == "windsurf":
            return {"serverUrl": http_url, "headers": {"Authorization": f"Bearer ${{env:{key_env}}}"}}
        if client == "opencode":
            return {"type": "remote", "url": http_url, "enabled": True,
                    "headers": {"Authorization": f"Bearer {{env:{key_env}}}"}}
        return {"url": http_url, "bearer_token_env_var": key_env}
    argv = list(command or default_command())
    if client == "claude":
        return {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {}}
    if client in ("cursor", "windsurf"):
        return {"command": argv[0], "args": argv[1:]}
    if client == "opencode":
        return {"type": "local", "command": argv, "enabled": True}
    return {"command": argv[0], "args": argv[1:]}


def native_command(client: str, *, name: str = DEFAULT_NAME, http_url: str | None = None,
                   command: list[str] | None = None, key_env: str = DEFAULT_KEY_ENV) -> str | None:
    """The client's own one-line registration command, where it has one."""
    argv = " ".join(command or default_command())
    if client == "claude":
        if http_url:
            return (f"claude mcp add --scope user --transport http {name} {http_url} "
                    f"--header \"Authorization: Bearer ${key_env}\"")
        return f"claude mcp add --scope user --transport stdio {name} -- {argv}"
    if client == "codex":
        if http_url:
            return f"codex mcp add {name} --url {http_url} --bearer-token-env-var {key_env}"
        return f"codex mcp add {name} -- {argv}"
    return None


# --- JSON clients --------------------------------------------------------------------------------


def _servers_table(client: str, data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The dict that holds server entries inside ``data`` (created if missing); second item: v2 layout."""
    if client == "opencode":
        mcp = data.setdefault("mcp", {})
        if not isinstance(mcp, dict):
            raise BadArgs("the opencode config has an 'mcp' value that is not an object")
        servers = mcp.get("servers")
        if isinstance(servers, dict):
            return servers, True
        return mcp, False
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise BadArgs("the config has an 'mcpServers' value that is not an object")
    return servers, False


def _json_document(client: str, name: str, entry: dict[str, Any], current: dict[str, Any] | None = None
                   ) -> tuple[dict[str, Any], bool]:
    data = current if current is not None else {}
    if client == "opencode" and current is None:
        data["$schema"] = "https://opencode.ai/config.json"
    servers, v2 = _servers_table(client, data)
    if v2:
        entry = {k: v for k, v in entry.items() if k != "enabled"}
    replaced = name in servers
    servers[name] = entry
    return data, replaced


# --- TOML (codex) ----------------------------------------------------------------------------------


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_\-]+", key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise BadArgs(f"cannot write {type(value).__name__} to TOML")


def toml_table(name: str, entry: dict[str, Any]) -> str:
    """``[mcp_servers.<name>]`` with one ``key = value`` line per field."""
    lines = [f"[mcp_servers.{_toml_key(name)}]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


_HEADER = re.compile(r"^\s*\[\[?(?P<key>[^\[\]]+)\]\]?\s*(?:#.*)?$")


def _key_path(text: str) -> list[str]:
    parts, current, quote = [], "", None
    for char in text:
        if quote:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


def _strip_table(text: str, name: str) -> str:
    """``text`` without ``[mcp_servers.<name>]`` and its sub-tables (every other line kept)."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        match = _HEADER.match(line)
        if match:
            path = _key_path(match.group("key"))
            skipping = path[:2] == ["mcp_servers", name]
        if not skipping:
            out.append(line)
    return "".join(out)


def _without(data: dict[str, Any], name: str) -> dict[str, Any]:
    copy = json.loads(json.dumps(data))
    servers = copy.get("mcp_servers")
    if isinstance(servers, dict):
        servers.pop(name, None)
        if not servers:
            copy.pop("mcp_servers")
    return copy


def codex_document(current: str, name: str, entry: dict[str, Any]) -> tuple[str, bool]:
    """The new config.toml text with our table (replaced or appended); the rest of the text kept."""
    try:
        before = tomllib.loads(current)
    except tomllib.TOMLDecodeError as exc:
        raise BadArgs(f"the existing codex config is not valid TOML ({exc}); fix it first") from exc
    replaced = name in before.get("mcp_servers", {})
    stripped = _strip_table(current, name).rstrip("\n")
    text = (stripped + "\n\n" if stripped else "") + toml_table(name, entry)
    try:
        after = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadArgs(f"[mcp_servers.{name}] is defined in a form this tool does not rewrite "
                      "(an inline table?); edit the file by hand") from exc
    if after.get("mcp_servers", {}).get(name) != entry or _without(after, name) != _without(before, name):
        raise BadArgs(f"rewriting [mcp_servers.{name}] would change other settings; edit the file by hand")
    return text, replaced


# --- rendering and writing ----------------------------------------------------------------------


def render_snippet(client: str, *, name: str = DEFAULT_NAME, http_url: str | None = None,
                   command: list[str] | None = None, key_env: str = DEFAULT_KEY_ENV) -> str:
    """The config text to paste into ``client``'s file (JSON, or TOML for codex)."""
    _check(client, name)
    entry = server_entry(client, http_url=http_url, command=command, key_env=key_env)
    if client == "codex":
        return toml_table(name, entry)
    document, _ = _json_document(client, name, entry)
    return json.dumps(document, indent=2) + "\n"


def _backup(path: Path) -> Path:
    from ask_fable.stores.files import atomic_write_bytes

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    atomic_write_bytes(backup, path.read_bytes())
    return backup


def install(client: str, *, name: str = DEFAULT_NAME, http_url: str | None = None,
            command: list[str] | None = None, path: Path | None = None,
            key_env: str = DEFAULT_KEY_ENV) -> InstallResult:
    """Write the server entry into ``client``'s config file (see the module docstring)."""
    from ask_fable.stores.files import atomic_write_text

    _check(client, name)
    target = Path(path).expanduser() if path else config_path(client)
    entry = server_entry(client, http_url=http_url, command=command, key_env=key_env)
    exists = target.exists()
    current = target.read_text(encoding="utf-8") if exists else ""
    if client == "codex":
        text, replaced = codex_document(current, name, entry)
    else:
        data: dict[str, Any] | None = None
        if current.strip():
            try:
                data = json.loads(current)
            except ValueError as exc:
                snippet = render_snippet(client, name=name, http_url=http_url, command=command,
                                         key_env=key_env)
                raise BadArgs(
                    f"{target} is not plain JSON ({exc.msg} at line {exc.lineno}); it may have comments. "
                    f"Add this entry by hand:\n{snippet}"
                ) from exc
            if not isinstance(data, dict):
                raise BadArgs(f"{target} does not hold a JSON object; fix it first")
        document, replaced = _json_document(client, name, entry, data)
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    backup = _backup(target) if exists else None
    atomic_write_text(target, text)
    return InstallResult(client=client, path=target, name=name, created=not exists, replaced=replaced,
                         backup=backup)
