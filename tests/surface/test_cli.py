"""The ``ask-fable`` command through its entry point, plus the registry-generated tool commands."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from ask_fable.cli import _parser
from ask_fable.surface.human_cli import arguments_from, command_paths, render
from ask_fable.surface.registry import all_tools
from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.fake_provider import FakeProvider

KEY_SHAPE = re.compile(r"afk_[A-Za-z0-9_\-]{32}")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    return run_in_process(args, env or child_env())


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process, its stdin closed."""
    return subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          env=env or child_env(), stdin=subprocess.DEVNULL)


def parse(*argv: str) -> tuple[Any, dict[str, Any]]:
    parser, table = _parser(all_tools())
    namespace = parser.parse_args(list(argv))
    return namespace, arguments_from(namespace, table[namespace.tool_name])


def test_an_unknown_toolset_flag_exits_2_naming_the_known_ones() -> None:
    flag = run("--toolsets", "core,bogus")
    serve = run("serve", "--http", "--toolsets", "bogus")
    for result in (flag, serve):
        assert result.returncode == 2
        assert "unknown toolset 'bogus'" in result.stderr
        assert "known toolsets: default, all, core" in result.stderr
        assert result.stdout == ""


def test_an_unknown_toolset_setting_serves_the_default_and_names_the_problem_first() -> None:
    env = spawn(env=child_env(ASK_FABLE_TOOLSETS="nonsense"))
    assert env.returncode == 0 and env.stdout == ""
    first = env.stderr.splitlines()[0]
    assert first.startswith("ask-fable: settings problem: toolsets from ASK_FABLE_TOOLSETS: unknown toolset")
    assert first.endswith("serving the default toolset (core)")


def test_keys_lifecycle() -> None:
    created = run("keys", "create", "--name", "laptop", "--scope", "read")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert KEY_SHAPE.fullmatch(key)
    assert "shown only once" in created.stderr
    listed = run("keys", "list", "--json")
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["name"], r["scope"], r["tenant"], r["active"]) for r in rows] == [
        (1, "laptop", "read", "laptop", True)]
    assert key not in listed.stdout and key[4:] not in listed.stdout
    assert run("keys", "revoke", "1").returncode == 0
    assert json.loads(run("keys", "list", "--json").stdout)[0]["revoked_at"]
    missing = run("keys", "revoke", "99")
    assert missing.returncode == 1 and "no API key" in missing.stderr
    bad = run("keys", "create", "--name", "x", "--scope", "root")
    assert bad.returncode == 2 and "use read, ask or admin" in bad.stderr


def test_keys_create_takes_a_scope_and_a_tenant() -> None:
    """Scopes are read, ask and admin (the former write reads as ask); the tenant defaults to one made
    from the name, and reserved or malformed tenants are refused."""
    made = [json.loads(run("keys", "create", "--json", *args).stdout) for args in (
        ("--name", "Alice Smith"),
        ("--name", "ci bot", "--scope", "read", "--tenant", "platform"),
        ("--name", "ops", "--scope", "admin", "--tenant", "platform"),
        ("--name", "old script", "--scope", "write"),
    )]
    assert [(k["scope"], k["tenant"]) for k in made] == [
        ("ask", "alice-smith"), ("read", "platform"), ("admin", "platform"), ("ask", "old-script")]
    for tenant in ("*", "shared", "Has Spaces"):
        refused = run("keys", "create", "--name", "x", "--tenant", tenant)
        assert refused.returncode == 2 and tenant in refused.stderr
    table = run("keys", "list").stdout
    assert "TENANT" in table and "platform" in table


def test_a_tool_command_prints_text_or_json() -> None:
    text = run("help", "--topic", "modes")
    assert text.returncode == 0, text.stderr
    assert "ask_council" in text.stdout
    data = json.loads(run("help", "--topic", "tokens", "--json").stdout)
    assert data["status"] == "ok" and data["topic"] == "tokens"
    bad = run("help", "--topic", "nope")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_a_guard_refusal_exits_1() -> None:
    result = run("ask", "hi")
    assert result.returncode == 1
    assert "refused" in result.stdout


