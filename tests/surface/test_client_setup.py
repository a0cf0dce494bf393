"""``ask-fable init`` / ``config`` on real-shaped client config files, through the command's entry point
(and the installed command where what it writes as its own program is checked)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ask_fable.surface.client_merge import split_program
from ask_fable.surface.client_setup import CLIENTS, config_path, default_command
from tests.e2e.helpers import ask_fable_command, child_env, run_in_process

URL = "https://mcp.example.com/mcp"
ASK_FABLE = ask_fable_command()
#: What ``init`` writes as the stdio command when run as the installed console script.
PROGRAM = ASK_FABLE[0] if len(ASK_FABLE) == 1 else None

CLAUDE_JSON = {
    "numStartups": 42,
    "installMethod": "native",
    "autoUpdates": False,
    "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {"local-db": {"command": "db-mcp"}}}},
    "mcpServers": {
        "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
                   "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
        "ask_fable": {"type": "stdio", "command": "/old/venv/bin/python", "args": ["-m", "ask_fable",
                      "--toolsets", "all"], "env": {"ASK_FABLE_DEEPSEEK_API_KEY": "sk-user-own-key-123456"}},
    },
    "oauthAccount": {"emailAddress": "me@example.com"},
}
CURSOR_JSON = {"mcpServers": {
    "context7": {"url": "https://mcp.context7.com/mcp"},
    "ask_fable": {"command": "ask-fable", "args": ["--toolsets", "all"],
                  "env": {"ASK_FABLE_GLM_API_KEY": "g"}, "envFile": "${userHome}/.ask-fable.env"},
}}
WINDSURF_JSON = {"mcpServers": {
    "git": {"command": "uvx", "args": ["mcp-server-git"], "disabled": False, "env": {}},
    "ask_fable": {"command": "/old/ask-fable", "args": ["--toolsets", "all"], "disabled": False,
                  "env": {"ASK_FABLE_GLM_API_KEY": "g"}},
}}
OPENCODE_JSON = {
    "$schema": "https://opencode.ai/config.json",
    "theme": "opencode",
    "mcp": {
        "everything": {"type": "local", "enabled": True, "command": ["npx", "-y", "server-everything"]},
        "ask_fable": {"type": "local", "command": ["/old/ask-fable", "--toolsets", "all"], "enabled": False,
                      "environment": {"ASK_FABLE_GLM_API_KEY": "{env:GLM_KEY}"}, "timeout": 15000},
    },
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
# started by the IDE too
command = "/old/ask-fable"
args = ["--toolsets", "all"]
startup_timeout_sec = 30  # slow laptop

[mcp_servers.ask_fable.env]
ASK_FABLE_GLM_API_KEY = "g"

[profiles.fast]
model = "gpt-5.6-mini"
"""
ORIGINALS: dict[str, Any] = {"claude": CLAUDE_JSON, "cursor": CURSOR_JSON, "windsurf": WINDSURF_JSON,
                             "opencode": OPENCODE_JSON, "codex": CODEX_TOML}


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Start the installed ``ask-fable …`` as its own process."""
    return subprocess.run([*ASK_FABLE, *args], capture_output=True, text=True, timeout=60,
                          env=env or child_env(), stdin=subprocess.DEVNULL)


def init(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``ask-fable init …`` by the command's entry point, in this process."""
    return run_in_process(["init", *args], env or child_env())


