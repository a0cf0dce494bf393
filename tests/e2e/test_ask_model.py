"""ask(model=…) on the default toolset reaches any one model and keeps its conversation.

The installed ``ask-fable`` command serves the default toolset over stdio (an HTTP model's follow-up,
a server killed between turns, the ``ask`` command); the other cases run the same server built in
this process. HTTP backends answer from the loopback fake provider, CLI backends are fake
executables first on PATH, Fable is the bundled Claude Code CLI pointed at the fake provider. A
conversation's turns live in the server's store, so a server killed between turns and started again
continues it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import ask_fable_command, child_env
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, stdin_bytes
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli
from tests.reliability.stdio_peer import StdioPeer

KEY = "deepseek-test-key-0123456789"
SIDECAR = '```sidecar\n{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```'


def answer(text: str) -> str:
    return f"{text}\n\n{SIDECAR}"


def server_env(fp: FakeProvider, **extra: str) -> dict[str, str]:
    """Every HTTP backend on the fake provider with a key, Claude Code on it too, no answer cache."""
    return child_env(
        ASK_FABLE_DEEPSEEK_API_KEY=KEY, ASK_FABLE_DEEPSEEK_BASE_URL=fp.base_url,
        ASK_FABLE_OPENROUTER_API_KEY=KEY, ASK_FABLE_OPENROUTER_BASE_URL=f"{fp.base_url}/api/v1",
        ANTHROPIC_BASE_URL=fp.base_url, ANTHROPIC_API_KEY="dummy-key", ASK_FABLE_TIMEOUT="60", **extra,
    )


def stdio(env: dict[str, str]) -> Client:
    command, *args = ask_fable_command()
    return Client(StdioServerParameters(command=command, args=args, env=env))


def built_here(env: dict[str, str]) -> Client:
    """The server ``stdio(env)`` starts, built in this process from the same ``ASK_FABLE_`` variables
    (the fake CLIs are first on this process's PATH too): a conversation is the server's to keep,
    whichever transport carries its turns."""
    from ask_fable.config import load_settings
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server

    settings = load_settings(**{name.removeprefix("ASK_FABLE_").lower(): value
                                for name, value in env.items() if name.startswith("ASK_FABLE_")})
    return Client(build_server(App(settings)))


async def ask(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("ask", arguments)
    payload = result.structured_content
    assert payload is not None
    assert result.is_error is (payload["status"] == "error")
    return payload


def texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of the user and assistant messages a provider request carried."""
    out = []
    for message in body["messages"]:
        content = message["content"]
        if not isinstance(content, str):
            content = "".join(block.get("text", "") for block in content if block.get("type") == "text")
        if message["role"] in ("user", "assistant") and content:
            out.append((message["role"], content))
    return out


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    handle = install_fake_clis(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{handle.bin_dir}{os.pathsep}{os.environ['PATH']}")
    return handle


@pytest.mark.parametrize(("model", "route", "wire_model"), [
    ("deepseek", "anthropic", "deepseek-v4-pro"),
    ("openrouter:qwen/qwen3-coder", "openai", "qwen/qwen3-coder"),
])
async def test_a_follow_up_to_an_http_model_carries_the_first_turn(
    fp: FakeProvider, model: str, route: str, wire_model: str
) -> None:
    fp.enqueue(route, text=answer("Use a bounded queue."))
    fp.enqueue(route, text=answer("Twice the worker count."))
    async with stdio(server_env(fp)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "ask_deepseek" not in names, "the default toolset, where ask is the way to one model"
        first = await ask(client, question="How do I stop the producer running away?",
                          context="def produce(): ...", model=model, session="s")
        second = await ask(client, question="How big should the queue be?", model=model, session="s")
    assert (first["status"], first["model"], first["turn"]) == ("ok", wire_model, 1)
    assert (second["answer"], second["turn"], second["session"]) == ("Twice the worker count.", 2, "s")
    [one, two] = fp.requests_for(route)
    assert two.json["model"] == wire_model
    assert texts(two.json)[:2] == [*texts(one.json)[:1], ("assistant", answer("Use a bounded queue."))]
    assert "def produce(): ..." in texts(two.json)[0][1]
    assert texts(two.json)[2] == ("user", "## Question\nHow big should the queue be?")


async def test_a_follow_up_to_a_cli_model_folds_the_first_turn_into_its_prompt(
    fp: FakeProvider, fakes: FakeCLIs
) -> None:
    fakes.behave("codex", answer=answer("Take the lock first."))
    async with built_here(server_env(fp)) as client:
        first = await ask(client, question="Which lock comes first?", model="codex", session="locks")
        second = await ask(client, question="And releasing them?", model="gpt", session="locks")
    assert (first["status"], second["status"], second["turn"]) == ("ok", "ok", 2)
    one, two = (stdin_bytes(call).decode() for call in fakes.calls("codex"))
    assert "Which lock comes first?" in one and "## Earlier in this conversation" not in one
    earlier, _, now = two.partition("## This turn")
    assert "Which lock comes first?" in earlier and "Take the lock first." in earlier
    assert "And releasing them?" in now and "Which lock" not in now


async def test_minimax_gets_the_conversation_as_messages(fp: FakeProvider, fakes: FakeCLIs) -> None:
    fakes.behave("mmx", answer=answer("Shard by tenant."))
    async with built_here(server_env(fp)) as client:
        await ask(client, question="How do I shard this table?", model="m3", session="db")
        await ask(client, question="And the hot tenants?", model="m3", session="db")
    messages = json.loads(stdin_bytes(fakes.calls("mmx")[1]))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "How do I shard" in messages[1]["content"] and messages[3]["content"].endswith("hot tenants?")


async def test_sessions_are_kept_per_model(fp: FakeProvider) -> None:
    """The same session key on two models is two conversations."""
    fp.enqueue("anthropic", text=answer("DeepSeek's view."))
    fp.enqueue("openai", text=answer("Qwen's view."))
    fp.enqueue("openai", text=answer("Qwen again."))
    async with built_here(server_env(fp)) as client:
        await ask(client, question="Is this retry loop bounded?", model="deepseek", session="same")
        await ask(client, question="Is this retry loop bounded?", model="openrouter:qwen/qwen3-coder",
                  session="same")
        again = await ask(client, question="Does it back off?", model="openrouter:qwen/qwen3-coder",
                          session="same")
    assert again["turn"] == 2
    carried = json.dumps(fp.requests_for("openai")[-1].json)
    assert "Qwen's view." in carried and "DeepSeek's view." not in carried


async def test_unknown_and_unconfigured_models_are_structured_errors(fp: FakeProvider) -> None:
    env = server_env(fp)
    env.pop("ASK_FABLE_DEEPSEEK_API_KEY")
    async with built_here(env) as client:
        unknown = await ask(client, question="Is this retry loop bounded?", model="gpt-99")
        group = await ask(client, question="Is this retry loop bounded?", model="twin")
        unconfigured = await ask(client, question="Is this retry loop bounded?", model="deepseek")
    assert (unknown["status"], unknown["kind"]) == ("error", "bad_args")
    assert "known tokens" in unknown["detail"] and "deepseek" in unknown["detail"] and unknown["trace_id"]
    assert group["kind"] == "bad_args" and "group" in group["detail"]
    assert (unconfigured["kind"], unconfigured["session"]) == ("not_configured", "default")
    assert "ASK_FABLE_DEEPSEEK_API_KEY" in unconfigured["hint"]
    assert fp.requests_for("anthropic") == []


async def test_reset_session_clears_and_dumps_any_models_conversation(fp: FakeProvider) -> None:
    fp.enqueue("anthropic", text=answer("First."), times=None)
    async with built_here(server_env(fp)) as client:
        await ask(client, question="Is this retry loop bounded?", model="deepseek", session="r")
        reset = (await client.call_tool("reset_session", {"model": "deepseek", "session": "r"})
                 ).structured_content
        fresh = await ask(client, question="A new topic: is this cache safe?", model="deepseek", session="r")
        unknown = (await client.call_tool("reset_session", {"model": "deepseek", "session": "never"})
                   ).structured_content
    assert reset is not None and (reset["status"], reset["turns"], reset["model"]) == ("ok", 1, "deepseek")
    dump = Path(reset["saved"])
    assert dump.name.startswith("deepseek+r-") and "Is this retry loop bounded?" in dump.read_text()
    assert fresh["turn"] == 1 and len(fp.requests_for("anthropic")[-1].json["messages"]) == 1
    assert unknown is not None and unknown["cleared"] is False and unknown["sessions"] == ["r"]


async def test_a_conversation_that_outgrows_the_window_is_trimmed_with_a_note(fp: FakeProvider) -> None:
    long_answer = answer("A long answer. " + "detail " * 800)
    fp.enqueue("anthropic", text=long_answer, times=None)
    async with built_here(server_env(fp, ASK_FABLE_SESSION_CONTEXT_TOKENS="6000")) as client:
        results = [await ask(client, question=f"Question number {n} about the queue?", model="deepseek",
                             session="long") for n in range(1, 6)]
    assert [r["status"] for r in results] == ["ok"] * 5
    assert "note" not in results[0] and "left out" in results[-1]["note"]
    last = fp.requests_for("anthropic")[-1].json
    assert len(texts(last)) < 9, "older turns were not sent"
    assert "Question number 1 about the queue?" in json.dumps(last["system"]), "their questions were listed"
    assert len(json.dumps(last)) < 6000 * 3


def _turn(peer: StdioPeer, **arguments: Any) -> dict[str, Any]:
    response = peer.call_tool("ask", arguments, timeout=90)
    payload = response["result"]["structuredContent"]
    assert payload["status"] == "ok", payload
    return payload


@pytest.mark.parametrize("model", [
    "deepseek",
    pytest.param("fable", marks=pytest.mark.skipif(bundled_claude_cli() is None, reason="no bundled CLI")),
])
def test_a_conversation_survives_a_killed_server(fp: FakeProvider, model: str) -> None:
    """The server is killed (SIGKILL) after the first answer; a new one continues the conversation."""
    route = "anthropic"
    fp.enqueue(route, text=answer("Use a bounded queue."))
    fp.enqueue(route, text=answer("Twice the worker count."))
    env = server_env(fp)
    first_server = StdioPeer(env)
    try:
        first_server.initialize()
        first = _turn(first_server, question="How do I stop the producer running away?", model=model,
                      session="restart")
    finally:
        first_server.proc.kill()
        first_server.proc.wait(timeout=20)
    second_server = StdioPeer(env)
    try:
        second_server.initialize()
        second = _turn(second_server, question="How big should the queue be?", model=model, session="restart")
    finally:
        second_server.close()
    assert (first["turn"], second["turn"], second["answer"]) == (1, 2, "Twice the worker count.")
    carried = json.dumps(texts(fp.requests_for(route)[-1].json))
    for text in ("How do I stop the producer running away?", "Use a bounded queue.", "How big should"):
        assert text in carried


async def test_a_cli_that_takes_its_prompt_as_one_argument_gets_what_fits(
    fp: FakeProvider, fakes: FakeCLIs
) -> None:
    """agy carries the whole prompt in one argv value (under 120,000 bytes): long earlier answers
    are left out with a note instead of the turn being refused as too large."""
    fakes.behave("agy", answer=answer("Long answer. " + "detail " * 7000))
    async with built_here(server_env(fp)) as client:
        results = [await ask(client, question=f"Gemini question {n}?", model="gemini", session="big")
                   for n in range(1, 5)]
    assert [r["status"] for r in results] == ["ok"] * 4
    assert "left out" in results[-1]["note"]
    argv_prompt = fakes.calls("agy")[-1]["argv"][-1]
    assert len(argv_prompt.encode()) <= 120_000 and "Gemini question 4?" in argv_prompt


def test_the_ask_command_continues_a_session_from_one_command_to_the_next(fp: FakeProvider) -> None:
    """Each `ask-fable ask` is a new process; the stored turns carry the conversation across them."""
    fp.enqueue("anthropic", text=answer("Bound it at 1,000."))
    fp.enqueue("anthropic", text=answer("Back off exponentially."))
    for question in ("Is the queue bounded?", "And the backoff?"):
        argv = [*ask_fable_command(), "ask", question, "--model", "deepseek", "--session", "cli", "--json"]
        done = subprocess.run(argv, env=server_env(fp), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turn"] == 2
    assert texts(fp.requests_for("anthropic")[-1].json)[:2] == [
        ("user", "## Question\nIs the queue bounded?"), ("assistant", answer("Bound it at 1,000.")),
    ]


NEEDS = ('```sidecar\n{"recommendation": "needs_more_context", "confidence": "low", '
         '"needs_context": ["locks.py"]}\n```')


@pytest.mark.parametrize("model", ["deepseek", "codex"])
async def test_asking_for_more_context_twice_ends_in_context_exhausted_on_any_model(
    fp: FakeProvider, fakes: FakeCLIs, model: str
) -> None:
    """An HTTP model and a CLI model alike: a request for more context comes back as a `followup`,
    and the request repeated on the next turn of the session ends as `context_exhausted`."""
    reply = f"Send me locks.py.\n\n{NEEDS}"
    fp.enqueue("anthropic", text=reply, times=None)
    fakes.behave("codex", answer=reply)
    async with built_here(server_env(fp, ASK_FABLE_MAX_NEEDS_CONTEXT="1")) as client:
        first = await ask(client, question="Why does this deadlock under load?", model=model, session="dl")
        second = await ask(client, question="Here is the caller: def run(): ...", model=model, session="dl")
    assert (first["status"], first["followup"]["needs_context"]) == ("ok", ["locks.py"])
    assert (second["status"], second["turn"]) == ("context_exhausted", 2)
    assert second["answer"] == "Send me locks.py."
