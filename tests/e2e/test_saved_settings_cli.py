"""The settings ``configure_*`` tools saved to a team's shared database, as an admin meets them at the
installed ``ask-fable`` command: ``doctor`` reports the values the servers run with (saved ones
included, each named as coming from the database, with the hand-set value it hides), and ``ask-fable
db settings`` lists them and forgets them, which every running server picks up as it picks up a save."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from pathlib import Path

import anyio
import pytest

from ask_fable.stores.db import database_for
from ask_fable.stores.engines import Engines
from ask_fable.stores.saved_settings import SettingsStore
from tests.conftest import StoreBackend
from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.postgres import PostgresServer

#: The tests that need a shared database run on a fresh PostgreSQL one.
ON_POSTGRES = pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)

PASSWORD = "pg-secret-0123456789"


def _save(url: str, updates: dict[str, object], tenant: str = "team") -> None:
    """What a ``configure_*`` tool does on some replica: save to the shared database."""
    from ask_fable.config import load_settings

    engines = Engines()
    store = SettingsStore(database_for(load_settings(database_url=url), "settings", None, engines=engines))
    try:
        store.save(updates, tenant)
    finally:
        engines.close()


def _config(tmp_path: Path, values: dict[str, object]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(values), encoding="utf-8")
    return path


def _env(url: str, config: Path, **env: str) -> dict[str, str]:
    return child_env(ASK_FABLE_DATABASE_URL=url, ASK_FABLE_CONFIG_FILE=str(config), **env)


def _run(url: str, config: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    done = run_in_process(args, _env(url, config, **env))
    assert "Traceback" not in done.stdout + done.stderr
    return done


def _spawn(url: str, config: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process: another machine's command line, or all a
    process prints on stderr (log lines of the libraries included)."""
    done = subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=_env(url, config, **env))
    assert "Traceback" not in done.stdout + done.stderr
    return done