def config(*args: str) -> subprocess.CompletedProcess[str]:
    """``ask-fable config …`` by the command's entry point, in this process."""
    return run_in_process(["config", *args], child_env())


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def load(client: str, path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if client == "codex" else json.loads(text)


def entry_of(client: str, data: dict[str, Any], name: str = "ask_fable") -> dict[str, Any]:
    if client == "opencode":
        servers = data["mcp"].get("servers", data["mcp"])
    else:
        servers = data["mcp_servers" if client == "codex" else "mcpServers"]
    return servers[name]


def backups(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(path.name + ".") and
                  p.name.endswith(".bak"))


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


# --- 1. re-running init keeps the user's data ------------------------------------------------------


@pytest.mark.skipif(PROGRAM is None, reason="needs the installed ask-fable console script")
@pytest.mark.parametrize("client", CLIENTS)
def test_rerunning_init_updates_the_command_and_keeps_env_options_and_other_fields(client: str) -> None:
    """The program is brought up to date; env keys, --toolsets and every other field stay."""
    path = write(config_path(client), ORIGINALS[client])
    before = path.read_bytes()
    out = ok(spawn("init", client))
    assert f"updated 'ask_fable' in {path}" in out
    assert "server options --toolsets all" in out
    assert backups(path) and backups(path)[0].read_bytes() == before
    data = load(client, path)
    entry = entry_of(client, data)
    if client == "opencode":
        assert entry["command"] == [PROGRAM, "--toolsets", "all"]
        assert entry["environment"] == {"ASK_FABLE_GLM_API_KEY": "{env:GLM_KEY}"}
        assert entry["enabled"] is False and entry["timeout"] == 15000
    else:
        assert [entry["command"], *entry["args"]] == [PROGRAM, "--toolsets", "all"]
        assert entry["env"] == entry_of(client, load(client, Path(backups(path)[0])))["env"]
    if client == "cursor":
        assert entry["envFile"] == "${userHome}/.ask-fable.env"
    if client == "windsurf":
        assert entry["disabled"] is False
    if client == "codex":
        assert entry["startup_timeout_sec"] == 30
    original = load(client, backups(path)[0])
    for other, value in (original["mcp"] if client == "opencode" else
                         original["mcp_servers" if client == "codex" else "mcpServers"]).items():
        if other != "ask_fable":
            assert entry_of(client, data, other) == value
    assert {k: v for k, v in data.items() if k not in ("mcp", "mcpServers", "mcp_servers")} == {
        k: v for k, v in original.items() if k not in ("mcp", "mcpServers", "mcp_servers")}


@pytest.mark.parametrize("client", CLIENTS)
def test_an_entry_already_up_to_date_is_left_alone_without_a_backup(client: str) -> None:
    """A second identical run writes nothing and says so."""
    path = config_path(client)
    ok(init(client, "--command", "ask-fable --toolsets all"))
    first = path.read_bytes()
    out = ok(init(client, "--command", "ask-fable"))
    assert "unchanged" in out and "nothing written" in out
    assert path.read_bytes() == first and backups(path) == []


@pytest.mark.parametrize("client", ["claude", "cursor", "windsurf", "opencode"])
def test_rerunning_http_init_keeps_the_users_other_headers(client: str) -> None:
    """Only Authorization (our variable reference) and the URL change; a team header stays."""
    path = config_path(client)
    ok(init(client, "--http", "https://old.example.com/mcp"))
    data = load(client, path)
    entry_of(client, data)["headers"]["X-Team"] = "blue"
    entry_of(client, data)["timeout"] = 20000
    write(path, data)
    out = ok(init(client, "--http", URL, "--key-env", "TEAM_KEY"))
    assert "kept your" in out and "headers" in out
    entry = entry_of(client, load(client, path))
    assert entry["headers"]["X-Team"] == "blue" and entry["timeout"] == 20000
    assert "TEAM_KEY" in entry["headers"]["Authorization"]
    assert entry.get("url", entry.get("serverUrl")) == URL


def test_codex_keeps_comments_and_other_tables_when_its_entry_moves_to_http() -> None:
    """tomlkit edits the table in place: comments, other servers and profiles survive."""
    text = CODEX_TOML.replace('[mcp_servers.ask_fable.env]\nASK_FABLE_GLM_API_KEY = "g"\n',
                              '[mcp_servers.ask_fable.http_headers]\nX-Team = "blue"\n')
    path = write(config_path("codex"), text)
    out = ok(init("codex", "--http", URL))
    assert "removed command, args" in out
    text = path.read_text()
    for kept in ("# my codex settings", "# keep this comment", "# started by the IDE too", "# slow laptop",
                 'DOCS_TOKEN = "abc"', "[profiles.fast]"):
        assert kept in text
    entry = tomllib.loads(text)["mcp_servers"]["ask_fable"]
    assert entry == {"url": URL, "bearer_token_env_var": "ASK_FABLE_API_KEY", "startup_timeout_sec": 30,
                     "http_headers": {"X-Team": "blue"}}


def test_codex_refuses_to_mix_stdio_env_into_an_http_entry() -> None:
    """Codex rejects `url` with `env`; init says what to remove and leaves the file as it was."""
    path = write(config_path("codex"), CODEX_TOML)
    result = init("codex", "--http", URL)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "env" in result.stderr and "another --name" in result.stderr
    assert path.read_text() == CODEX_TOML and backups(path) == []


def test_codex_appends_a_new_table_and_a_layout_spread_over_the_file_is_edited_right_or_refused() -> None:
    """A new entry is appended as its own table. An entry spread over the file in dotted keys is
    edited in place only when the result reads back as exactly the old settings with the entry
    replaced (tomlkit manages that for some layouts, depending on its version); otherwise init
    refuses with the table to paste by hand and leaves the file as it was. Never a wrong edit."""
    path = write(config_path("codex"), 'model = "gpt-5.6-sol"\n\n[profiles.fast]\nmodel = "mini"\n')
    ok(init("codex", "--command", "ask-fable"))
    assert tomllib.loads(path.read_text()) == {
        "model": "gpt-5.6-sol", "profiles": {"fast": {"model": "mini"}},
        "mcp_servers": {"ask_fable": {"command": "ask-fable", "args": []}}}
    dotted = ('[mcp_servers]\nask_fable.command = "old"\nask_fable.args = []\n[x]\ny = 1\n'
              '[mcp_servers.ask_fable.http_headers]\nA = "b"\n')
    write(path, dotted)
    result = init("codex", "--http", URL)
    assert "Traceback" not in result.stderr
    if result.returncode == 0:
        assert tomllib.loads(path.read_text()) == {
            "x": {"y": 1},
            "mcp_servers": {"ask_fable": {"url": URL, "bearer_token_env_var": "ASK_FABLE_API_KEY",
                                          "http_headers": {"A": "b"}}}}
    else:
        assert result.returncode == 1 and "by hand" in result.stderr
        assert "[mcp_servers.ask_fable]" in result.stderr
        assert path.read_text() == dotted


def test_switching_claude_from_stdio_to_http_keeps_env() -> None:
    path = write(config_path("claude"), CLAUDE_JSON)
    out = ok(init("claude", "--http", URL))
    assert "removed command, args" in out and "kept your env" in out
    entry = json.loads(path.read_text())["mcpServers"]["ask_fable"]
    assert entry == {"type": "http", "env": CLAUDE_JSON["mcpServers"]["ask_fable"]["env"], "url": URL,
                     "headers": {"Authorization": "Bearer ${ASK_FABLE_API_KEY}"}}


def test_opencode_v2_layout_goes_under_servers() -> None:
    v2 = {"$schema": "https://opencode.ai/config.json",
          "mcp": {"servers": {"my-server": {"type": "local", "command": ["npx", "-y", "example"]}}}}
    path = write(config_path("opencode"), v2)
    ok(init("opencode", "--command", "ask-fable"))
    servers = json.loads(path.read_text())["mcp"]["servers"]
    assert servers == {**v2["mcp"]["servers"], "ask_fable": {"type": "local", "command": ["ask-fable"]}}


@pytest.mark.parametrize("client", ["cursor", "opencode"])
def test_json_with_comments_is_left_untouched(tmp_path: Path, client: str) -> None:
    original = '{\n  // my servers\n  "mcpServers": {},\n}\n'
    path = write(tmp_path / "cfg" / "c.json", original)
    result = init(client, "--config-path", str(path))
    assert result.returncode == 1 and "by hand" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == original
    assert list(path.parent.iterdir()) == [path]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_missing_file_is_created_with_exactly_the_printed_snippet(tmp_path: Path, client: str) -> None:
    path = tmp_path / "deep" / "dir" / f"{client}.conf"
    out = ok(init(client, "--config-path", str(path), "--command", "ask-fable"))
    assert f"added 'ask_fable' to {path}" in out and "backup" not in out
    assert load(client, path) == (tomllib.loads if client == "codex" else json.loads)(
        ok(config(client, "--command", "ask-fable")))


# --- links and backups -----------------------------------------------------------------------------


def test_a_linked_config_is_written_through_and_stays_a_link(isolated_env: Path) -> None:
    """Dotfiles: the link survives, its target gets the entry, the backup stays beside the link."""
    dotfiles = isolated_env / "dotfiles" / "cursor"
    target = write(dotfiles / "mcp.json", CURSOR_JSON)
    link = config_path("cursor")
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(target, link.parent))
    out = ok(init("cursor", "--command", "/new/ask-fable"))
    assert f"a link: wrote {target}" in out
    assert link.is_symlink() and link.resolve() == target
    assert entry_of("cursor", json.loads(target.read_text()))["envFile"] == "${userHome}/.ask-fable.env"
    assert [p.name for p in dotfiles.iterdir()] == ["mcp.json"]
    assert len(backups(link)) == 1 and json.loads(backups(link)[0].read_text()) == CURSOR_JSON


