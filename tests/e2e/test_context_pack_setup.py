"""context pack before a project root is set: the fix it names fits where the user is. From the
``ask-fable context pack`` command there is no server to restart: set the root and run the command
again. To an MCP client: the config file's ``project_root`` applies to the running server at once,
which the server then shows by packing without a restart."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcp import Client

from ask_fable.config import config_file_path
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.e2e.helpers import ask_fable_command, child_env, run_in_process, structured


def test_the_command_says_to_set_the_root_and_run_it_again(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("the lock order is a, then b\n", encoding="utf-8")
    done = subprocess.run([*ask_fable_command(), "context", "pack", "k", "--paths", "notes.md"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=child_env(), cwd=tmp_path)
    assert done.returncode == 1
    hint = next(line for line in done.stderr.splitlines() if line.startswith("hint: "))
    assert "restart" not in hint and "server" not in hint
    assert "export ASK_FABLE_PROJECT_ROOT=" in hint and "run the command again" in hint
    assert str(config_file_path()) in hint
    root = child_env(ASK_FABLE_PROJECT_ROOT=str(tmp_path))
    again = run_in_process(["context", "pack", "k", "--paths", "notes.md", "--json"], root)
    assert again.returncode == 0, again.stderr
    assert [f["path"] for f in json.loads(again.stdout)["files"]] == ["notes.md"]


async def test_a_server_names_the_config_file_setting_it_applies_without_a_restart(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("the lock order is a, then b\n", encoding="utf-8")
    app = App()
    try:
        async with Client(build_server(app, toolsets=["context"])) as client:
            refused = await structured(client, "context_pack", {"key": "k", "paths": ["notes.md"]})
            config = config_file_path()
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(json.dumps({"project_root": str(tmp_path)}), encoding="utf-8")
            packed = await structured(client, "context_pack", {"key": "k", "paths": ["notes.md"]})
    finally:
        await app.aclose()
    assert refused["kind"] == "not_configured"
    assert f"set project_root in {config}" in refused["hint"] and "no restart" in refused["hint"]
    assert "run the command again" not in refused["hint"]
    assert packed["status"] == "ok" and [f["path"] for f in packed["files"]] == ["notes.md"]
