"""``init`` / ``config``: the server entry written into each client's real-shaped config file."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ask_fable.errors import BadArgs
from ask_fable.surface.client_setup import (
    CLIENTS,
    codex_document,
    config_path,
    install,
    render_snippet,
    server_entry,
)

CMD = ["ask-fable"]
URL = "https://mcp.example.com/mcp"

CLAUDE_JSON = {
    "numStartups": 42,
    "installMethod": "native",
    "autoUpdates": False,
    "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {"local-db": {"command": "db-mcp"}}}},
    "mcpServers": {
        "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
                   "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
        "ask_fable": {"type": "stdio", "command": "old-ask-fable", "args": ["--stale"], "env": {}},
    },
    "oauthAccount": {"emailAddress": "me@example.com"},
}
CURSOR_JSON = {"mcpServers": {
    "context7": {"url": "https://mcp.context7.com/mcp"},
    "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "x.db"]},
}}
WINDSURF_JSON = {"mcpServers": {
    "git": {"command": "uvx", "args": ["mcp-server-git"], "disabled": False, "env": {}},
    "tidewave": {"serverUrl": "http://localhost:4000/tidewave/mcp"},
}}
OPENCODE_JSON = {
    "$schema": "https://opencode.ai/config.json",
    "theme": "opencode",
    "model": "anthropic/claude-sonnet-4-5",
    "mcp": {"everything": {"type": "local", "enabled": True,
                           "command": ["npx", "-y", "@modelcontextprotocol/server-everything"]}},
    "permission": {"edit": "ask"},
}
CODEX_TOML = """\
# my codex settings
model = "gpt-5.6-sol"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-docs"]  # keep this comment

[mcp_servers.docs.env]
DOCS_TOKEN = "abc"

[mcp_servers.ask_fable]
command = "old"
args = []

[mcp_servers.ask_fable.env]
STALE = "1"

