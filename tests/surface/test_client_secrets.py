"""A registration printed or written by ``init`` / ``config`` names the API key, never holds it.

The printed ``claude mcp add`` line is run the way a user runs it, pasted into a shell that has the
key exported, with the real Claude Code CLI: the file it writes must hold the variable reference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ask_fable.surface.client_setup import CLIENTS, config_path
from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env

SECRET = "afk_planted0secret0value0do0not0store"
URL = "https://ask-fable.internal.example/mcp"
CLAUDE = bundled_claude_cli()
#: How each client's file refers to the key (see each client's MCP config documentation).
REFERENCE = {
    "claude": "Bearer ${ASK_FABLE_API_KEY}",
    "cursor": "Bearer ${env:ASK_FABLE_API_KEY}",
    "windsurf": "Bearer ${env:ASK_FABLE_API_KEY}",
    "opencode": "Bearer {env:ASK_FABLE_API_KEY}",
    "codex": '"ASK_FABLE_API_KEY"',
}


def ask_fable(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``ask-fable ARGS`` by the command's entry point, in this process (what it prints and writes)."""
    result = run_in_process(args, env)
    assert result.returncode == 0, result.stderr
    return result


def printed(text: str, prefix: str) -> str:
    """The one command line that follows ``prefix`` in ``text``."""
    line = next(line for line in text.splitlines() if line.startswith(prefix))
    return line[len(prefix):].removesuffix(")")


def shell(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``command`` pasted into bash, as a user would."""
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


def bin_with(tmp_path: Path, name: str, target: str | Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    (folder / name).symlink_to(target)
    return folder


@pytest.mark.skipif(CLAUDE is None, reason="claude-agent-sdk ships no Claude Code CLI here")
def test_the_printed_claude_command_keeps_the_key_out_of_claude_json(tmp_path: Path,
                                                                     fp: FakeProvider) -> None:
    """init and config print `claude mcp add … --header '…${ASK_FABLE_API_KEY}'`; run in a shell
    holding the key, the real CLI stores the reference, and init's own file never holds the key."""
    env = child_env(ASK_FABLE_API_KEY=SECRET)
    init = ask_fable("init", "claude", "--http", URL, env=env)
    assert SECRET not in init.stdout + init.stderr
    written = config_path("claude").read_text()
    assert SECRET not in written and REFERENCE["claude"] in written
    from_init = printed(init.stdout, "(equivalent: ")
    from_config = printed(ask_fable("config", "claude", "--http", URL, env=env).stderr, "or run: ")
    assert from_init == from_config and from_init.startswith("claude mcp add ")
    assert CLAUDE is not None
    path = f"{bin_with(tmp_path, 'claude', CLAUDE)}:/usr/bin:/bin"
    for index, command in enumerate((from_init, from_config)):
        home = tmp_path / f"claude-home-{index}"
        cli_env = {**claude_cli_env(fp.base_url, home), "PATH": path, "ASK_FABLE_API_KEY": SECRET}
        result = shell(command, cli_env)
        assert result.returncode == 0, result.stderr
        stored = (home / ".claude.json").read_text()
        assert SECRET not in stored
        server = json.loads(stored)["mcpServers"]["ask_fable"]
        assert server["url"] == URL and server["headers"] == {"Authorization": REFERENCE["claude"]}


@pytest.mark.skipif(CLAUDE is None, reason="claude-agent-sdk ships no Claude Code CLI here")
def test_claude_sends_the_key_it_reads_from_its_environment_for_the_entry_init_wrote(
        fp: FakeProvider) -> None:
    """The variable reference works: the real CLI expands it when it contacts the server."""
    fp.set_json("POST", "/mcp", {"error": "unauthorized"}, status=401)
    ask_fable("init", "claude", "--http", f"{fp.base_url}/mcp", env=child_env())
    home = config_path("claude").parent
    assert CLAUDE is not None
    env = {**claude_cli_env(fp.base_url, home), "PATH": "/usr/bin:/bin", "ASK_FABLE_API_KEY": SECRET}
    subprocess.run([str(CLAUDE), "mcp", "get", "ask_fable"], capture_output=True, text=True, timeout=120,
                   env=env, stdin=subprocess.DEVNULL, cwd=home)
    sent = [r.headers.get("authorization") for r in fp.requests if r.path.startswith("/mcp")]
    assert sent and set(sent) == {f"Bearer {SECRET}"}
    assert SECRET not in config_path("claude").read_text()


@pytest.mark.parametrize("client", CLIENTS)
def test_init_and_config_write_each_clients_variable_reference(client: str) -> None:
    env = child_env(ASK_FABLE_API_KEY=SECRET)
    init = ask_fable("init", client, "--http", URL, env=env)
    snippet = ask_fable("config", client, "--http", URL, env=env)
    written = config_path(client).read_text()
    for text in (written, snippet.stdout, snippet.stderr, init.stdout, init.stderr):
        assert SECRET not in text
    assert REFERENCE[client] in written and REFERENCE[client] in snippet.stdout
    if client == "codex":
        entry = tomllib.loads(written)["mcp_servers"]["ask_fable"]
        assert entry["bearer_token_env_var"] == "ASK_FABLE_API_KEY"


ARGV_DUMP = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["ARGV_OUT"], "w") as out:
    json.dump(sys.argv[1:], out)
