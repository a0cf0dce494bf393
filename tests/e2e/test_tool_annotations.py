"""Each tool's annotations say what it does: checked by calling every tool with valid arguments.

The server's backends are loopback fakes (the fake provider, fake CLIs first on PATH, the Claude
CLI bridge on the fake ``claude``). Before each call the user has a config file, a context entry
and an open ``ask`` conversation. What the user configured or stored (the config file and the
context bus) and the conversations are compared before and after the call:

- a read-only tool changes nothing configured or stored (it may start or continue a conversation);
- a destructive tool, and only a destructive one, takes something away;
- an idempotent tool that is not read-only changes nothing more when called again the same way;
- a tool that is not open-world sends nothing to a provider and starts no CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.access import LOCAL_TENANT
from ask_fable.config import config_file_path
from ask_fable.core.app import App
from ask_fable.files import atomic_write_text
from ask_fable.surface.registry import all_tools
from tests.fakes.fake_cli import CLI_NAMES, DEFAULT_SIDECAR, FakeCLIs, install_fake_clis
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.support import call, make_server, offline_settings

SPECS = {spec.name: spec for spec in all_tools()}
QUESTION = "Is the retry loop in the fetcher bounded?"
SEEDED_SESSION = "seeded"

#: Valid arguments for every tool; ``{trace_id}`` is filled with the seeded conversation's trace.
EXAMPLES: dict[str, dict[str, Any]] = {
    "ask_fable_help": {"topic": "sidecar"},
    "ask": {"question": QUESTION, "session": "probe"},
    "reset_session": {"model": "fable", "session": SEEDED_SESSION, "save": False},
    "ask_council": {"question": QUESTION, "models": ["glm", "deepseek"], "synthesizer": "glm"},
    "ask_chain": {"question": QUESTION, "models": ["glm", "deepseek"]},
    "ask_debate": {"question": QUESTION, "proposer": "glm", "opponent": "deepseek", "adjudicator": "glm"},
    "ask_opus5": {"question": QUESTION, "session": "probe"},
    "ask_m3": {"question": QUESTION},
    "ask_gemini": {"question": QUESTION},
    "ask_codex": {"question": QUESTION},
    "ask_grok": {"question": QUESTION},
    "ask_kimi": {"question": QUESTION},
    "ask_glm": {"question": QUESTION},
    "ask_deepseek": {"question": QUESTION},
    "ask_atlas": {"question": QUESTION},
    "ask_openrouter": {"question": QUESTION},
    "ask_ollama": {"question": QUESTION},
    "ask_ollama_council": {"question": QUESTION, "models": ["qwen3:8b", "gpt-oss:20b"]},
    "ask_atlas_council": {"question": QUESTION, "models": ["deepseek-ai/deepseek-v4", "qwen/qwen3-max"]},
    "ask_openrouter_council": {"question": QUESTION, "models": ["deepseek/deepseek-v4", "qwen/qwen3-max"]},
    "configure_ollama_council": {"models": ["qwen3:8b", "gpt-oss:20b"]},
    "configure_atlas_council": {"models": ["deepseek-ai/deepseek-v4", "qwen/qwen3-max"]},
    "configure_openrouter_council": {"models": ["deepseek/deepseek-v4", "qwen/qwen3-max"]},
    "list_atlas_models": {"task": "code review"},
    "list_openrouter_models": {"task": "code review"},
    "list_ollama_models": {},
    "configure_tracing": {"trace_mode": "full"},
    "context_write": {"key": "notes", "value": "The fetcher retries five times."},
    "context_read": {"key": "schema"},
    "context_list": {},
    "context_delete": {"key": "schema"},
    "context_pack": {"key": "pack", "paths": ["notes.md"]},
    "stats": {},
    "trace_list": {},
    "trace_get": {"trace_id": "{trace_id}"},
    "diagnose": {},
    "key_usage": {},
    "session_list": {},
    "session_peek": {"session_key": SEEDED_SESSION},
    "session_stats": {},
}


@dataclass(frozen=True)
class State:
    """What the user configured or stored, and the open conversations."""

    config: dict[str, Any]
    context: dict[str, str]
    conversations: frozenset[tuple[str, str]]

    def removed_from(self, before: State) -> list[str]:
        """What ``before`` held that this state no longer does."""
        gone = [f"setting {name}" for name in before.config if name not in self.config]
        gone += [f"context entry {key}" for key in before.context if key not in self.context]
        gone += [f"conversation {pair}" for pair in before.conversations - self.conversations]
        return gone


def state_of(app: App) -> State:
    """The state a tool call may change."""
    path = config_file_path()
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    store = app.context_store
    context = {}
    for listed in store.list(LOCAL_TENANT):
        entry = store.read(LOCAL_TENANT, listed.key)
        assert entry is not None
        context[listed.key] = entry.value
    conversations = frozenset(
        (namespace, s["session"]) for namespace in ("fable", "opus5")
        for s in app.transcripts.sessions(LOCAL_TENANT, namespace) if s["turns"]
    )
    return State(config, context, conversations)


def outside_traffic(fp: FakeProvider, clis: FakeCLIs) -> int:
    """Requests the fake provider received plus runs of every fake CLI, so far."""
    return len(fp.requests) + sum(len(clis.calls(name)) for name in CLI_NAMES)


@pytest.fixture
def clis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCLIs]:
    """Fake CLIs first on PATH, the fake ``claude`` answering like ``claude -p --output-format json``."""
    fakes = install_fake_clis(tmp_path / "bin")
    answer = {"type": "result", "is_error": False, "session_id": "cli-session",
              "result": f"Bounded: five attempts.\n\n```sidecar\n{DEFAULT_SIDECAR}\n```"}
    fakes.behave("claude", answer=json.dumps(answer) + "\n")
    monkeypatch.setenv("PATH", f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}")
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("The fetcher retries five times.\n", encoding="utf-8")
    monkeypatch.setenv("ASK_FABLE_PROJECT_ROOT", str(project))
    yield fakes


@pytest.fixture
def fp(fp: FakeProvider) -> FakeProvider:
    """The fake provider with empty catalogs on every catalog route."""
    for path in ("/api/v1/models", "/v1/models", "/cloud/api/tags", "/api/tags"):
        fp.set_json("GET", path, {"data": [], "models": []})
    return fp


def test_every_tool_has_an_example() -> None:
    """A new tool joins the table below, so that what its annotations claim is checked."""
    assert set(EXAMPLES) == set(SPECS)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
async def test_annotations_match_what_the_tool_does(name: str, fp: FakeProvider, clis: FakeCLIs) -> None:
    """The tool, called once (twice when idempotent and not read-only), does what it declares."""
    spec = SPECS[name]
    server = make_server(["all"], **offline_settings(fp, clis))
    app = server.app
    atomic_write_text(config_file_path(), json.dumps({"trace_mode": "safe"}))
    app.context_store.write(LOCAL_TENANT, "schema", "CREATE TABLE t (id int)", "")
    async with Client(server) as client:
        with anyio.fail_after(60):
            seeded = await call(client, "ask", {"question": QUESTION, "session": SEEDED_SESSION})
        assert seeded["status"] == "ok", seeded
        arguments = {key: value.format(trace_id=seeded["trace_id"]) if isinstance(value, str) else value
                     for key, value in EXAMPLES[name].items()}
        before, traffic = state_of(app), outside_traffic(fp, clis)
        with anyio.fail_after(60):
            result = await call(client, name, arguments)
        assert result["status"] == "ok", result
        after = state_of(app)
        if not spec.open_world:
            assert outside_traffic(fp, clis) == traffic, f"{name} is not open-world yet reached outside"
        if spec.read_only:
            assert (after.config, after.context) == (before.config, before.context), name
        assert bool(after.removed_from(before)) is spec.destructive, (name, after.removed_from(before))
        if spec.idempotent and not spec.read_only:
            with anyio.fail_after(60):
                again = await call(client, name, arguments)
            assert again["status"] == "ok", again
            assert state_of(app) == after, f"{name} is idempotent yet a repeat changed more"
