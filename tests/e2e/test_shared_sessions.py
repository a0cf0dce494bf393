"""One user, two MCP clients: two ``ask-fable`` stdio servers on one state directory share a Fable
session label. Each keeps its own warm Claude Code CLI; every turn is answered from the stored
transcript, so what one server's turn or reset did is what the other's next turn continues from."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.e2e.helpers import ask_fable_command, child_env, structured
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli

pytestmark = pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")


@asynccontextmanager
async def two_servers() -> AsyncIterator[tuple[Client, Client]]:
    """Two stdio servers of the installed command, with the test's one state directory."""
    command, *rest = ask_fable_command()
    params = StdioServerParameters(command=command, args=rest,
                                   env=child_env(ASK_FABLE_CACHE="false", ASK_FABLE_TIMEOUT="60"))
    async with AsyncExitStack() as stack:
        first, second = [await stack.enter_async_context(Client(stdio_client(params), mode="legacy"))
                         for _ in range(2)]
        yield first, second


def carried(fp: FakeProvider) -> str:
    """The text of every user and assistant message of the last model request."""
    texts = []
    for message in fp.last_json("anthropic")["messages"]:
        if message["role"] in ("user", "assistant"):
            content = message["content"]
            texts.append(content if isinstance(content, str) else
                         "".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return "\n".join(texts)


async def ask(client: Client, fp: FakeProvider, session: str, question: str, answer: str) -> dict[str, Any]:
    """One Fable turn of ``session`` answered with ``answer``."""
    fp.enqueue("anthropic", text=answer)
    result = await structured(client, "ask", {"question": question, "session": session})
    assert (result["status"], result["answer"]) == ("ok", answer), result
    return result


async def test_a_turn_or_a_reset_on_one_server_is_what_the_other_servers_next_turn_continues_from(
    fp: FakeProvider, claude_home: Path
) -> None:
    """Session ``moved``: a turn taken on the second server is carried by the first one's next turn,
    though the first keeps a warm CLI that saw only its own turn. Session ``reset``: after the second
    server resets it and answers a new first turn, the first server's warm CLI, holding the old first
    turn, is not reused."""
    with anyio.fail_after(120):
        async with two_servers() as (first, second):
            await ask(first, fp, "moved", "Where does the cache live?", "In Redis.")
            await ask(second, fp, "moved", "How is it invalidated?", "By key version.")
            third = await ask(first, fp, "moved", "And on deploy?", "The version bumps.")
            assert third["turn"] == 3
            whole = carried(fp)
            for text in ("Where does the cache live?", "In Redis.", "How is it invalidated?",
                         "By key version.", "And on deploy?"):
                assert text in whole

            await ask(first, fp, "reset", "Old topic: the queue?", "Old answer: bound it.")
            reset = await structured(second, "reset_session", {"session": "reset", "save": False})
            assert reset["cleared"] is True
            await ask(second, fp, "reset", "New topic: the index?", "New answer: it is used.")
            followed = await ask(first, fp, "reset", "And its size?", "Small.")
            assert followed["turn"] == 2
            whole = carried(fp)
            assert "New topic: the index?" in whole and "New answer: it is used." in whole
            assert "Old topic" not in whole and "Old answer" not in whole
