"""The installed ``ask-fable`` command on the edges a new user meets: a state directory it cannot use,
odd option values. One clear line and a non-zero exit where it cannot proceed, never a traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    return run_in_process(args, child_env(**env))


def _spawn(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process (a server's start)."""
    return subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=child_env(**env))


#: Commands that need the stores, and so cannot proceed without a usable state directory.
NEEDS_STORES = [
    ["keys", "list"],
    ["keys", "create", "--name", "alice"],
    ["db", "upgrade"],
    ["trace", "list"],
    ["context", "list"],
]


@pytest.mark.parametrize("args", NEEDS_STORES, ids=[" ".join(a) for a in NEEDS_STORES])
def test_a_state_directory_that_cannot_be_used_is_one_clear_line(args: list[str], tmp_path: Path) -> None:
    """XDG_STATE_HOME is a file: the command exits 1 with the path and the fix, no traceback."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory should go\n")
    done = _run(*args, XDG_STATE_HOME=str(blocker))
    print(args, done.returncode, done.stdout[-400:], done.stderr[-1200:])
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    shown = done.stderr + done.stdout
    assert str(blocker / "ask_fable") in shown
    assert "XDG_STATE_HOME" in shown


def test_a_question_still_gets_its_answer_without_a_usable_state_directory(tmp_path: Path) -> None:
    """help needs no store: it answers (exit 0) and says only that its trace could not be kept."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    done = _run("help", "--topic", "modes", XDG_STATE_HOME=str(blocker))
    assert done.returncode == 0
    assert "## modes" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
def test_doctor_refuses_a_probe_timeout_that_is_not_a_positive_number(value: str) -> None:
    """doctor --timeout takes seconds above zero; anything else is a usage error naming the value."""
    done = _run("doctor", f"--timeout={value}")
    assert done.returncode == 2
    assert f"invalid value {value!r}" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("client", ["claude", "cursor", "windsurf", "opencode", "codex"])
def test_init_merges_into_a_config_file_saved_with_a_byte_order_mark(client: str, tmp_path: Path) -> None:
    """Editors on Windows save UTF-8 with a BOM: init merges into such a file, keeps the other
    server and the BOM, instead of calling the file broken."""
    if client == "codex":
        body = '[mcp_servers.other]\ncommand = "other-server"\n'
    elif client == "opencode":
        body = '{"mcp": {"other": {"type": "local", "command": ["other-server"]}}}\n'
    else:
        body = '{"mcpServers": {"other": {"command": "other-server"}}}\n'
    config = tmp_path / ("config.toml" if client == "codex" else "config.json")
    config.write_bytes(b"\xef\xbb\xbf" + body.encode())
    done = _run("init", client, "--config-path", str(config))
    assert done.returncode == 0, done.stderr
    written = config.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf")
    text = written[3:].decode()
    assert "other-server" in text and "ask_fable" in text


@pytest.mark.parametrize(("client", "body"), [
    ("cursor", '{"mcpServers": []}'),
    ("opencode", '{"mcp": "local"}'),
    ("claude", '{"mcpServers": {"ask_fable": "on"}}'),
    ("codex", '[mcp_servers]\nask_fable = "on"\n'),
])
def test_init_on_a_config_it_cannot_merge_names_the_file(client: str, body: str, tmp_path: Path) -> None:
    """A config whose server table or entry has the wrong shape: exit 1, the file named, untouched."""
    config = tmp_path / ("config.toml" if client == "codex" else "config.json")
    config.write_text(body)
    done = _run("init", client, "--config-path", str(config))
    assert done.returncode == 1
    assert done.stderr.startswith(f"ask-fable: {config}"), done.stderr
    assert "fix it first" in done.stderr and "Traceback" not in done.stderr
    assert config.read_text() == body


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "lots"])
def test_a_key_limit_that_is_not_a_number_from_zero_is_refused(value: str) -> None:
    """keys create --daily-usd nan once created a key whose limit silently became the default."""
    done = _run("keys", "create", "--name", "alice", f"--daily-usd={value}")
    assert done.returncode == 2
    assert f"invalid value {value!r}" in done.stderr and done.stdout == ""
    listed = _run("keys", "list")
    assert "alice" not in listed.stdout


@pytest.mark.parametrize(("args", "command"), [
    (["tools", "--json", "extra"], "ask-fable tools"),
    (["stats", "--bucket", "x"], "ask-fable stats"),
    (["keys", "list", "--bogus"], "ask-fable keys list"),
    (["trace", "list", "--nope"], "ask-fable trace list"),
])
def test_an_unknown_option_is_reported_with_the_usage_of_its_command(args: list[str], command: str) -> None:
    """Not the top-level usage (which lists every command): the one of the command that was given."""
    done = _run(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"usage: {command} ")
    unknown = " ".join(args[len(command.split()) - 1:]).removeprefix("--json ")
    assert f"{command}: error: unrecognized arguments: {unknown}\n" in done.stderr