"""


@pytest.mark.parametrize(("client", "flags", "expected_tail"), [
    ("codex", ["--http", URL], ["--url", URL, "--bearer-token-env-var", "ASK_FABLE_API_KEY"]),
    ("codex", ["--command", "'/opt/my tools/ask-fable' --toolsets all"],
     ["--", "/opt/my tools/ask-fable", "--toolsets", "all"]),
    ("claude", ["--command", "'/opt/my tools/ask-fable' --toolsets 'a;b'"],
     ["--", "/opt/my tools/ask-fable", "--toolsets", "a;b"]),
])
def test_printed_commands_reach_the_client_word_for_word(tmp_path: Path, client: str, flags: list[str],
                                                         expected_tail: list[str]) -> None:
    """Run through a real shell, the printed line hands the client exactly the intended words."""
    fake = tmp_path / "client"
    fake.write_text(ARGV_DUMP)
    fake.chmod(0o755)
    env = child_env(ASK_FABLE_API_KEY=SECRET)
    line = printed(ask_fable("config", client, *flags, env=env).stderr, "or run: ")
    out = tmp_path / "argv.json"
    run_env = {**os.environ, "PATH": f"{bin_with(tmp_path, client, fake)}:/usr/bin:/bin",
               "ARGV_OUT": str(out), "ASK_FABLE_API_KEY": SECRET}
    result = shell(line, run_env)
    assert result.returncode == 0, result.stderr
    argv = json.loads(out.read_text())
    assert argv[-len(expected_tail):] == expected_tail and SECRET not in json.dumps(argv)


ROOT = Path(__file__).resolve().parents[2]


def documented_claude_commands(docs: tuple[str, ...] = ("README.md", "docs/GUIDE.md")) -> list[str]:
    """``claude mcp add`` lines from the shell blocks of ``docs`` (the README's and the guide's)."""
    lines = []
    for doc in (ROOT / name for name in docs):
        lines += [line.strip() for line in doc.read_text(encoding="utf-8").splitlines()
                  if line.strip().startswith("claude mcp add ")]
    return lines


@pytest.mark.skipif(CLAUDE is None, reason="claude-agent-sdk ships no Claude Code CLI here")
@pytest.mark.skipif(len(ask_fable_command()) != 1, reason="needs the installed ask-fable console script")
@pytest.mark.parametrize("command", documented_claude_commands())
def test_documented_claude_commands_register_the_absolute_program_and_no_key(
        tmp_path: Path, fp: FakeProvider, command: str) -> None:
    """Pasted into a shell holding the keys, each documented line registers ask-fable by its full path
    and leaves only variable references in Claude Code's file."""
    assert CLAUDE is not None
    program = Path(ask_fable_command()[0])
    home = tmp_path / "claude-home"
    env = {**claude_cli_env(fp.base_url, home),
           "PATH": f"{bin_with(tmp_path, 'claude', CLAUDE)}:{program.parent}:/usr/bin:/bin",
           "DEEPSEEK_API_KEY": SECRET, "ASK_FABLE_API_KEY": SECRET}
    result = shell(command, env)
    assert result.returncode == 0, result.stderr
    stored = (home / ".claude.json").read_text()
    assert SECRET not in stored
    entry = json.loads(stored)["mcpServers"]["ask_fable"]
    assert entry["command"] == str(program)


@pytest.mark.skipif(CLAUDE is None, reason="claude-agent-sdk ships no Claude Code CLI here")
@pytest.mark.skipif(len(ask_fable_command()) != 1, reason="needs the installed ask-fable console script")
@pytest.mark.parametrize("command", documented_claude_commands(("README.md",)))
def test_documented_claude_commands_work_without_a_global_claude_code(
        tmp_path: Path, fp: FakeProvider, command: str) -> None:
    """On a machine with no ``claude`` on PATH, the README's way round (``ask-fable`` in front of the
    line) registers the same entry through the Claude Code inside the install."""
    program = Path(ask_fable_command()[0])
    home = tmp_path / "claude-home"
    env = {**claude_cli_env(fp.base_url, home), "PATH": f"{program.parent}:/usr/bin:/bin",
           "DEEPSEEK_API_KEY": SECRET}
    assert shell("command -v claude", env).returncode != 0, "the test shell must have no global claude"
    result = shell(f"ask-fable {command}", env)
    assert result.returncode == 0, result.stderr
    stored = (home / ".claude.json").read_text()
    assert SECRET not in stored
    assert json.loads(stored)["mcpServers"]["ask_fable"]["command"] == str(program)


def test_the_readme_says_how_to_run_its_claude_lines_without_claude_code() -> None:
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "without a global Claude Code install, put `ask-fable ` in front of each line below" in text
