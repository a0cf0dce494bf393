"""Effects, scopes and tenants: what a tool declares, what a key needs, and whose data a caller sees."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client

from ask_fable.access import (
    ALL_TENANTS,
    Caller,
    Effect,
    parse_scope,
    required_scope,
    scope_allows,
    tenant_from_name,
)
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.errors import BadArgs, Forbidden
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import all_tools
from ask_fable.surface.server import build_server
from ask_fable.surface.tools.context import ListArgs, context_list


def test_the_scope_a_tool_needs_follows_from_its_effects() -> None:
    assert required_scope({Effect.READ}) == "read"
    assert required_scope({Effect.READ, Effect.SPEND}) == "ask"
    assert required_scope({Effect.WRITE}) == "ask"
    assert required_scope({Effect.SPEND, Effect.ADMINISTER}) == "admin"
    assert scope_allows("admin", "read") and scope_allows("ask", "ask") and not scope_allows("read", "ask")


def test_annotations_follow_from_effects_for_every_tool() -> None:
    for spec in all_tools():
        assert spec.read_only is not bool(spec.effects & {Effect.WRITE, Effect.ADMINISTER}), spec.name
        assert spec.open_world is (Effect.SPEND in spec.effects), spec.name
        assert not (spec.destructive and spec.read_only), spec.name


def test_scope_names_and_default_tenants() -> None:
    parsed = [parse_scope(name) for name in ("read", "ASK", " admin ", "write")]
    assert parsed == ["read", "ask", "admin", "ask"]
    with pytest.raises(BadArgs, match="use read, ask or admin"):
        parse_scope("root")
    assert tenant_from_name("Alice Smith") == "alice-smith"
    assert tenant_from_name("  CI/bot #2 ") == "ci-bot-2"


def test_a_caller_sees_its_own_tenant_unless_an_admin_names_another() -> None:
    reader = Caller(tenant="alice", scope="read")
    assert reader.view(None) == reader.view("alice") == reader.view("") == "alice"
    with pytest.raises(Forbidden, match="needs admin scope"):
        reader.view("bob")
    with pytest.raises(Forbidden):
        Caller(tenant="alice", scope="ask").view(ALL_TENANTS)
    admin = Caller(tenant="ops", scope="admin")
    assert admin.view("bob") == "bob" and admin.view(ALL_TENANTS) == ALL_TENANTS
    with pytest.raises(BadArgs):
        admin.view(ALL_TENANTS, every=False)
    with pytest.raises(BadArgs):
        admin.view("Not A Tenant")
    assert Caller() == Caller(tenant="local", scope="admin")


def _context(key: Any) -> ToolContext:
    request = SimpleNamespace(scope={"ask_fable.api_key": key})
    mcp = SimpleNamespace(request_context=SimpleNamespace(request=request))
    return ToolContext(App(load_settings()), mcp)


async def test_the_tools_refuse_another_tenant_whatever_the_transport() -> None:
    """The rule holds in the tool too, not only in the HTTP guard: a non-admin naming another tenant
    gets a forbidden result."""
    key = SimpleNamespace(id=1, name="alice", tenant="alice", scope="read")
    with pytest.raises(Forbidden) as refused:
        await context_list(ListArgs(tenant="*"), _context(key))
    result = refused.value.to_result()
    assert (result["kind"], result["required_scope"]) == ("forbidden", "admin")
    listed = await context_list(ListArgs(), _context(key))
    assert listed.model_dump(exclude_unset=True) == {"status": "ok", "count": 0, "entries": []}


async def test_over_stdio_the_caller_is_the_local_operator() -> None:
    """stdio is the machine's operator: tenant local, admin scope, so tenant="*" works there."""
    async with Client(build_server(App(load_settings()), toolsets=["all"])) as client:
        await client.call_tool("context_write", {"key": "notes", "value": "local notes"})
        every = (await client.call_tool("context_list", {"tenant": "*"})).structured_content
    assert [(e["tenant"], e["key"]) for e in every["entries"]] == [("local", "notes")]