@pytest.mark.parametrize(("backend", "env"), [
    ("glm", {"ASK_FABLE_GLM_API_KEY": "glm-key-0123456789", "ASK_FABLE_GLM_BASE_URL": "ftp://api.z.ai"}),
    ("deepseek", {"ASK_FABLE_DEEPSEEK_API_KEY": "ds-key-0123456789",
                  "ASK_FABLE_DEEPSEEK_BASE_URL": "api.deepseek"}),
    ("ollama", {"ASK_FABLE_OLLAMA_BASE_URL": "http://[::1"}),
])
@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_doctor_names_a_base_url_that_is_not_an_http_address_and_the_setting_to_fix(
    backend: str, env: dict[str, str], probe: bool
) -> None:
    """A base URL with the wrong scheme, no scheme or a broken host: doctor says so and names the
    variable to set, instead of a connection error or a Python exception."""
    import json

    done = _run("doctor", "--json", *([] if probe else ["--no-probe"]), "--timeout", "2", **env)
    assert done.returncode == 0, done.stderr
    report = {b["name"]: b for b in json.loads(done.stdout)["backends"]}[backend]
    setting = f"ASK_FABLE_{backend.upper()}_BASE_URL"
    print(report)
    assert report["status"] == "missing"
    assert "is not an http:// or https:// address" in report["detail"]
    assert setting in report["enable"]
    assert "could not diagnose" not in report["detail"]


def test_db_status_on_a_fresh_machine_says_the_stores_are_made_on_first_use(tmp_path: Path) -> None:
    """No state directory yet: db status does not tell a new user every store is behind an upgrade
    they do not need, and its columns line up."""
    done = _run("db", "status", XDG_STATE_HOME=str(tmp_path / "fresh"))
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[1:]
    assert rows and all("not created yet (made on first use)" in row for row in rows)
    assert "behind" not in done.stdout
    assert len({row.index("revision") for row in rows}) == 1
    assert not (tmp_path / "fresh" / "ask_fable").exists()


def test_the_http_server_refuses_to_start_without_a_usable_state_directory(tmp_path: Path) -> None:
    """Its keys live there: rather than serving and refusing every request as "database down",
    serve --http exits 1 naming the directory and the fix."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    done = _spawn("serve", "--http", "--port", "0", XDG_STATE_HOME=str(blocker))
    assert done.returncode == 1
    state = blocker / "ask_fable"
    assert done.stderr.startswith(f"ask-fable: error: the state directory {state} cannot be used")
    assert "XDG_STATE_HOME" in done.stderr and "Traceback" not in done.stderr


async def test_the_stdio_server_warns_once_without_a_usable_state_directory_and_still_answers(
    tmp_path: Path,
) -> None:
    """The stdio server starts, says on stderr that nothing will be kept, and answers."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.e2e.helpers import structured

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    command, *rest = ask_fable_command()
    params = StdioServerParameters(command=command, args=rest, env=child_env(XDG_STATE_HOME=str(blocker)))
    with open(tmp_path / "stderr.txt", "w+") as errlog:
        with anyio.fail_after(60):
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                helped = await structured(client, "ask_fable_help", {"topic": "modes"})
        errlog.seek(0)
        stderr = errlog.read()
    assert helped["status"] == "ok"
    warnings = [line for line in stderr.splitlines() if "state directory" in line]
    assert len(warnings) == 1 and "no conversation, trace or record is kept" in warnings[0]
    assert "Traceback" not in stderr


def test_a_database_url_that_is_not_postgresql_stops_the_http_server_and_is_reported_everywhere(
    tmp_path: Path,
) -> None:
    """ASK_FABLE_DATABASE_URL=mysql://…: serve --http refuses to start (replicas on SQLite of their own
    would each keep a different state) and db status reports it, naming the variable and the scheme
    wanted, never the password in the URL."""
    url = "mysql://team:hunter2-pass-word@db.internal/askfable"
    served = _spawn("serve", "--http", "--port", "0", ASK_FABLE_DATABASE_URL=url,
                    XDG_STATE_HOME=str(tmp_path))
    status = _run("db", "status", ASK_FABLE_DATABASE_URL=url, XDG_STATE_HOME=str(tmp_path))
    print(served.returncode, served.stderr[-800:], status.stderr[-800:])
    assert served.returncode == 1
    assert "ASK_FABLE_DATABASE_URL" in served.stderr and "postgresql://" in served.stderr
    assert "ASK_FABLE_DATABASE_URL" in status.stderr and "postgresql://" in status.stderr
    everything = served.stdout + served.stderr + status.stdout + status.stderr
    assert "hunter2-pass-word" not in everything and "Traceback" not in everything


def test_db_status_json_says_which_store_files_are_not_created_yet_as_the_text_does() -> None:
    """On a fresh machine every SQLite store is ``not_created`` in both forms; after ``db upgrade``
    every one is ``current``."""
    import json

    fresh = _run("db", "status", "--json")
    assert fresh.returncode == 0, fresh.stderr
    stores = json.loads(fresh.stdout)["stores"]
    assert stores and {store["state"] for store in stores} == {"not_created"}
    text = _run("db", "status")
    assert text.stdout.count("not created yet (made on first use)") == len(stores)
    assert _run("db", "upgrade").returncode == 0
    upgraded = json.loads(_run("db", "status", "--json").stdout)["stores"]
    assert {store["state"] for store in upgraded} == {"current"}