def test_a_dangling_link_is_created_at_its_target(isolated_env: Path) -> None:
    target = isolated_env / "dotfiles" / "claude.json"
    target.parent.mkdir()
    link = config_path("claude")
    link.symlink_to(target)
    ok(init("claude", "--command", "ask-fable"))
    assert link.is_symlink()
    assert json.loads(target.read_text())["mcpServers"]["ask_fable"]["command"] == "ask-fable"


def test_only_the_newest_three_backups_are_kept_and_other_files_are_not_touched() -> None:
    path = write(config_path("cursor"), CURSOR_JSON)
    mine = write(path.with_name("mcp.json.mine.bak"), "{}")
    for index in range(5):
        ok(init("cursor", "--command", f"ask-fable --toolsets v{index}"))
    kept = backups(path)
    assert len([p for p in kept if p != mine]) == 3 and mine.exists()
    newest = max((p for p in kept if p != mine), key=lambda p: p.name)
    assert entry_of("cursor", json.loads(newest.read_text()))["args"] == ["--toolsets", "v3"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


# --- 3. errors are one line, never a traceback ------------------------------------------------------


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["config", "claude", "--name", "bad name"], 2, "server name 'bad name' must use letters"),
    (["init", "cursor", "--name", "bad name"], 2, "server name 'bad name' must use letters"),
    (["config", "--name", "a.b"], 2, "server name 'a.b'"),
    (["init", "cursor", "--config-path", "/proc/nope/x.json"], 1, "cannot write /proc/nope/x.json"),
    (["init", "claude", "--http", "mcp.example.com"], 2, "is not an http:// or https:// URL"),
    (["config", "codex", "--http", URL, "--key-env", "MY KEY"], 2, "is not an environment variable name"),
    (["init", "codex", "--command", "'unbalanced"], 2, "--command"),
    (["init", "codex", "--command", ""], 2, "--command is empty"),
])
def test_bad_input_gives_one_line_and_an_exit_code(argv: list[str], code: int, message: str) -> None:
    result = run_in_process(argv, child_env())
    assert result.returncode == code
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_an_unreadable_config_is_a_failed_write(tmp_path: Path) -> None:
    directory = tmp_path / "a-directory.json"
    directory.mkdir()
    result = init("cursor", "--config-path", str(directory))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"ask-fable: cannot read {directory}")


