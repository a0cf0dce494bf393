"""The MCP surface in memory: structured results, bad input, unknown tools, both protocol eras."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from ask_fable.backends.http_client import http_clients
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import INSTRUCTIONS, build_server
from tests.fakes.fake_cli import is_alive
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import (
    bundled_claude_cli,
    child_pids,
    claude_cli_env,
    claude_with_a_child,
)


@pytest.mark.parametrize("mode", ["legacy", None])
async def test_help_returns_structured_content_and_the_same_json_as_text(mode: str | None) -> None:
    kwargs = {"mode": mode} if mode else {}
    async with Client(build_server(toolsets=["all"]), **kwargs) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["ask_fable_help"].annotations.read_only_hint is True
        result = await client.call_tool("ask_fable_help", {"topic": "tokens"})
        assert result.is_error is False
        assert result.structured_content["status"] == "ok"
        assert "twin" in result.structured_content["text"]
        assert json.loads(result.content[0].text) == result.structured_content


@pytest.mark.parametrize(
    "arguments",
    [{"topic": 3}, {"topic": "nope"}, {"unexpected": True}, {"topic": "x" * 100_000}, {"topic": None}],
)
async def test_bad_arguments_are_a_structured_bad_args_error(arguments: dict) -> None:
    async with Client(build_server(toolsets=["all"])) as client:
        result = await client.call_tool("ask_fable_help", arguments)
        assert result.is_error is True
        assert result.structured_content["status"] == "error"
        assert result.structured_content["kind"] == "bad_args"
        assert "Traceback" not in result.structured_content["detail"]
        follow = await client.call_tool("ask_fable_help", {"topic": "modes"})
        assert follow.structured_content["status"] == "ok"


async def test_unknown_tool_is_structured() -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool("no_such_tool", {})
        assert result.is_error and result.structured_content["kind"] == "unknown_tool"


def test_instructions_fit_in_two_kilobytes() -> None:
    assert len(INSTRUCTIONS.encode()) <= 2048


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")
async def test_the_servers_lifespan_closes_everything_the_app_opened(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the server ends: the pooled HTTP client is closed, the warm Claude CLI and what it
    spawned are gone, and no SQLite connection is left open."""
    cli, pid_file = claude_with_a_child(tmp_path / "claude-bin")
    for name, value in claude_cli_env(fp.base_url, tmp_path / "claude-home").items():
        monkeypatch.setenv(name, value)
    sidecar = '```sidecar\n{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```'
    fp.enqueue("anthropic", text=f"Warm answer.\n\n{sidecar}", match="claude-fable-5-1")
    fp.enqueue("anthropic", text=f"GLM answer.\n\n{sidecar}", match="glm-5.2")
    app = App(load_settings(claude_cli=str(cli), glm_api_key="glm-key-0123456789",
                            glm_base_url=fp.base_url, cache=False))
    async with Client(build_server(app, toolsets=["default", "single"])) as client:
        warm = await client.call_tool("ask", {"question": "Is the queue bounded?", "session": "s1"})
        glm = await client.call_tool("ask_glm", {"question": "Is the queue bounded?"})
        assert warm.structured_content["status"] == glm.structured_content["status"] == "ok"
        async with http_clients(app.resources).client(10) as pooled:
            assert not pooled.is_closed
        leader = app.claude_sessions.client_pid("fable", "s1")
        [child] = child_pids(pid_file)
        assert leader is not None and is_alive(leader) and is_alive(child)
        assert app.resources.engines.open_count > 0
    assert pooled.is_closed
    with anyio.move_on_after(5):
        while is_alive(leader) or is_alive(child):
            await anyio.sleep(0.02)
    assert not is_alive(leader) and not is_alive(child)
    assert app.resources.engines.open_count == 0
    assert app._services == {}


async def test_an_error_carrying_extra_context_still_matches_the_schema() -> None:
    from ask_fable.access import ASKS
    from ask_fable.errors import UpstreamError
    from ask_fable.surface.registry import ToolSpec
    from ask_fable.surface.server import AskFableServer
    from ask_fable.surface.tools.help import HelpArgs, HelpResult

    async def failing(args: HelpArgs, ctx: object) -> dict:
        raise UpstreamError("the CLI exited with status 3", binary="mmx", exit_code=3)

    server = AskFableServer(App(), ["core"])
    server._specs = {"boom": ToolSpec("boom", "core", "fails", HelpArgs, HelpResult, failing, ASKS)}
    async with Client(server) as client:
        result = await client.call_tool("boom", {})
    payload = dict(result.structured_content)
    assert payload.pop("trace_id")
    assert payload == {"status": "error", "kind": "upstream_error", "detail": "the CLI exited with status 3"}


