"""What the README, the team-server page and the architecture map say about setting up and serving, the
code does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx2
import pytest

from tests.e2e.helpers import child_env

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEAM_SERVER = ROOT / "docs" / "team-server.md"
ACTIVATE = ". .venv/bin/activate"
#: README commands that only read or write local files (the rest call models or serve forever).
LOCAL_VERBS = ("init", "config", "keys", "tools", "doctor --no-probe", "--version", "trace", "context")


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", text, re.DOTALL)


def _floor() -> str:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    match = re.fullmatch(r">=\s*(\d+\.\d+)", requires)
    assert match, requires
    return match.group(1)


def test_the_python_floor_comes_before_the_first_command() -> None:
    """A reader learns the required Python before running anything, and it is pyproject's floor."""
    text = _readme()
    before_first_command = text[: text.index("```bash")]
    assert f"Python {_floor()} or newer" in before_first_command
    head = text.split("\n## ", 1)[0]
    assert "requires a different Python" in head, "the README says what an older Python shows"
    for command in _bash_blocks(head)[:2]:
        assert command.startswith("python3 -m venv --upgrade-deps .venv && .venv/bin/pip install -e ")


def _local_commands(text: str) -> list[str]:
    """Every ``ask-fable`` line of the README's shell blocks that runs without a model or a server."""
    lines = []
    for block in _bash_blocks(text):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command.startswith("ask-fable ") and command[len("ask-fable "):].startswith(LOCAL_VERBS):
                lines.append(command)
    return lines


def test_the_readme_commands_run_as_written_after_its_activation_line(tmp_path: Path) -> None:
    """In a new shell that knows nothing of the venv, the README's activation line puts ``ask-fable``
    on PATH, and the README's and the team-server page's commands then run as written, in order
    (registering a client and making keys included); the key limits example edits the key it means."""
    text = _readme()
    head = text.split("\n## ", 1)[0]
    assert ACTIVATE in _bash_blocks(head), "the set-up says how to put ask-fable on PATH"
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".venv").symlink_to(Path(sys.executable).parent.parent)
    env = child_env(PATH="/usr/bin:/bin", ASK_FABLE_API_KEY="afk_example")
    env.pop("VIRTUAL_ENV", None)
    commands = _local_commands(text) + _local_commands(TEAM_SERVER.read_text(encoding="utf-8"))
    assert any(c.startswith("ask-fable init claude") for c in commands), commands
    assert any(c.startswith("ask-fable keys create") for c in commands), commands

    def in_new_shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", f"{ACTIVATE} && {command}"], cwd=checkout, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    bare = subprocess.run(["bash", "-c", "command -v ask-fable"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert bare.returncode != 0, "the test shell must start without ask-fable on PATH"
    found = in_new_shell("command -v ask-fable")
    assert found.returncode == 0 and Path(found.stdout.strip()).is_absolute()
    for command in commands:
        result = in_new_shell(command)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    registered = (Path(env["HOME"]) / ".claude.json").read_text()
    assert "ask_fable" in registered
    listed = in_new_shell("ask-fable keys list --json")
    limits = {key["name"]: key["limits"] for key in json.loads(listed.stdout)}
    assert limits["ci"]["daily_usd"] == 20, "the `keys update` example edits the key it made for ci"
    assert limits["ops"]["daily_usd"] is None, "the `keys update` example leaves the admin key alone"


@pytest.mark.slow
def test_an_older_python_is_told_at_once_which_python_it_needs(tmp_path: Path) -> None:
    """The README's install line run by Python 3.10 names the version floor, not a missing httpx2.

    Needs a ``python3.10`` interpreter and the package registry (pip is upgraded in the venv).
    """
    found = shutil.which("python3.10")
    probe = subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True,
                           check=False) if found else None
    if probe is None or probe.returncode != 0:
        pytest.skip("no Python 3.10 interpreter here")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(probe.stdout.strip())
    checkout = tmp_path / "checkout"
    skip = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info")
    shutil.copytree(ROOT, checkout, ignore=skip)
    install = _bash_blocks(_readme())[0]
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    result = subprocess.run(["bash", "-c", install], cwd=checkout, env=env, capture_output=True, text=True,
                            timeout=900, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "requires a different Python: 3.10" in output and f"'>={_floor()}'" in output
    assert "httpx2" not in output


def test_mcp_over_http_is_what_the_team_server_page_says() -> None:
    """POST: one JSON body and no session; GET and DELETE: 405, only POST is allowed."""
    from ask_fable.config import load_settings
    from ask_fable.core.app import App
    from ask_fable.stores.keys import KeyStore
    from ask_fable.surface.http_app import HttpOptions, build_http_app
    from ask_fable.surface.http_runner import serve_in_thread
    from ask_fable.surface.server import build_server

    text = " ".join(TEAM_SERVER.read_text(encoding="utf-8").split())
    assert "Each POST is answered with one JSON body" in text and "(no `Mcp-Session-Id`)" in text
    assert "Every other method on `/mcp` is refused (405, `Allow: POST`)" in text
    keys = KeyStore(load_settings().keys_db)
    _, key = keys.create("docs", "ask")
    headers = {"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-11-25"}
    app = build_http_app(build_server(App()), keys, HttpOptions(port=0))
    with serve_in_thread(app) as base, httpx2.Client(base_url=base, headers=headers, timeout=30) as client:
        posted = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Accept": "application/json, text/event-stream"})
        got = client.get("/mcp", headers={"Accept": "text/event-stream"})
        deleted = client.delete("/mcp")
    assert posted.status_code == 200 and posted.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in posted.headers and posted.json()["result"]["tools"]
    assert (got.status_code, got.headers["allow"]) == (405, "POST")
    assert (deleted.status_code, deleted.headers["allow"]) == (405, "POST")


def test_the_architecture_map_names_every_module() -> None:
    """Each module under src/ask_fable appears in docs/architecture.md (the converse of test_docs')."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "src" / "ask_fable"
    # Alembic revisions are named by the history itself (stores/migrations/versions/), one per change.
    modules = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                     if path.name != "__init__.py" and path.parent.name != "versions")
    unnamed = [module for module in modules if f"`{module}`" not in text]
    assert not unnamed, f"docs/architecture.md does not name {unnamed}"


def test_every_module_the_architecture_map_names_exists() -> None:
    """A module named in docs/architecture.md (``core/pipeline.py``, or ``core/quotas.admit`` for one
    of its functions) is in the tree: under src/ask_fable, or, for tests and benchmarks, the repository."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "src" / "ask_fable"
    files = set(re.findall(r"`([\w/]+\.py)`", text))
    layered = {f"{name}.py" for name in re.findall(r"`((?:surface|core|backends|stores)/[\w/]+)\.\w+", text)}
    missing = sorted(name for name in files | layered
                     if not (package / name).is_file() and not (ROOT / name).is_file())
    assert files and not missing, f"docs/architecture.md names modules that do not exist: {missing}"
