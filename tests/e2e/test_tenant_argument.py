"""A ``tenant`` argument that is not text, sent to the real ``ask-fable serve --http`` with a real key:
it is a malformed argument like any other (a structured ``bad_args`` naming it), not a scope refusal
(403) that sends the caller looking for an admin key it does not need."""

from __future__ import annotations

from typing import Any

from tests.e2e.team_server import create_key, team_server

ODD_TENANTS: dict[str, Any] = {"a number": 5, "a list": ["a"], "an object": {"name": "a"}, "true": True}
#: Tools a read key may call, each taking a ``tenant``.
READ_TOOLS = ("trace_list", "context_list", "ask_fable_help")


async def test_a_tenant_that_is_not_text_is_bad_args_for_a_read_key() -> None:
    key = str(create_key("reader", "--scope", "read")["key"])
    answers = {}
    async with team_server() as server:
        for tool in READ_TOOLS:
            for case, tenant in ODD_TENANTS.items():
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": tool, "arguments": {"tenant": tenant}}}
                response = await server.post(key, body)
                assert response.status_code == 200, (tool, case, response.text)
                answers[tool, case] = response.json()["result"]["structuredContent"]
        mine = await server.post(key, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                       "params": {"name": "trace_list", "arguments": {"tenant": "reader"}}})
    for case, result in answers.items():
        assert (result["status"], result["kind"]) == ("error", "bad_args"), (case, result)
        assert "tenant" in result["detail"], (case, result)
    assert mine.json()["result"]["structuredContent"]["status"] == "ok"
