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

Writing merges into an existing entry of the same name (:mod:`.client_merge`), keeps every other
entry and setting, and goes through :mod:`.client_files` (links followed, backups, atomic replace).
The stdio command is the absolute path of the running ``ask-fable``: a client started from a
desktop launcher does not see the shell's PATH or an activated virtualenv. For HTTP entries the API
key is never written: each client reads it from ``ASK_FABLE_API_KEY`` (or ``--key-env``) through
its own interpolation (``${VAR}`` in Claude Code, ``${env:VAR}`` in Cursor and Windsurf,
``{env:VAR}`` in opencode, ``bearer_token_env_var`` in Codex).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ask_fable.errors import BadArgs
from ask_fable.surface import client_files, client_toml
from ask_fable.surface.client_files import ConfigFileError
from ask_fable.surface.client_merge import EntryMerge, Status, merge_entry

CLIENTS: tuple[str, ...] = ("claude", "cursor", "windsurf", "opencode", "codex")
DEFAULT_NAME = "ask_fable"
DEFAULT_KEY_ENV = "ASK_FABLE_API_KEY"
_NAME = re.compile(r"[A-Za-z0-9_\-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTEMPTS = 3

__all__ = ["CLIENTS", "DEFAULT_KEY_ENV", "DEFAULT_NAME", "ConfigFileError", "InstallResult", "check_options",
           "config_path", "default_command", "install", "native_command", "render_snippet", "server_entry"]


@dataclass(frozen=True)
class InstallResult:
    """What ``install`` did: the merge (status, fields set, removed and kept) and where it wrote."""

    client: str
    path: Path
    target: Path
    name: str
    merge: EntryMerge
    backup: Path | None

    @property
    def status(self) -> Status:
        """``added``, ``updated`` or ``unchanged``."""
        return self.merge.status


def check_options(client: str, name: str, http_url: str | None = None,
                  key_env: str = DEFAULT_KEY_ENV) -> None:
    """Refuse an unknown client, a server name, URL or variable name a client could not use."""
    if client not in CLIENTS:
        raise BadArgs(f"unknown client {client!r}; known clients: {', '.join(CLIENTS)}")
    if not _NAME.fullmatch(name):
        raise BadArgs(f"server name {name!r} must use letters, digits, '_' or '-'")
    if http_url is not None and not re.fullmatch(r"https?://[^\s/?#]+\S*", http_url):
        raise BadArgs(f"--http {http_url!r} is not an http:// or https:// URL")
    if not _ENV_NAME.fullmatch(key_env):
        raise BadArgs(f"--key-env {key_env!r} is not an environment variable name")


def default_command() -> list[str]:
    """How a client should start the stdio server: the absolute path of this install's ``ask-fable``
    (next to this Python, else on PATH), else this Python with ``-m ask_fable``."""
    beside = Path(sys.executable).with_name("ask-fable")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [os.path.abspath(beside)]
    found = shutil.which("ask-fable")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "ask_fable"]


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
    if client == "opencode":
        return {"type": "local", "command": argv, "enabled": True}
    return {"command": argv[0], "args": argv[1:]}


def native_command(client: str, *, name: str = DEFAULT_NAME, http_url: str | None = None,
                   command: list[str] | None = None, key_env: str = DEFAULT_KEY_ENV) -> str | None:
    """The client's own one-line registration command, where it has one, quoted for a POSIX shell.

    The API key is named as the client expands it (``${VAR}`` for Claude Code) inside single quotes,
    so the shell passes the reference through and the key never lands in the client's file.
    """
    argv = list(command or default_command())
    if client == "claude":
        if http_url:
            words = ["claude", "mcp", "add", "--scope", "user", "--transport", "http", name, http_url,
                     "--header", f"Authorization: Bearer ${{{key_env}}}"]
        else:
            words = ["claude", "mcp", "add", "--scope", "user", "--transport", "stdio", name, "--", *argv]
        return shlex.join(words)
    if client == "codex":
        if http_url:
            return shlex.join(["codex", "mcp", "add", name, "--url", http_url,
                               "--bearer-token-env-var", key_env])
        return shlex.join(["codex", "mcp", "add", name, "--", *argv])
    return None


# --- JSON clients --------------------------------------------------------------------------------