def test_a_reasoning_command_runs_through_the_pipeline_on_the_fake_provider() -> None:
    with FakeProvider() as fake:
        fake.enqueue("anthropic", text='Use a read-write lock.\n\n```sidecar\n'
                     '{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```')
        env = child_env(ASK_FABLE_GLM_API_KEY="sk-glm-0123456789",
                        ASK_FABLE_GLM_BASE_URL=f"{fake.base_url}/api/anthropic", ASK_FABLE_CACHE="0")
        result = run("glm", "Should this map be guarded by a lock?", "--context", "shared dict", "--json",
                     env=env)
        sent = fake.last_json("anthropic")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["status"] == "ok" and "read-write lock" in payload["answer"]
    assert "Should this map be guarded by a lock?" in json.dumps(sent)


def test_generated_commands_take_positionals_and_comma_lists() -> None:
    _, council = parse("council", "Which queue?", "--models", "glm, deepseek,m3", "--tier", "middle")
    assert council == {"question": "Which queue?", "models": ["glm", "deepseek", "m3"], "tier": "middle"}
    _, chain = parse("chain", "Refine this", "--pipeline", "m3 > glm > fable")
    assert chain == {"question": "Refine this", "pipeline": "m3 > glm > fable"}
    _, debate = parse("debate", "Monorepo?", "--rounds", "2", "--proposer", "glm")
    assert debate == {"question": "Monorepo?", "rounds": 2, "proposer": "glm"}
    _, ask = parse("ask", "Why?", "--context-ref", "a,b", "--no-reset")
    assert ask == {"question": "Why?", "context_ref": ["a", "b"], "reset": False}


def test_context_files_are_read_only_through_context_file(tmp_path: Path) -> None:
    """``--context-file`` reads a file (repeatable, after --context); ``@`` in a value is just text."""
    source = tmp_path / "trace.txt"
    source.write_text("Traceback: boom")
    _, args = parse("ask", "Why does it fail?", "--context", "failing CI run", "--context-file", str(source))
    assert args["context"] == "failing CI run\n\nTraceback: boom"
    _, literal = parse("ask", "Why does it fail?", "--context", f"@{source}")
    assert literal["context"] == f"@{source}"


def test_every_tool_gets_a_command() -> None:
    specs = all_tools()
    paths = command_paths(specs)
    assert len(set(paths.values())) == len(specs)
    assert paths["ask_council"] == ("council",)
    assert paths["ask_fable_help"] == ("help",)
    parser, table = _parser(specs)
    assert set(table) == {s.name for s in specs}
    for spec in specs:
        words = paths[spec.name]
        try:
            parser.parse_args([*words, "--help"])
        except SystemExit as exc:
            assert exc.code == 0, spec.name


def test_nested_commands_for_tool_groups() -> None:
    class Spec:
        def __init__(self, name: str) -> None:
            self.name = name

    names = ["trace_list", "trace_get", "stats", "context_write", "context_read", "list_ollama_models",
             "configure_tracing", "session_peek", "session_list"]
    paths = command_paths([Spec(n) for n in names])  # type: ignore[misc]
    assert paths["trace_list"] == ("trace", "list")
    assert paths["context_write"] == ("context", "write")
    assert paths["session_peek"] == ("session", "peek")
    assert paths["stats"] == ("stats",)
    assert paths["list_ollama_models"] == ("list-ollama-models",)
    assert paths["configure_tracing"] == ("configure-tracing",)


def test_render_shows_the_answer_then_the_details() -> None:
    text = render({"status": "ok", "answer": "Do X.", "model": "glm-5.2", "trace_id": "t1",
                   "sources": [{"model": "glm", "status": "ok"}]})
    assert text.splitlines()[0] == "Do X."
    assert "model: glm-5.2" in text and "trace_id: t1" in text and "model=glm" in text
    error = render({"status": "error", "kind": "not_configured", "detail": "set KEY"})
    assert error.startswith("error [not_configured]: set KEY")