@ON_POSTGRES
def test_doctor_reports_the_saved_settings_the_servers_run_with_and_the_hand_set_values_they_hide(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    """A council default model saved through a replica overrides the config file's: doctor shows the
    saved model for Ollama, lists each saved value as coming from the database (who saved it, when),
    and says which config-file or environment value it hides; an unshadowed saved value says nothing
    of the kind."""
    assert store_backend.url
    _save(store_backend.url, {"ollama_model": "glm-5.2:cloud", "trace_mode": "full"})
    config = _config(tmp_path, {"ollama_model": "qwen3:8b"})
    done = _run(store_backend.url, config, "doctor", "--no-probe", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    ollama = next(b for b in report["backends"] if b["name"] == "ollama")
    assert ollama["model"] == "glm-5.2:cloud"
    saved = {item["setting"]: item for item in report["saved_settings"]}
    assert set(saved) == {"ollama_model", "trace_mode"}
    assert saved["ollama_model"]["value"] == "glm-5.2:cloud" and saved["ollama_model"]["saved_by"] == "team"
    assert saved["ollama_model"]["shadows"] == {"source": f"config file {config}", "value": "qwen3:8b"}
    assert saved["trace_mode"]["shadows"] is None
    assert isinstance(saved["trace_mode"]["saved_at"], str) and "T" in saved["trace_mode"]["saved_at"]

    text = _run(store_backend.url, config, "doctor", "--no-probe")
    assert text.returncode == 0
    out = text.stdout
    assert "saved settings (in the shared database" in out
    assert "ollama_model = glm-5.2:cloud" in out and "saved by tenant 'team'" in out
    assert f"hides qwen3:8b from config file {config}" in out
    assert "ask-fable db settings --forget ollama_model" in out
    assert PASSWORD not in out


@ON_POSTGRES
def test_a_saved_value_hiding_an_environment_variable_is_named_with_the_variable(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    assert store_backend.url
    _save(store_backend.url, {"trace_mode": "full"})
    done = _run(store_backend.url, tmp_path / "none.json", "doctor", "--no-probe", "--json",
                ASK_FABLE_TRACE_MODE="safe")
    saved = {item["setting"]: item for item in json.loads(done.stdout)["saved_settings"]}
    assert saved["trace_mode"]["shadows"] == {"source": "ASK_FABLE_TRACE_MODE", "value": "safe"}


@ON_POSTGRES
def test_db_settings_lists_each_saved_value_with_who_saved_it_and_when(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    assert store_backend.url
    config = _config(tmp_path, {"openrouter_effort": "quick"})
    empty = _run(store_backend.url, config, "db", "settings")
    assert empty.returncode == 0 and "no saved settings" in empty.stdout
    _save(store_backend.url, {"openrouter_council": ["a/x", "b/y"], "openrouter_effort": "deep"}, "ops")
    listed = _run(store_backend.url, config, "db", "settings")
    assert listed.returncode == 0, listed.stderr
    assert "openrouter_council = a/x, b/y" in listed.stdout
    assert "openrouter_effort = deep" in listed.stdout
    assert f"hides quick from config file {config}" in listed.stdout
    assert "saved by tenant 'ops'" in listed.stdout
    as_json = json.loads(_run(store_backend.url, config, "db", "settings", "--json").stdout)
    names = [item["setting"] for item in as_json["saved_settings"]]
    assert names == ["openrouter_council", "openrouter_effort"]
    assert as_json["saved_settings"][0]["value"] == ["a/x", "b/y"]


@ON_POSTGRES
def test_forgetting_a_saved_setting_lets_the_hand_edited_value_apply_again(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    """``db settings --forget NAME`` (any spelling the config file accepts) removes it: doctor then
    shows the config file's value, and the other saved values stay."""
    assert store_backend.url
    _save(store_backend.url, {"ollama_model": "glm-5.2:cloud", "trace_mode": "full"})
    config = _config(tmp_path, {"ollama_model": "qwen3:8b"})
    forgot = _run(store_backend.url, config, "db", "settings", "--forget", "ASK_FABLE_OLLAMA_MODEL")
    assert forgot.returncode == 0, forgot.stderr
    assert "forgot ollama_model" in forgot.stdout and "qwen3:8b from config file" in forgot.stdout
    report = json.loads(_run(store_backend.url, config, "doctor", "--no-probe", "--json").stdout)
    assert next(b for b in report["backends"] if b["name"] == "ollama")["model"] == "qwen3:8b"
    assert [item["setting"] for item in report["saved_settings"]] == ["trace_mode"]
    everything = _run(store_backend.url, config, "db", "settings", "--forget-all")
    assert everything.returncode == 0 and "forgot trace_mode" in everything.stdout
    left = json.loads(_run(store_backend.url, config, "db", "settings", "--json").stdout)
    assert left["saved_settings"] == []


@ON_POSTGRES
def test_forgetting_a_setting_that_is_not_saved_is_one_line_naming_what_is(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    assert store_backend.url
    _save(store_backend.url, {"trace_mode": "full"})
    config = tmp_path / "none.json"
    for name, said in (("ollama_model", "ollama_model is not saved in the database; saved: trace_mode"),
                       ("olama_model", "unknown setting 'olama_model' (did you mean 'ollama_model'?)")):
        done = _run(store_backend.url, config, "db", "settings", "--forget", name)
        assert done.returncode == 1 and said in done.stderr and done.stdout == "", done.stderr
    both = _run(store_backend.url, config, "db", "settings", "--forget", "trace_mode", "--forget-all")
    assert both.returncode == 2 and "not allowed with" in both.stderr


@ON_POSTGRES
async def test_a_running_server_drops_a_forgotten_setting_as_it_applies_a_save(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    """A server listening on the database runs with the saved trace mode; forgotten from another
    machine's command line, the server runs with its own environment's value again, without a
    restart."""
    from ask_fable.core.app import App

    assert store_backend.url
    _save(store_backend.url, {"trace_mode": "full"})
    app = App()
    try:
        assert app.settings.trace_mode == "full"
        url, config = store_backend.url, tmp_path / "none.json"
        done = await anyio.to_thread.run_sync(
            lambda: _spawn(url, config, "db", "settings", "--forget", "trace_mode"))
        assert done.returncode == 0, done.stderr
        with anyio.fail_after(10):
            while app.settings.trace_mode != "safe":
                await anyio.sleep(0.05)
    finally:
        await app.aclose()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_with_a_database_that_does_not_answer_doctor_says_saved_settings_are_unknown_and_db_settings_fails(
    tmp_path: Path
) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://ask:{PASSWORD}@127.0.0.1:{_closed_port()}/ask_fable"
    config = tmp_path / "none.json"
    doctor = _spawn(url, config, "doctor", "--no-probe", ASK_FABLE_DATABASE_CONNECT_TIMEOUT="1")
    assert doctor.returncode == 0
    assert "saved settings: not read" in doctor.stdout and "unavailable" in doctor.stdout
    assert doctor.stderr == ""  # the driver's own connection warnings stay out of a command's output
    listed = _spawn(url, config, "db", "settings", ASK_FABLE_DATABASE_CONNECT_TIMEOUT="1")
    assert listed.returncode == 1 and "unavailable" in listed.stderr
    assert PASSWORD not in doctor.stdout + doctor.stderr + listed.stdout + listed.stderr
    for args in (["db", "settings"], ["keys", "list"], ["trace", "list"]):
        done = _spawn(url, config, *args, ASK_FABLE_DATABASE_CONNECT_TIMEOUT="1")
        assert done.returncode == 1
        assert "error connecting" not in done.stderr + done.stdout, args


def test_without_a_shared_database_db_settings_points_at_the_config_file(tmp_path: Path) -> None:
    config = _config(tmp_path, {"trace_mode": "full"})
    env = child_env(ASK_FABLE_CONFIG_FILE=str(config))
    done = run_in_process(["db", "settings"], env)
    assert done.returncode == 0 and f"the configure tools save to the config file {config}" in done.stdout
    forget = run_in_process(["db", "settings", "--forget", "trace_mode"], env)
    assert forget.returncode == 1 and str(config) in forget.stderr
    assert json.loads(config.read_text()) == {"trace_mode": "full"}


@ON_POSTGRES
def test_a_saved_value_that_cannot_be_used_is_reported_by_the_commands_that_read_settings(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    """A saved value that no longer validates is named once on stderr as coming from the database, in
    doctor's settings problems, and the next source's value is what doctor shows."""
    assert store_backend.url
    _save(store_backend.url, {"trace_mode": "loud"})
    done = _run(store_backend.url, tmp_path / "none.json", "doctor", "--no-probe", "--json")
    assert done.returncode == 0
    named = [line for line in done.stderr.splitlines() if "trace_mode from the database" in line]
    assert len(named) == 1, done.stderr
    problems = json.loads(done.stdout)["settings_problems"]
    assert [p["setting"] for p in problems] == ["trace_mode"] and "database" in problems[0]["source"]
    saved = json.loads(done.stdout)["saved_settings"]
    assert saved[0]["setting"] == "trace_mode" and saved[0]["in_force"] is False


def test_on_a_database_not_upgraded_yet_admin_commands_name_the_upgrade_once_and_nothing_else(
    pg_server: PostgresServer, tmp_path: Path
) -> None:
    """A schema behind this release is not an unreachable database: ``db settings`` and ``keys list``
    say to run ``ask-fable db upgrade`` (once), in one line, exit 1."""
    url = pg_server.empty_database()
    try:
        for args in (["db", "settings"], ["keys", "list"]):
            done = _run(url, tmp_path / "none.json", *args)
            assert done.returncode == 1, done.stderr
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].count("ask-fable db upgrade") == 1, done.stderr
            assert "unreachable" not in done.stderr
    finally:
        pg_server.drop(url)


@ON_POSTGRES
async def test_the_diagnose_tool_reports_the_saved_settings_as_doctor_does(
    store_backend: StoreBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MCP client asking a server on the shared database gets what ``ask-fable doctor`` prints: the
    saved Ollama model in the backend's row, and each saved value with who saved it, when, and the
    config-file value it hides, in the same form as doctor's JSON."""
    from mcp import Client

    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server
    from tests.e2e.helpers import structured

    assert store_backend.url
    _save(store_backend.url, {"ollama_model": "glm-5.2:cloud", "trace_mode": "full"})
    config = _config(tmp_path, {"ollama_model": "qwen3:8b"})
    monkeypatch.setenv("ASK_FABLE_CONFIG_FILE", str(config))
    app = App()
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            result = await structured(client, "diagnose", {"probe": False})
    finally:
        await app.aclose()
    doctor = json.loads(_spawn(store_backend.url, config, "doctor", "--no-probe", "--json").stdout)
    assert result["status"] == "ok"
    assert next(b for b in result["backends"] if b["name"] == "ollama")["model"] == "glm-5.2:cloud"
    as_doctor = [{k: v for k, v in item.items() if v is not None} for item in doctor["saved_settings"]]
    assert result["saved_settings"] == as_doctor  # a result leaves out what is null
    saved = {item["setting"]: item for item in result["saved_settings"]}
    assert saved["ollama_model"]["shadows"] == {"source": f"config file {config}", "value": "qwen3:8b"}
    assert saved["trace_mode"]["saved_by"] == "team" and saved["trace_mode"]["in_force"] is True
    assert result.get("saved_settings_unread") is None


async def test_diagnose_on_a_database_that_does_not_answer_says_the_saved_settings_were_not_read(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backends are still diagnosed; the result says why the saved settings are missing from it,
    naming no credential."""
    from mcp import Client

    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server
    from tests.e2e.helpers import structured

    pytest.importorskip("psycopg")
    monkeypatch.setenv("ASK_FABLE_DATABASE_URL", f"postgresql://ask:{PASSWORD}@127.0.0.1:{_closed_port()}/x")
    monkeypatch.setenv("ASK_FABLE_DATABASE_CONNECT_TIMEOUT", "1")
    app = App()
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            result = await structured(client, "diagnose", {"probe": False, "backends": ["glm"]})
    finally:
        await app.aclose()
    assert result["status"] == "ok" and [b["name"] for b in result["backends"]] == ["glm"]
    assert "the PostgreSQL database is unavailable" in result["saved_settings_unread"]
    assert not result.get("saved_settings")
    assert PASSWORD not in json.dumps(result)


def _listeners() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ask-fable-listen-") and t.is_alive()]


@ON_POSTGRES
@pytest.mark.parametrize("args", [["keys", "list"], ["context", "list"]])
def test_a_command_on_a_shared_database_stops_listening_for_settings_when_it_ends(
    store_backend: StoreBackend, tmp_path: Path, args: list[str]
) -> None:
    """A command (an admin one, a tool one) that read the shared settings leaves no listener behind:
    whatever runs it in a longer-lived process is not left with a thread reconnecting forever."""
    assert store_backend.url
    _save(store_backend.url, {"trace_mode": "full"})
    before = set(_listeners())
    done = _run(store_backend.url, tmp_path / "none.json", *args)
    assert done.returncode == 0, done.stderr
    for thread in set(_listeners()) - before:
        thread.join(timeout=5)
    assert set(_listeners()) - before == set()
