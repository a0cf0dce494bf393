"""Fable and Opus 5 single calls through the real bundled Claude Code CLI against the fake provider."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.claude import make_claude_oracle
from ask_fable.config import load_settings
from ask_fable.errors import OracleTimeout, UpstreamError
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli

pytestmark = pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")


SYSTEM = "You are the reviewer under test. Say REVIEWED first."


class Recorder(EventSink):
    """An event sink that keeps what it was sent."""

    def __init__(self) -> None:
        self.reasoning_chunks: list[str] = []
        self.notes: list[str] = []
        super().__init__(on_reasoning=self.reasoning_chunks.append, on_note=self.notes.append)


def request(prompt: str = "Is the retry loop correct?", timeout: float = 30) -> OracleRequest:
    return OracleRequest(system=SYSTEM, prompt=prompt, timeout=timeout)


def system_text(body: dict) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(block.get("text", "") for block in system or [])


def user_texts(body: dict) -> list[str]:
    out = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(block.get("text", "") for block in content if block.get("type") == "text")
    return out


async def test_fable_answers_through_the_sdk_with_one_bare_request(
    fp: FakeProvider, claude_home: Path
) -> None:
    """One POST reaches the provider: right model, our system prompt, no tools, streaming, nothing else."""
    fp.enqueue("anthropic", text="REVIEWED: the loop is fine.", usage={"input_tokens": 40,
                                                                                  "output_tokens": 9})
    oracle = make_claude_oracle(load_settings(), "fable")
    reply = await oracle.ask(request(), Recorder())

    assert reply.text == "REVIEWED: the loop is fine."
    assert (reply.model, reply.provider, oracle.family) == ("claude-fable-5-1", "anthropic", "anthropic")
    assert reply.session_id
    assert reply.usage is not None and reply.usage.output_tokens == 9 and reply.usage.input_tokens == 40
    assert reply.usage.cost_usd is not None and reply.usage.cost_usd > 0
    sent = fp.requests
    assert [(r.method, r.route) for r in sent] == [("POST", "anthropic")], "no hello ping, no titling call"
    body = sent[0].json
    assert body["model"] == "claude-fable-5-1"
    assert body["stream"] is True
    assert SYSTEM in system_text(body)
    assert not body.get("tools")
    assert "Is the retry loop correct?" in user_texts(body)
    assert sent[0].headers["x-api-key"] == "dummy-key"


async def test_thinking_is_returned_and_sent_to_the_sink(
    fp: FakeProvider, claude_home: Path
) -> None:
    thinking = "The loop re-raises after the last attempt, so nothing is swallowed."
    fp.enqueue("anthropic", text="It is correct.", thinking=thinking)
    sink = Recorder()
    reply = await make_claude_oracle(load_settings(), "fable").ask(request(), sink)
    assert reply.thinking == thinking
    assert "".join(sink.reasoning_chunks) == thinking


async def test_streamed_reasoning_arrives_as_deltas(fp: FakeProvider, claude_home: Path) -> None:
    thinking = "First I check the bounds, then the retry count, then the final raise path."
    fp.enqueue("anthropic", text="Fine.", thinking=thinking, chunk_chars=10)
    sink = Recorder()
    reply = await make_claude_oracle(load_settings(stream_reasoning=True), "fable").ask(request(), sink)
    assert reply.thinking == thinking
    assert len(sink.reasoning_chunks) > 1
    assert "".join(sink.reasoning_chunks) == thinking


async def test_ladder_falls_back_when_the_newest_model_is_not_found(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", match="claude-fable-5-1", status=404,
                          error="model: claude-fable-5-1", times=None)
    fp.enqueue("anthropic", match="claude-fable-5", text="Answer from the older Fable.")
    sink = Recorder()
    reply = await make_claude_oracle(load_settings(), "fable").ask(request(), sink)
    assert (reply.text, reply.model) == ("Answer from the older Fable.", "claude-fable-5")
    assert [r.model for r in fp.requests][-1] == "claude-fable-5"
    assert any("claude-fable-5-1" in note and "claude-fable-5" in note for note in sink.notes)


async def test_pinned_fable_model_never_falls_back(fp: FakeProvider, claude_home: Path) -> None:
    fp.enqueue("anthropic", match="claude-fable-9", status=404, error="model: claude-fable-9",
                          times=None)
    oracle = make_claude_oracle(load_settings(fable_model="claude-fable-9"), "fable")
    with pytest.raises(UpstreamError) as caught:
        await oracle.ask(request(), Recorder())
    assert "claude-fable-9" in caught.value.detail and "ASK_FABLE_FABLE_MODEL" in caught.value.detail
    assert {r.model for r in fp.requests} == {"claude-fable-9"}


async def test_opus_and_fable51_ask_for_their_own_ids(fp: FakeProvider, claude_home: Path) -> None:
    fp.enqueue("anthropic", match="claude-fable-5-1", status=404, error="model: claude-fable-5-1",
                          times=None)
    with pytest.raises(UpstreamError):
        await make_claude_oracle(load_settings(), "fable51").ask(request(), Recorder())
    reply = await make_claude_oracle(load_settings(), "opus").ask(request(), Recorder())
    assert reply.model == "claude-opus-5"
    assert [r.model for r in fp.requests][-1] == "claude-opus-5"
    assert "claude-fable-5" not in {r.model for r in fp.requests}


async def test_provider_500_is_an_upstream_error(fp: FakeProvider, claude_home: Path) -> None:
    fp.enqueue("anthropic", status=500, error="boom", times=None)
    with pytest.raises(UpstreamError) as caught:
        await make_claude_oracle(load_settings(), "opus").ask(request(), Recorder())
    assert caught.value.kind == "upstream_error"
    assert "500" in caught.value.detail
    assert "dummy-key" not in caught.value.detail


async def test_dead_port_fails_with_a_structured_error(
    claude_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeProvider() as doomed:
        dead_url = doomed.base_url
    monkeypatch.setenv("ANTHROPIC_BASE_URL", dead_url)
    with anyio.fail_after(10):
        with pytest.raises(UpstreamError) as caught:
            await make_claude_oracle(load_settings(), "opus").ask(request(timeout=10), Recorder())
    assert caught.value.kind == "upstream_error"


async def test_hanging_provider_times_out_and_leaves_no_cli(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", hang=True, times=None)
    settings = load_settings()
    with anyio.fail_after(12), pytest.raises(OracleTimeout) as caught:
        await make_claude_oracle(settings, "opus").ask(request(timeout=3), Recorder())
    assert caught.value.kind == "timeout"
    assert fp.requests, "the CLI did reach the provider before the deadline"
    assert processes_in(settings.state_dir / "claude-cwd") == set()


async def test_cli_bridge_answers_when_use_cli_is_set(fp: FakeProvider, claude_home: Path) -> None:
    fp.enqueue("anthropic", match="claude-fable-5-1", status=404, error="model: claude-fable-5-1",
                          times=None)
    fp.enqueue("anthropic", match="claude-fable-5", text="Bridged answer.")
    reply = await make_claude_oracle(load_settings(use_cli=True), "fable").ask(request(), Recorder())
    assert (reply.text, reply.model, reply.routed_via) == ("Bridged answer.", "claude-fable-5", "claude-cli")
    body = fp.last_json("anthropic")
    assert SYSTEM in system_text(body)
    assert "Is the retry loop correct?" in user_texts(body)
    assert not body.get("tools")
    assert {r.route for r in fp.requests} == {"anthropic"}


async def test_sdk_start_failure_falls_back_to_the_cli_bridge(
    fp: FakeProvider, claude_home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A CLI that refuses the SDK's stream mode still answers through ``claude -p``; its stderr stays ours."""
    wrapper = tmp_path / "bin" / "claude"
    wrapper.parent.mkdir()
    wrapper.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = "stream-json" ] && { echo "STREAM-MODE-REFUSED" >&2; exit 3; }; done\n'
        f'exec "{bundled_claude_cli()}" "$@"\n'
    )
    wrapper.chmod(0o755)
    fp.enqueue("anthropic", text="Answered by the bridge.")
    sink = Recorder()
    reply = await make_claude_oracle(load_settings(claude_cli=str(wrapper)), "opus").ask(request(), sink)
    assert (reply.text, reply.routed_via) == ("Answered by the bridge.", "claude-cli")
    assert any("could not start" in note and "claude CLI" in note for note in sink.notes), sink.notes
    out, err = capfd.readouterr()
    assert "STREAM-MODE-REFUSED" not in out and "STREAM-MODE-REFUSED" not in err


