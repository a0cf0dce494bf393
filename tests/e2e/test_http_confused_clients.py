"""A confused or hostile client of the real ``ask-fable serve --http``: whatever it sends that is not one
well-formed JSON-RPC message gets a 4xx whose message names what is wrong and what to send instead,
never a validation dump of the SDK's internals, a silent 202, or a bare ``Invalid request parameters``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2

from tests.e2e.team_server import HEADERS, TeamServer, create_key, team_server

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask_fable_help", "arguments": {"topic": "tokens"}}}
#: Bodies that are JSON but not one JSON-RPC message, and the words the answer must carry.
MALFORMED: dict[str, tuple[bytes, str]] = {
    "null": (b"null", "one JSON-RPC message"),
    "a number": (b"42", "one JSON-RPC message"),
    "an empty batch": (b"[]", "one JSON-RPC message per request"),
    "a batch": (b"[" + b",".join([b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'] * 3) + b"]",
                "one JSON-RPC message per request"),
    "params as a list": (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}', "params"),
    "an object id": (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', "id"),
    "a NaN id": (b'{"jsonrpc":"2.0","id":NaN,"method":"tools/list"}', "id"),
    "a numeric tool name": (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}', "name"),
    "arguments as a list": (b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                            b'"params":{"name":"ask_fable_help","arguments":[1]}}', "arguments"),
    "JSON-RPC 1.0": (b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', '"jsonrpc" must be "2.0"'),
    "a numeric method": (b'{"jsonrpc":"2.0","id":1,"method":5}', '"method"'),
}
#: Well-formed messages whose params do not fit the method: answered with the fields at fault.
BAD_PARAMS: dict[str, tuple[bytes, str]] = {
    "a cursor object": (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":{"x":1}}}',
                        "cursor"),
    "initialize garbage": (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,'
                           b'"capabilities":[],"clientInfo":"x"}}', "clientInfo"),
}
#: Duplicate keys, in both orders: the scope check and the server must read the same call.
DUPLICATED = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","name":"ask_fable_help",'
    b'"arguments":{"topic":"tokens"}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_fable_help","name":"ask",'
    b'"arguments":{"question":"Is it bounded?"}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call",'
    b'"params":{"name":"ask","arguments":{"question":"Is it bounded?"}}}',
]


@asynccontextmanager
async def served() -> AsyncIterator[tuple[TeamServer, str]]:
    """A team server with a read key."""
    key = str(create_key("confused", "--scope", "read")["key"])
    async with team_server() as server:
        yield server, key


def _unclear(text: str) -> bool:
    return "validation errors for union" in text or "Invalid request parameters" in text


async def test_a_body_that_is_not_one_json_rpc_message_is_refused_saying_what_to_send() -> None:
    """Before: SDK validation dumps, a silent 202 for a bad id, or ``Invalid request parameters``."""
    answers: dict[str, tuple[int, dict[str, Any]]] = {}
    async with served() as (server, key):
        for case, (body, _) in MALFORMED.items():
            response = await server.post(key, body)
            answers[case] = (response.status_code, response.json() if response.content else {})
        params = {case: (await server.post(key, body)).json() for case, (body, _) in BAD_PARAMS.items()}
        duplicated = [await server.post(key, body) for body in DUPLICATED]
        still = await server.post(key, CALL)
    for case, answer in params.items():
        message = answer["error"]["message"]
        assert answer["error"]["code"] == -32602 and BAD_PARAMS[case][1] in message, (case, answer)
        assert not _unclear(message)
    for response in duplicated:  # a read key never reaches `ask`, however the keys are repeated
        reached = response.status_code == 200 and "topic" in response.json()["result"]["structuredContent"]
        assert response.status_code == 403 or reached, response.text
    for case, (status, answer) in answers.items():
        message = answer.get("error", {}).get("message", "")
        assert status == 400 and MALFORMED[case][1] in message and not _unclear(message), (case, answer)
    assert still.json()["result"]["structuredContent"]["status"] == "ok"


async def test_headers_a_client_got_wrong_are_named_with_the_fix() -> None:
    """An unknown MCP-Protocol-Version names the versions served (before: a message about ``_meta``
    envelope keys); a body not declared JSON names the Content-Type to send (before: a bare
    ``Invalid Content-Type header``)."""
    async with served() as (server, key), httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
        auth = {"Authorization": f"Bearer {key}"}
        odd = {**HEADERS, **auth, "MCP-Protocol-Version": "1999-01-01"}
        version = await http.post("/mcp", json=CALL, headers=odd)
        untyped = []
        for content_type in (None, "text/plain"):
            headers = {**HEADERS, **auth} | ({} if content_type is None else {"Content-Type": content_type})
            untyped.append(await http.post("/mcp", content=json.dumps(CALL).encode(), headers=headers))
    assert version.status_code == 400
    message = version.json()["error"]["message"]
    assert "1999-01-01" in message and "2025-11-25" in message and "_meta" not in message
    for response in untyped:
        assert response.status_code == 415, response.text
        assert "Content-Type: application/json" in response.json()["error"]["message"]
