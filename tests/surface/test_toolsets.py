"""Toolsets: what each start-up choice serves, and what the default costs in context."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.errors import BadArgs
from ask_fable.surface.registry import FAMILIES, all_tools
from ask_fable.surface.server import build_server
from ask_fable.surface.toolsets import families_for, select_tools
from tests.spec_tools import BACKEND_TOOLS

#: Every tool the contract names, once (the backends' one-model tools from their descriptors).
SPEC_TOOLS = frozenset({
    *BACKEND_TOOLS, "ask", "ask_council", "ask_chain", "ask_debate", "ask_ollama_council",
    "ask_atlas_council", "ask_openrouter_council", "list_atlas_models", "list_openrouter_models",
    "list_ollama_models", "configure_ollama_council", "configure_atlas_council",
    "configure_openrouter_council", "configure_tracing", "context_write", "context_read", "context_list",
    "context_delete", "context_pack", "ask_fable_help", "reset_session", "stats", "trace_list", "trace_get",
    "session_list", "session_peek", "session_stats", "diagnose", "key_usage",
})
REASONING_MODES = ("ask", "ask_council", "ask_chain", "ask_debate", "ask_fable_help")
DEFAULT_BUDGET_BYTES = 12 * 1024


async def _listing(toolsets: list[str] | None) -> tuple[list[str], int]:
    """Tool names and the byte size of the tools/list result as a client receives it."""
    server = build_server(App(load_settings()), toolsets=toolsets)
    async with Client(server, mode="legacy") as client:
        result = await client.list_tools()
    wire = json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True), separators=(",", ":"))
    return [tool.name for tool in result.tools], len(wire.encode("utf-8"))


async def test_default_toolset_keeps_every_reasoning_mode_within_12_kb() -> None:
    names, size = await _listing(None)
    assert set(REASONING_MODES) <= set(names)
    assert size <= DEFAULT_BUDGET_BYTES, f"default tools/list is {size} bytes"


async def test_all_lists_exactly_the_spec_tools() -> None:
    names, _ = await _listing(["all"])
    assert len(names) == len(set(names))
    assert set(names) == SPEC_TOOLS


async def test_every_declared_tool_belongs_to_some_family_toolset() -> None:
    everything = {spec.name for spec in all_tools()}
    by_family = {spec.name for family in FAMILIES for spec in select_tools([family])}
    assert by_family == everything


def test_aliases_name_families() -> None:
    assert families_for(["council"]) == ["core"]
    assert families_for("modes,models") == ["core", "single"]
    assert families_for(["traces", "sessions"]) == ["observability", "hub"]


def test_default_and_all_bundles() -> None:
    assert families_for(None) == families_for(["default"])
    assert set(families_for(["default"])) >= {"core"}
    assert families_for(["all"]) == list(FAMILIES)


def test_a_minus_name_drops_a_toolset() -> None:
    assert families_for("all,-hub,-councils") == [f for f in FAMILIES if f not in ("hub", "councils")]
    assert "context" not in families_for("-context")
    assert "core" in families_for("-context")


def test_unknown_toolset_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(BadArgs) as info:
        families_for(["core", "bogus"])
    assert "'bogus'" in info.value.detail
    for known in ("default", "all", *FAMILIES):
        assert known in info.value.detail


def test_build_server_refuses_an_unknown_toolset() -> None:
    with pytest.raises(BadArgs):
        build_server(App(load_settings()), toolsets=["nope"])


async def test_the_environment_variable_chooses_the_toolsets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_TOOLSETS", "observability")
    server = build_server(App(load_settings()))
    assert set(server.specs) == {spec.name for spec in select_tools(["observability"])}
    assert "diagnose" in server.specs


@pytest.mark.parametrize("toolsets", [None, ["all"], ["core", "context"]])
async def test_every_listed_tool_publishes_its_output_schema(toolsets: list[str] | None) -> None:
    server = build_server(App(load_settings()), toolsets=toolsets)
    async with Client(server, mode="legacy") as client:
        result = await client.list_tools()
    assert result.tools and all(tool.output_schema is not None for tool in result.tools)


@pytest.mark.parametrize("value", ["-core", "bogus"])
async def test_a_bad_toolsets_setting_serves_the_default_and_says_so(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("ASK_FABLE_TOOLSETS", value)
    server = build_server(App(load_settings()))
    assert set(server.specs) == {spec.name for spec in select_tools(["default"])}
    async with Client(server, mode="legacy") as client:
        instructions = client.instructions or ""
        helped = (await client.call_tool("ask_fable_help", {"topic": "tools"})).structured_content
        unknown = (await client.call_tool("trace_list", {})).structured_content
    assert "toolsets from ASK_FABLE_TOOLSETS: " in instructions
    for result in (helped, unknown):
        assert any("ASK_FABLE_TOOLSETS" in w and "serving the default toolset (core)" in w
                   for w in result["warnings"])


def test_the_option_that_adds_a_toolset_keeps_what_is_served() -> None:
    from ask_fable.surface.toolsets import toolsets_adding

    assert toolsets_adding(["core"], "context") == "default,context"
    assert toolsets_adding(["core", "context"], "hub") == "default,context,hub"
    assert toolsets_adding(["observability"], "hub") == "observability,hub"


async def test_help_on_a_wider_server_lists_its_tools_and_the_option_for_the_rest() -> None:
    async with Client(build_server(App(load_settings()), toolsets=["default", "context"])) as client:
        helped = (await client.call_tool("ask_fable_help", {"topic": "all"})).structured_content
    assert set(helped["tools"]) == {"core", "context"}
    others = {other["toolset"]: other["flag"] for other in helped["other_toolsets"]}
    assert others["hub"] == "--toolsets default,context,hub" and "context" not in others
    assert helped["text"].startswith("## tools\nThis server serves 11 tools")
    assert "## modes" in helped["text"]


@pytest.mark.parametrize("mode", ["legacy", None])
async def test_the_instructions_name_only_served_tools_and_where_the_others_are(mode: str | None) -> None:
    """The standing instructions follow the toolsets: a server without the reasoning modes does not tell
    the client to call them (before, it named `ask` and `ask_council` whatever it served); both point at
    the context bus by its toolset."""
    import re

    def named(text: str) -> set[str]:
        return set(re.findall(r"`(\w+)[`(]", text)) & {spec.name for spec in select_tools(["all"])}

    kwargs = {"mode": mode} if mode else {}
    async with Client(build_server(toolsets=["single"]), **kwargs) as client:
        single = client.instructions or ""
    async with Client(build_server(toolsets=["default"]), **kwargs) as client:
        default = client.instructions or ""
    assert named(single) == {"context_write"}, single  # context_ref works with every model tool
    assert named(default) == {"ask", "ask_council", "ask_chain", "ask_debate", "ask_fable_help",
                              "context_write"}
    assert "the `context` toolset" in default


def test_each_point_of_the_instructions_names_the_toolset_its_tools_are_in() -> None:
    """The instructions choose their points by toolset without loading the tools (start stays fast):
    the toolset each point states is the one the registry puts its tools in."""
    from ask_fable.surface.server import GUIDANCE

    family_of = {spec.name: spec.family for spec in all_tools()}
    for advice in GUIDANCE:
        assert all(family_of[tool] == advice.family for tool in advice.tools), advice
