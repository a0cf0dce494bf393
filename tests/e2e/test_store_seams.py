"""Stores are interfaces: an implementation handed to the App serves the tools, and a failing store
costs the caller nothing, through the MCP client."""

from __future__ import annotations

from pathlib import Path

from mcp import Client

from ask_fable.core.app import App
from ask_fable.stores.interfaces import GivenStores
from ask_fable.surface.server import build_server
from tests.e2e.helpers import structured, wired_app
from tests.fakes.fake_provider import DEFAULT_ANSWER, FakeProvider
from tests.fakes.memory_stores import Failing, MemoryContextBus

SCHEMA = "CREATE TABLE invoices (id bigint primary key, total numeric)"


async def test_a_context_bus_handed_to_the_app_serves_the_context_tools_and_context_ref(
    fp: FakeProvider,
) -> None:
    bus = MemoryContextBus()
    settings = wired_app(fp).settings
    app = App(settings, stores=GivenStores(context=bus))
    async with Client(build_server(app, toolsets=["all"])) as c:
        written = await structured(c, "context_write", {"key": "schema", "value": SCHEMA})
        assert written["status"] == "ok" and written["size_chars"] == len(SCHEMA)
        assert bus.entries[("local", "schema")].value == SCHEMA

        listing = await structured(c, "context_list", {})
        assert [e["key"] for e in listing["entries"]] == ["schema"]
        assert (await structured(c, "context_read", {"key": "schema"}))["value"] == SCHEMA

        answer = await structured(c, "ask_glm", {"question": "Is this schema missing an index?",
                                                 "context_ref": "schema"})
        assert answer["status"] == "ok" and answer["context_ref_resolved"] == ["schema"]
        assert SCHEMA in str(fp.last_json("anthropic")["messages"])

        deleted = await structured(c, "context_delete", {"key": "schema"})
        assert deleted["existed"] is True and bus.entries == {}
    assert {"write", "list", "read", "resolve", "delete"} <= set(bus.calls)
    assert not Path(settings.context_db).exists()


async def test_a_failing_audit_store_costs_the_caller_nothing(fp: FakeProvider) -> None:
    real = wired_app(fp)
    broken = Failing(real.audit, OSError("audit volume is read-only"), "append")
    app = App(real.settings, stores=GivenStores(audit=broken))
    async with Client(build_server(app, toolsets=["all"])) as c:
        answer = await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"})
        assert answer["status"] == "ok" and answer["answer"] == DEFAULT_ANSWER, answer

        trace = (await structured(c, "trace_get", {"trace_id": answer["trace_id"]}))["trace"]
        assert trace["status"] == "ok"
        assert [e["attrs"] for e in trace["events"] if e["name"] == "store.error"] == [
            {"store": "audit", "error": "OSError"}
        ]
        turns = (await structured(c, "session_peek", {"session_key": "ask_glm"}))["turns"]
        assert [t["answer"] for t in turns] == [DEFAULT_ANSWER]
        assert (await structured(c, "stats", {"window": "all"}))["totals"]["calls"] == 0