#: What trace list's --before takes (it pages back from a trace, or from a time).
BEFORE_RULE = "use a trace_id (next_before) or epoch seconds from 0"
#: Numeric options the tool bounds (it refuses a value outside them), with a value outside.
OUT_OF_BOUNDS = [
    (["debate", "why", "--rounds", "5"], "--rounds 5: use a whole number from 1 to 2"),
    (["debate", "why", "--rounds", "0"], "--rounds 0: use a whole number from 1 to 2"),
    (["session", "list", "--limit", "0"], "--limit 0: use a whole number from 1 to 200"),
    (["session", "list", "--limit", "-3"], "--limit -3: use a whole number from 1 to 200"),
    (["trace", "get", "0123456789abcdef01234567", "--max-chars", "0"],
     "--max-chars 0: use a whole number from 1"),
    (["session", "stats", "--window-s", "-1"], "--window-s -1: use a number from 0"),
    (["context", "pack", "k", "--paths", "x.py", "--max-chars", "0"],
     "--max-chars 0: use a whole number above 0"),
    (["session", "stats", "--window-s", "nan"], "--window-s nan: use a number from 0"),
    *[(["trace", "list", f"--before={value}"], f"--before {value}: {BEFORE_RULE}")
      for value in ("-1", "-1e9", "nan", "inf", "../x")],
]


@pytest.mark.parametrize(("args", "said"), OUT_OF_BOUNDS, ids=[" ".join(a) for a, _ in OUT_OF_BOUNDS])
def test_a_number_outside_what_the_tool_takes_is_a_usage_error_naming_the_range(args: list[str],
                                                                               said: str) -> None:
    """The tool would refuse it (bad_args): the command says so before calling, as a usage error."""
    done = _run(*args)
    assert done.returncode == 2, done.stderr
    assert f"ask-fable: {said}" in done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["-5", "0", "500"])
def test_a_trace_list_limit_the_tool_clamps_is_used_clamped_and_the_result_says_so(value: str) -> None:
    """trace_list clamps its limit to 1–200, over MCP as on the command line: the result's note names
    the value given and the one used."""
    done = _run("trace", "list", "--limit", value, "--json")
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout)
    used = 200 if value == "500" else 1
    assert result["limit"] == used
    assert result["note"] == f"limit {value} is outside 1–200: used {used}"


def test_a_trace_list_limit_inside_the_range_is_used_without_a_note() -> None:
    """A limit the tool takes as given leaves the result without a clamping note."""
    import json

    done = _run("trace", "list", "--limit", "20", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["limit"] == 20 and "note" not in result


QUIET_AFTER = [["tools", "--quiet"], ["keys", "list", "--quiet"], ["db", "status", "--quiet"],
               ["doctor", "--no-probe", "--quiet"], ["config", "claude", "--quiet"]]


@pytest.mark.parametrize("args", QUIET_AFTER, ids=[" ".join(a) for a in QUIET_AFTER])
def test_quiet_is_accepted_after_every_command_as_before_it(args: list[str]) -> None:
    """``--quiet`` works in either place (``ask-fable --quiet tools`` and ``ask-fable tools --quiet``),
    as it already did for serve and the tool commands."""
    done = _run(*args)
    assert done.returncode == 0, done.stderr
    assert "unrecognized arguments" not in done.stderr


def test_revoking_a_key_twice_says_it_was_already_revoked_and_when() -> None:
    """The second revoke changes nothing and says so (exit 0), naming the first revocation's time;
    changing a revoked key's limits says that it is refused whatever they are."""
    assert _run("keys", "create", "--name", "alice").returncode == 0
    first = _run("keys", "revoke", "1")
    assert first.returncode == 0 and first.stdout.startswith("revoked key 1 ('alice') at ")
    when = first.stdout.strip().rsplit(" at ", 1)[1]
    again = _run("keys", "revoke", "1")
    assert again.returncode == 0
    assert again.stdout.strip() == f"key 1 ('alice') was already revoked at {when}; nothing changed"
    update = _run("keys", "update", "1", "--rpm", "5")
    assert update.returncode == 0 and "revoked" in update.stdout and "refused" in update.stdout


def test_an_empty_stdin_for_a_stored_value_is_a_usage_error_that_keeps_the_stored_one() -> None:
    """``cat missing | ask-fable context write k -`` must not replace k's value with nothing: an
    empty stdin where a value was to be read is a usage error (exit 2) and k keeps its value."""
    assert _run("context", "write", "k", "the real value").returncode == 0
    done = subprocess.run([*ask_fable_command(), "context", "write", "k", "-"], capture_output=True,
                          text=True, timeout=60, input="", env=child_env())
    assert done.returncode == 2, done.stderr
    assert "ask-fable: VALUE: stdin is empty" in done.stderr and "Traceback" not in done.stderr
    assert "the real value" in _run("context", "read", "k").stdout