def test_config_prints_a_snippet_and_init_writes_one(tmp_path: Path) -> None:
    snippet = run("config", "cursor", "--command", "ask-fable --toolsets all")
    assert json.loads(snippet.stdout) == {"mcpServers": {"ask_fable": {
        "command": "ask-fable", "args": ["--toolsets", "all"]}}}
    every = run("config", "--http", "http://127.0.0.1:8765/mcp")
    assert every.returncode == 0 and "[mcp_servers.ask_fable]" in every.stdout and "serverUrl" in every.stdout
    target = tmp_path / "codex" / "config.toml"
    target.parent.mkdir()
    target.write_text('model = "gpt-5.6-sol"\n')
    written = run("init", "codex", "--config-path", str(target), "--command", "ask-fable")
    assert written.returncode == 0, written.stderr
    assert "added 'ask_fable'" in written.stdout and "backup" in written.stdout
    expected = 'model = "gpt-5.6-sol"\n\n[mcp_servers.ask_fable]\ncommand = "ask-fable"\nargs = []\n'
    assert target.read_text() == expected


def test_doctor_on_a_bare_machine_exits_0(tmp_path: Path) -> None:
    env = child_env(PATH=f"{tmp_path}:/usr/bin:/bin", ASK_FABLE_OLLAMA_BASE_URL="http://127.0.0.1:9")
    text = run("doctor", env=env)
    data = json.loads(run("doctor", "--json", "--timeout", "1", env=env).stdout)
    assert text.returncode == 0 and "backends ready" in text.stdout
    assert len(data["backends"]) == 12
    assert {b["name"] for b in data["backends"] if b["status"] != "ready"} >= {"glm", "deepseek", "minimax"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_http_through_the_entry_point() -> None:
    key = run("keys", "create", "--name", "srv").stdout.strip()
    port = _free_port()
    process = subprocess.Popen([*ask_fable_command(), "serve", "--http", "--port", str(port)],
                               env=child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx2.get(f"{base}/healthz", timeout=1)
                break
            except httpx2.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail(f"server did not start: {process.stderr.read() if process.poll() else ''}")
                time.sleep(0.1)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        refused = httpx2.post(f"{base}/mcp", json=body, headers=headers)
        listed = httpx2.post(f"{base}/mcp", json=body, headers={**headers, "Authorization": f"Bearer {key}"})
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=20)
    assert health.status_code == 200
    assert refused.status_code == 401
    assert listed.status_code == 200
    assert "ask_fable_help" in {t["name"] for t in listed.json()["result"]["tools"]}
    assert key not in stderr


def test_tools_lists_every_tool_with_its_family_and_command() -> None:
    rows = json.loads(run("tools", "--json").stdout)
    by_name = {row["name"]: row for row in rows}
    assert set(by_name) == {spec.name for spec in all_tools()}
    assert by_name["diagnose"]["family"] == "observability" and by_name["diagnose"]["read_only"]
    assert by_name["ask_fable_help"]["command"] == "help" and by_name["ask_fable_help"]["default"]


def test_bad_values_are_usage_errors_not_tracebacks() -> None:
    for argv in (["trace", "list", "--limit", "abc"], ["ask", "Why?", "--context-file", "/no/such/file.txt"]):
        proc = spawn(*argv)
        assert proc.returncode == 2, proc
        assert "Traceback" not in proc.stderr and proc.stderr.startswith("ask-fable: ")
    assert "'abc' is not a whole number" in run("trace", "list", "--limit", "abc").stderr


# --- what the command shows ----------------------------------------------------------------------

SIDECAR_ANSWER = ('Use a read-write lock.\n\n```sidecar\n'
                  '{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```')
ISO_LOCAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")


def glm_env(fake: FakeProvider, **extra: str) -> dict[str, str]:
    """The command's environment with GLM pointed at the fake provider."""
    return child_env(ASK_FABLE_GLM_API_KEY="sk-glm-0123456789", ASK_FABLE_CACHE="0",
                     ASK_FABLE_GLM_BASE_URL=f"{fake.base_url}/api/anthropic", **extra)


def run_with_stdin(*args: str, stdin: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ask_fable_command(), *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env=env, check=False)


def test_doctor_without_probes_says_an_unprobed_ollama_is_not_checked() -> None:
    env = child_env(ASK_FABLE_OLLAMA_BASE_URL="http://127.0.0.1:9")
    text = run("doctor", "--no-probe", env=env)
    data = json.loads(run("doctor", "--no-probe", "--json", env=env).stdout)
    ollama_line = next(line for line in text.stdout.splitlines() if " ollama " in line)
    assert "not checked" in ollama_line and "ready" not in ollama_line
    assert "not checked: ollama" in text.stdout
    (ollama,) = [b for b in data["backends"] if b["name"] == "ollama"]
    assert ollama["status"] == "not_checked" and ollama["reachable"] is None
    assert "ollama" not in data["ready"] and data["not_checked"] == ["ollama"]


def test_a_question_starting_with_at_is_asked_as_written(fp: FakeProvider, tmp_path: Path) -> None:
    """``@property vs attribute`` is a question; files come in only through --context-file (``-`` = stdin)."""
    notes = tmp_path / "model.py"
    notes.write_text("class Point:\n    @property\n    def x(self): ...\n")
    fp.enqueue("anthropic", text=SIDECAR_ANSWER)
    fp.enqueue("anthropic", text=SIDECAR_ANSWER)
    asked = run("glm", "@property vs attribute: which for a computed field?", "--json", env=glm_env(fp))
    first = json.dumps(fp.last_json("anthropic"))
    piped = run_with_stdin("glm", "-", "--context-file", str(notes), "--json",
                           stdin="Why is @property slower here?", env=glm_env(fp))
    second = json.dumps(fp.last_json("anthropic"))
    assert asked.returncode == 0, asked.stderr
    assert "@property vs attribute: which for a computed field?" in first
    assert piped.returncode == 0, piped.stderr
    assert "Why is @property slower here?" in second and "def x(self)" in second


def _steps(stderr: str) -> list[str]:
    # A step may show as a trace line ("[ask-fable 1a2b3c] asking glm") or a progress line ("… asking glm").
    return [re.sub(r"^(\[ask-fable \w+\] |… )", "", line) for line in stderr.splitlines()]


@pytest.mark.parametrize("command", [
    ["glm"],
    ["council", "--models", "glm,ollama:alpha", "--synthesizer", "ollama:judge"],
    ["chain", "--pipeline", "glm > ollama:alpha"],
])
def test_each_progress_step_prints_once(fp: FakeProvider, command: list[str]) -> None:
    """Each model asked is announced once and its outcome told once, however the step is worded."""
    fp.enqueue("anthropic", text=SIDECAR_ANSWER, times=None)
    fp.enqueue("ollama", text=SIDECAR_ANSWER, times=None)
    env = glm_env(fp, ASK_FABLE_QUIET="0", ASK_FABLE_OLLAMA_BASE_URL=fp.base_url,
                  ASK_FABLE_CLAUDE_CLI="/nonexistent/claude")
    result = run(*command, "Should this map be guarded by a lock?", env=env)
    assert result.returncode == 0, result.stderr
    steps = _steps(result.stderr)
    assert len(steps) == len(set(steps)), result.stderr
    models = ["glm", *(["ollama:alpha:cloud"] if len(command) > 1 else []),
              *(["ollama:judge:cloud"] if "council" in command else [])]
    for model in models:
        asked = [s for s in steps if s.startswith(f"asking {model}")]
        told = [s for s in steps if re.search(rf"(^|: |\d )({re.escape(model)}):? ok\b", s)]
        assert len(asked) == 1 and len(told) == 1, (model, result.stderr)


def test_the_quiet_flag_and_the_quiet_setting_each_silence_the_trace(fp: FakeProvider) -> None:
    """--quiet (before or after the command) and ASK_FABLE_QUIET=1 are each enough; neither: a trace."""
    question = "Should this map be guarded by a lock?"
    calls = {
        "neither": (("glm", question), "0"),
        "flag first": (("--quiet", "glm", question), "0"),
        "flag last": (("glm", question, "--quiet"), "0"),
        "setting": (("glm", question), "1"),
    }
    stderr = {}
    for name, (args, quiet) in calls.items():
        fp.enqueue("anthropic", text=SIDECAR_ANSWER)
        result = run(*args, env=glm_env(fp, ASK_FABLE_QUIET=quiet))
        assert result.returncode == 0 and "read-write lock" in result.stdout, (name, result.stderr)
        stderr[name] = result.stderr
    assert "asking glm" in stderr["neither"]
    assert stderr["flag first"] == stderr["flag last"] == stderr["setting"] == ""


def test_times_print_as_local_iso_8601_and_json_keeps_numbers() -> None:
    """Readable output shows times in the local zone (here +05:30); --json keeps Unix seconds."""
    env = child_env(TZ="Asia/Kolkata")
    assert run("context", "write", "schema", "CREATE TABLE jobs (id int)", env=env).returncode == 0
    assert run("keys", "create", "--name", "laptop", env=env).returncode == 0
    listed = run("context", "list", env=env)
    read = run("context", "read", "schema", env=env)
    keys = run("keys", "list", env=env)
    data = json.loads(run("context", "list", "--json", env=env).stdout)
    assert re.search(r"created_at=" + ISO_LOCAL.pattern, listed.stdout), listed.stdout
    assert re.search(r"^created_at: " + ISO_LOCAL.pattern + "$", read.stdout, re.MULTILINE), read.stdout
    assert re.search(ISO_LOCAL.pattern, keys.stdout), keys.stdout
    for output in (listed.stdout, read.stdout, keys.stdout):
        assert "+05:30" in output
        assert not re.search(r"\b1\d{9}\.\d+", output)
    assert isinstance(data["entries"][0]["created_at"], float)


def test_help_states_defaults_and_the_command_line_syntax() -> None:
    trace_help = run("trace", "list", "--help").stdout
    chain_help = run("chain", "--help").stdout
    council_help = run("council", "--help").stdout
    serve_help = run("serve", "--help").stdout
    assert "(default: 20)" in " ".join(trace_help.split())
    assert '--pipeline "m3 > glm > fable"' in " ".join(chain_help.split())
    assert "--models twin,m3" in " ".join(council_help.split())
    assert '["twin","m3"]' not in council_help
    assert "default: ASK_FABLE_TOOLSETS" in " ".join(serve_help.split())
    assert "--context-file PATH" in chain_help


def test_the_tools_table_has_a_header() -> None:
    lines = run("tools").stdout.splitlines()
    assert lines[0].split() == ["TOOL", "FAMILY", "COMMAND", "SCOPE", "NOTES"]
    assert lines[1].split()[:5] == ["ask_fable_help", "core", "ask-fable", "help", "read"]


def test_readable_output_names_a_tool_it_points_at_by_its_command_and_leaves_prose_alone() -> None:
    commands = {"trace_list": "ask-fable trace list", "ask": "ask-fable ask",
                "ask_fable_help": "ask-fable help"}
    hint = 'trace_list shows them; ask_fable_help(topic="tools") lists tools; before=trace_list'
    text = render({"status": "error", "kind": "not_found", "detail": "no trace 'x'; ask about it later",
                   "hint": hint}, commands)
    assert "error [not_found]: no trace 'x'; ask about it later" in text
    assert 'hint: `ask-fable trace list` shows them; ask_fable_help(topic="tools") lists tools; ' \
           "before=trace_list" in text