[profiles.fast]
model = "gpt-5.6-mini"
"""


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_default_paths_follow_each_client(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = isolated_env
    assert config_path("claude") == home / ".claude.json"
    assert config_path("cursor") == home / ".cursor" / "mcp.json"
    assert config_path("windsurf") == home / ".codeium" / "windsurf" / "mcp_config.json"
    assert config_path("opencode") == home / ".config" / "opencode" / "opencode.json"
    assert config_path("codex") == home / ".codex" / "config.toml"
    monkeypatch.setenv("CODEX_HOME", str(home / "ch"))
    assert config_path("codex") == home / "ch" / "config.toml"


def test_claude_keeps_everything_else_and_replaces_only_its_entry(tmp_path: Path) -> None:
    path = _write(tmp_path / ".claude.json", CLAUDE_JSON)
    before = path.read_text()
    result = install("claude", command=CMD, path=path)
    data = json.loads(path.read_text())
    assert result.replaced and not result.created
    assert data["mcpServers"]["ask_fable"] == {"type": "stdio", "command": "ask-fable", "args": [], "env": {}}
    expected = json.loads(json.dumps(CLAUDE_JSON))
    expected["mcpServers"]["ask_fable"] = data["mcpServers"]["ask_fable"]
    assert data == expected
    assert result.backup is not None and result.backup.read_text() == before


def test_claude_http_entry_reads_the_key_from_the_environment(tmp_path: Path) -> None:
    path = _write(tmp_path / ".claude.json", CLAUDE_JSON)
    install("claude", http_url=URL, path=path, name="team_fable")
    entry = json.loads(path.read_text())["mcpServers"]["team_fable"]
    assert entry == {"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${ASK_FABLE_API_KEY}"}}
    assert "ask_fable" in json.loads(path.read_text())["mcpServers"]


@pytest.mark.parametrize(("client", "original", "stdio", "http_url_key"), [
    ("cursor", CURSOR_JSON, {"command": "ask-fable", "args": []}, "url"),
    ("windsurf", WINDSURF_JSON, {"command": "ask-fable", "args": []}, "serverUrl"),
])
def test_cursor_and_windsurf(tmp_path: Path, client: str, original: dict[str, Any], stdio: dict[str, Any],
                             http_url_key: str) -> None:
    path = _write(tmp_path / "mcp.json", original)
    first = install(client, command=CMD, path=path)
    data = json.loads(path.read_text())
    assert not first.replaced
    assert data["mcpServers"]["ask_fable"] == stdio
    for name, entry in original["mcpServers"].items():
        assert data["mcpServers"][name] == entry
    second = install(client, http_url=URL, path=path)
    data = json.loads(path.read_text())
    assert second.replaced
    assert data["mcpServers"]["ask_fable"][http_url_key] == URL
    assert data["mcpServers"]["ask_fable"]["headers"]["Authorization"] == "Bearer ${env:ASK_FABLE_API_KEY}"
    assert list(data["mcpServers"]) == [*original["mcpServers"], "ask_fable"]


def test_opencode_v1_layout(tmp_path: Path) -> None:
    path = _write(tmp_path / "opencode.json", OPENCODE_JSON)
    install("opencode", command=["python3", "-m", "ask_fable"], path=path)
    data = json.loads(path.read_text())
    assert data["mcp"]["ask_fable"] == {"type": "local", "command": ["python3", "-m", "ask_fable"],
                                        "enabled": True}
    assert data["mcp"]["everything"] == OPENCODE_JSON["mcp"]["everything"]
    others = {k: v for k, v in OPENCODE_JSON.items() if k != "mcp"}
    assert {k: v for k, v in data.items() if k != "mcp"} == others
    install("opencode", http_url=URL, path=path)
    remote = json.loads(path.read_text())["mcp"]["ask_fable"]
    assert remote == {"type": "remote", "url": URL, "enabled": True,
                      "headers": {"Authorization": "Bearer {env:ASK_FABLE_API_KEY}"}}


def test_opencode_v2_layout_goes_under_servers(tmp_path: Path) -> None:
    v2 = {"$schema": "https://opencode.ai/config.json",
          "mcp": {"servers": {"my-server": {"type": "local", "command": ["npx", "-y", "example"]}}}}
    path = _write(tmp_path / "opencode.json", v2)
    install("opencode", command=CMD, path=path)
    servers = json.loads(path.read_text())["mcp"]["servers"]
    assert servers["ask_fable"] == {"type": "local", "command": ["ask-fable"]}
    assert servers["my-server"] == v2["mcp"]["servers"]["my-server"]


def test_codex_replaces_its_table_and_keeps_the_rest_of_the_text(tmp_path: Path) -> None:
    path = _write(tmp_path / "config.toml", CODEX_TOML)
    result = install("codex", command=CMD, path=path)
    text = path.read_text()
    data = tomllib.loads(text)
    assert result.replaced
    assert data["mcp_servers"]["ask_fable"] == {"command": "ask-fable", "args": []}
    docs = {"command": "npx", "args": ["-y", "mcp-docs"], "env": {"DOCS_TOKEN": "abc"}}
    assert data["mcp_servers"]["docs"] == docs
    assert data["model"] == "gpt-5.6-sol" and data["profiles"]["fast"]["model"] == "gpt-5.6-mini"
    assert "# my codex settings" in text and "# keep this comment" in text
    assert "STALE" not in text and "old" not in text.replace("gpt", "")
    assert result.backup is not None and result.backup.read_text() == CODEX_TOML


def test_codex_http_entry_uses_a_bearer_token_variable(tmp_path: Path) -> None:
    path = _write(tmp_path / "config.toml", CODEX_TOML)
    install("codex", http_url=URL, path=path, key_env="TEAM_KEY")
    assert tomllib.loads(path.read_text())["mcp_servers"]["ask_fable"] == {
        "url": URL, "bearer_token_env_var": "TEAM_KEY"}


def test_codex_refuses_a_form_it_cannot_rewrite(tmp_path: Path) -> None:
    inline = 'model = "x"\n[mcp_servers]\nask_fable = { command = "old" }\n'
    path = _write(tmp_path / "config.toml", inline)
    with pytest.raises(BadArgs, match="by hand"):
        install("codex", command=CMD, path=path)
    assert path.read_text() == inline
    with pytest.raises(BadArgs, match="not valid TOML"):
        codex_document("model = = 1", "ask_fable", {"command": "x"})


@pytest.mark.parametrize("client", CLIENTS)
def test_a_missing_file_is_created(tmp_path: Path, client: str) -> None:
    path = tmp_path / "deep" / "dir" / f"{client}.conf"
    result = install(client, command=CMD, path=path)
    assert result.created and result.backup is None and path.exists()
    text = path.read_text()
    data = tomllib.loads(text) if client == "codex" else json.loads(text)
    assert data == (tomllib.loads(render_snippet(client, command=CMD)) if client == "codex"
                    else json.loads(render_snippet(client, command=CMD)))


@pytest.mark.parametrize("client", ["cursor", "opencode"])
def test_json_with_comments_is_left_untouched(tmp_path: Path, client: str) -> None:
    original = '{\n  // my servers\n  "mcpServers": {},\n}\n'
    path = _write(tmp_path / "cfg" / "c.json", original)
    with pytest.raises(BadArgs, match="by hand"):
        install(client, command=CMD, path=path)
    assert path.read_text() == original
    assert list(path.parent.iterdir()) == [path]


def test_snippets_parse_in_each_format() -> None:
    for client in CLIENTS:
        text = render_snippet(client, command=CMD, http_url=URL)
        data = tomllib.loads(text) if client == "codex" else json.loads(text)
        assert data
    assert json.loads(render_snippet("cursor", command=CMD)) == {"mcpServers": {"ask_fable": server_entry(
        "cursor", command=CMD)}}


def test_bad_names_and_clients_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BadArgs, match="known clients"):
        install("vim", path=tmp_path / "x")
    with pytest.raises(BadArgs, match="server name"):
        install("cursor", name="a b", path=tmp_path / "x")


def test_the_default_command_is_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from ask_fable.surface.client_setup import default_command

    script = tmp_path / "bin" / "ask-fable"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(script.parent))
    assert default_command() == [str(script)]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert default_command()[1:] == ["-m", "ask_fable"]
