"""Arguments a tool's contract clamps rather than refuses (trace_list's and the catalogs' ``limit``):
over MCP as on the command line the clamped value is used and the result's ``note`` says so."""

from __future__ import annotations

import pytest
from mcp import Client

from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.e2e.helpers import structured


@pytest.mark.parametrize(("tool", "given", "used", "bounds"), [
    ("trace_list", -5, 1, "1–200"),
    ("trace_list", 1000, 200, "1–200"),
    ("list_openrouter_models", 0, 2, "2–8"),
    ("list_atlas_models", 50, 8, "2–8"),
])
async def test_a_clamped_limit_is_named_in_the_results_note(tool: str, given: int, used: int,
                                                            bounds: str) -> None:
    app = App()
    arguments: dict[str, object] = {"limit": given}
    if tool != "trace_list":
        arguments["refresh"] = False  # no network: the effort choices only, and the limit used
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            result = await structured(client, tool, arguments)
            within = await structured(client, tool, {**arguments, "limit": used})
    finally:
        await app.aclose()
    assert result["status"] == "ok" and result["limit"] == used
    assert f"limit {given} is outside {bounds}: used {used}" in result["note"]
    assert "is outside" not in (within.get("note") or "")