def _servers_table(client: str, data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The dict that holds server entries inside ``data`` (created if missing); second item: v2 layout."""
    if client == "opencode":
        mcp = data.setdefault("mcp", {})
        if not isinstance(mcp, dict):
            raise ConfigFileError("the opencode config has an 'mcp' value that is not an object; "
                                  "fix it first")
        servers = mcp.get("servers")
        if isinstance(servers, dict):
            return servers, True
        return mcp, False
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigFileError("the config has an 'mcpServers' value that is not an object; fix it first")
    return servers, False


def _new_json(client: str) -> dict[str, Any]:
    """The document a missing JSON config file starts as."""
    return {"$schema": "https://opencode.ai/config.json"} if client == "opencode" else {}


def _json_merge(client: str, data: dict[str, Any], name: str, entry: dict[str, Any]) -> EntryMerge:
    """Merge ``entry`` into ``data``'s server table in place."""
    servers, v2 = _servers_table(client, data)
    if v2:  # opencode's v2 layout has `disabled` instead of `enabled`
        entry = {k: v for k, v in entry.items() if k != "enabled"}
    merge = merge_entry(servers.get(name), entry)
    servers[name] = merge.entry
    return merge


def _json_snippet(client: str, name: str, entry: dict[str, Any]) -> str:
    data = _new_json(client)
    _json_merge(client, data, name, entry)
    return json.dumps(data, indent=2) + "\n"


def _json_document(client: str, text: str, where: Path, name: str,
                   entry: dict[str, Any]) -> tuple[str, EntryMerge]:
    data: Any = _new_json(client)
    if text.strip():
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigFileError(
                f"{where} is not plain JSON ({exc.msg} at line {exc.lineno}); it may have comments. "
                f"Add this entry by hand:\n{_json_snippet(client, name, entry)}"
            ) from exc
        if not isinstance(data, dict):
            raise ConfigFileError(f"{where} does not hold a JSON object; fix it first")
    merge = _json_merge(client, data, name, entry)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n", merge


def _codex_document(text: str, where: Path, name: str, entry: dict[str, Any]) -> tuple[str, EntryMerge]:
    label = str(where)
    current = client_toml.servers(client_toml.parse(text, label), label)
    merge = merge_entry(current.get(name), entry)
    _codex_check(merge.entry, name)
    if merge.status == "unchanged":
        return text, merge
    return client_toml.rewrite(text, name, merge.entry, merge.changed + merge.removed, label), merge


_CODEX_ONLY_STDIO = ("env", "env_vars", "cwd")
_CODEX_ONLY_HTTP = ("http_headers", "env_http_headers")


def _codex_check(entry: dict[str, Any], name: str) -> None:
    """Codex refuses a server that mixes stdio and HTTP fields; say so instead of writing one."""
    clash = _CODEX_ONLY_STDIO if "url" in entry else _CODEX_ONLY_HTTP
    mixed = [key for key in clash if key in entry]
    if mixed:
        kind = "an HTTP" if "url" in entry else "a stdio"
        raise ConfigFileError(f"[mcp_servers.{name}] has {', '.join(mixed)}, which Codex does not accept on "
                              f"{kind} server; remove it or register under another --name")


# --- rendering and writing ----------------------------------------------------------------------


def render_snippet(client: str, *, name: str = DEFAULT_NAME, http_url: str | None = None,
                   command: list[str] | None = None, key_env: str = DEFAULT_KEY_ENV) -> str:
    """The config text to paste into ``client``'s file (JSON, or TOML for codex)."""
    check_options(client, name, http_url, key_env)
    entry = server_entry(client, http_url=http_url, command=command, key_env=key_env)
    if client == "codex":
        return client_toml.snippet(name, entry)
    return _json_snippet(client, name, entry)


def install(client: str, *, name: str = DEFAULT_NAME, http_url: str | None = None,
            command: list[str] | None = None, path: Path | None = None,
            key_env: str = DEFAULT_KEY_ENV) -> InstallResult:
    """Merge the server entry into ``client``'s config file (see the module docstring).

    Nothing is written (and no backup made) when the entry is already up to date. Raises
    :class:`BadArgs` for unusable options and :class:`ConfigFileError` when the file cannot be
    read, understood or written.
    """
    check_options(client, name, http_url, key_env)
    named = Path(os.path.abspath(Path(path).expanduser() if path else config_path(client)))
    target = client_files.real_path(named)
    entry = server_entry(client, http_url=http_url, command=command, key_env=key_env)
    for _ in range(_ATTEMPTS):
        read = client_files.read_bytes(target)
        text = client_files.decode(target, read)
        try:
            if client == "codex":
                new_text, merge = _codex_document(text, target, name, entry)
            else:
                new_text, merge = _json_document(client, text, target, name, entry)
        except ConfigFileError as exc:
            if str(target) in exc.detail:
                raise
            raise ConfigFileError(f"{target}: {exc.detail}") from exc
        backup = None
        if merge.status != "unchanged":
            written, backup = client_files.replace(named, target, read, new_text)
            if not written:
                continue
        return InstallResult(client=client, path=named, target=target, name=name, merge=merge,
                             backup=backup)
    raise ConfigFileError(f"{target} kept changing while this command wrote it; close the client and "
                          "run it again")