# --- the command written ---------------------------------------------------------------------------


def test_the_default_command_is_this_installs_absolute_program(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """Next to this Python first (a venv not on PATH), then PATH, then ``python -m ask_fable``."""
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"
    python.symlink_to(sys.executable)
    script = venv / "ask-fable"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert default_command() == [str(script)]
    script.unlink()
    elsewhere = tmp_path / "bin" / "ask-fable"
    elsewhere.parent.mkdir()
    elsewhere.write_text("#!/bin/sh\n")
    elsewhere.chmod(0o755)
    monkeypatch.setenv("PATH", str(elsewhere.parent))
    assert default_command() == [str(elsewhere)]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert default_command() == [str(python), "-m", "ask_fable"]


@pytest.mark.parametrize(("tail", "program", "options"), [
    (["-m", "ask_fable", "--toolsets", "all"], ["-m", "ask_fable"], ["--toolsets", "all"]),
    (["--toolsets", "all"], [], ["--toolsets", "all"]),
    (["--from", "/src/ask-fable", "ask-fable", "--quiet"], ["--from", "/src/ask-fable", "ask-fable"],
     ["--quiet"]),
    ([], [], []),
])
def test_server_options_are_told_apart_from_the_program(tail: list[str], program: list[str],
                                                        options: list[str]) -> None:
    assert split_program(tail) == (program, options)


def test_default_paths_follow_each_client(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = isolated_env
    assert config_path("claude") == home / ".claude.json"
    assert config_path("cursor") == home / ".cursor" / "mcp.json"
    assert config_path("windsurf") == home / ".codeium" / "windsurf" / "mcp_config.json"
    assert config_path("opencode") == home / ".config" / "opencode" / "opencode.json"
    assert config_path("codex") == home / ".codex" / "config.toml"
    monkeypatch.setenv("CODEX_HOME", str(home / "ch"))
    assert config_path("codex") == home / "ch" / "config.toml"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "cc"))
    assert config_path("claude") == home / "cc" / ".claude.json"


# --- line endings and empty files ---------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_a_config_file_with_crlf_line_endings_keeps_them_after_init(client: str) -> None:
    """A file saved on Windows (CRLF) is merged and written back with CRLF on every line, never a
    mix of CRLF and LF."""
    original = ORIGINALS[client]
    text = original if isinstance(original, str) else json.dumps(original, indent=2) + "\n"
    path = config_path(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", "\r\n").encode())
    ok(init(client))
    written = path.read_bytes()
    assert written.count(b"\n") == written.count(b"\r\n") > 3
    assert entry_of(client, load(client, path))  # still parses, with the entry in it
    ok(init(client))  # and a second run sees nothing to change
    assert path.read_bytes() == written


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("content", [b"", b"\n  \n"], ids=["empty", "blank"])
def test_init_on_an_existing_empty_file_writes_the_entry_without_a_backup(client: str,
                                                                         content: bytes) -> None:
    """An empty (or blank) config file holds nothing to restore: init fills it and keeps no backup."""
    path = config_path(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    out = ok(init(client))
    assert "backup" not in out
    assert backups(path) == []
    assert entry_of(client, load(client, path))