async def test_an_unknown_tool_close_to_a_served_one_is_suggested() -> None:
    async with Client(build_server()) as client:
        result = (await client.call_tool("ask_councl", {})).structured_content
    assert result["kind"] == "unknown_tool" and "did you mean ask_council" in result["detail"]
    assert "ask_fable_help" in result["hint"]


async def test_a_serving_process_freezes_its_heap_after_each_tools_first_call_only() -> None:
    """A server started to serve (stdio or HTTP) moves what it holds after a tool's first call out
    of the garbage collector's way, once per tool, and collects its young objects less often; a
    server built in-process leaves the heap and the collector alone."""
    import gc

    from ask_fable.surface.server import SERVING_GC_THRESHOLDS

    defaults = gc.get_threshold()

    async def freezes(server: object, calls: list[tuple[str, dict[str, str]]]) -> list[int]:
        counts = []
        async with Client(server) as client:  # type: ignore[arg-type]
            for tool, arguments in calls:
                gc.unfreeze()
                await client.call_tool(tool, arguments)
                counts.append(gc.get_freeze_count())
        return counts

    calls = [("ask_fable_help", {"topic": "sidecar"}), ("ask_fable_help", {"topic": "tools"}),
             ("trace_list", {})]
    try:
        in_process = await freezes(build_server(App(load_settings()), toolsets=["all"]), calls)
        in_process_thresholds = gc.get_threshold()
        served = await freezes(build_server(App(load_settings()), toolsets=["all"], settle_heap=True), calls)
        served_thresholds = gc.get_threshold()
    finally:
        gc.unfreeze()
        gc.set_threshold(*defaults)
    assert served[0] > 0 and served[1] == 0 and served[2] > 0
    assert in_process == [0, 0, 0]
    assert in_process_thresholds == defaults and served_thresholds == SERVING_GC_THRESHOLDS != defaults


async def test_an_unknown_tools_result_is_sent_in_its_fields_order_with_the_trace_id_last() -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool("no_such_tool", {})
    payload = result.structured_content
    assert list(payload) == ["status", "kind", "detail", "hint", "trace_id"]
    assert result.content[0].text == json.dumps(payload, ensure_ascii=False)


async def test_a_handlers_result_model_reaches_the_wire_with_warnings_and_redaction_added_to_a_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model a tool returns is what the caller gets: the call's settings warnings and its trace id
    are added to a copy, and secrets are redacted from its wire form only, leaving the model as it was."""
    from ask_fable.access import ASKS
    from ask_fable.surface.registry import ToolSpec
    from ask_fable.surface.server import AskFableServer
    from ask_fable.surface.tools.help import HelpArgs, HelpResult

    monkeypatch.setenv("ASK_FABLE_TIMEOUT", "abc")
    secret = "glm-secret-value-0123456789"
    returned = HelpResult(status="ok", topic="x", text=f"the key is {secret}")

    async def answering(args: HelpArgs, ctx: object) -> HelpResult:
        assert ctx.settings.timeout == 240  # type: ignore[attr-defined]
        return returned

    async def outside_schema(args: HelpArgs, ctx: object) -> dict:
        return {"status": "ok", "topic": 3}

    server = AskFableServer(App(load_settings(glm_api_key=secret)), ["core"])
    server._specs = {"answer": ToolSpec("answer", "core", "answers", HelpArgs, HelpResult, answering, ASKS),
                     "odd": ToolSpec("odd", "core", "odd", HelpArgs, HelpResult, outside_schema, ASKS)}
    async with Client(server) as client:
        answered = (await client.call_tool("answer", {})).structured_content
        odd = await client.call_tool("odd", {})
    assert answered["text"] == "the key is [REDACTED]" and answered["trace_id"]
    assert [w for w in answered["warnings"] if "ASK_FABLE_TIMEOUT" in w]
    assert returned.text == f"the key is {secret}" and returned.warnings is None and returned.trace_id is None
    assert odd.is_error and list(odd.structured_content) == ["status", "kind", "detail", "trace_id"]
    assert odd.structured_content["kind"] == "internal"
    assert odd.structured_content["detail"] == "odd produced a result outside its schema (topic)"