def processes_in(directory: Path) -> set[int]:
    """Pids of live processes whose working directory is ``directory`` (the CLI's private cwd)."""
    target = os.path.realpath(directory)
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd") == target:
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


async def test_sdk_route_waits_for_a_slot_of_the_claude_gate(
    fp: FakeProvider, claude_home: Path
) -> None:
    """The SDK route takes a slot of the "claude" gate; time spent queued counts against the timeout."""
    from ask_fable.backends.resources import Resources

    resources = Resources()
    oracle = make_claude_oracle(load_settings(cli_max_parallel=1), "opus", resources=resources)
    with anyio.fail_after(20):
        async with resources.gates.slot("claude", 1):
            with pytest.raises(OracleTimeout):
                await oracle.ask(request(timeout=0.5), EventSink())
    assert fp.requests_for("anthropic") == []
    fp.enqueue("anthropic", text="REVIEWED after the slot freed.")
    reply = await oracle.ask(request(), EventSink())
    assert reply.text.startswith("REVIEWED")


async def test_a_cli_leaving_a_child_behind_answers_promptly_and_the_child_is_ended(
    fp: FakeProvider, claude_home: Path, tmp_path: Path
) -> None:
    """A single SDK call whose CLI started a child holding its output returns the answer (well within
    the deadline) and ends the child with the CLI's process group."""
    from tests.fakes.fake_cli import is_alive
    from tests.fakes.fixtures import child_pids, claude_with_a_child

    cli, pid_file = claude_with_a_child(tmp_path / "claude-bin")
    fp.enqueue("anthropic", text="Answered despite the child.")
    oracle = make_claude_oracle(load_settings(claude_cli=str(cli)), "opus")
    with anyio.fail_after(20):
        reply = await oracle.ask(request(timeout=60), EventSink())
    assert reply.text == "Answered despite the child."
    [child] = child_pids(pid_file)
    with anyio.move_on_after(5):
        while is_alive(child):
            await anyio.sleep(0.02)
    assert not is_alive(child)
