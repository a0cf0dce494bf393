"""A read-scoped key learns nothing of the server's file layout: the real ``ask-fable serve --http``
returns paths relative to its directories (saved answers, trace bundles, the config file, settings
warnings, the standing instructions) to a read key, where a write key (the operator's) still gets
the paths in its results whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2

from ask_fable.config import config_file_path, state_dir
from tests.e2e.helpers import child_env
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.http_server import MCP_HEADERS, create_key, http_server

SIDECAR = '```sidecar\n{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```'


async def _call(http: httpx2.AsyncClient, key: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}
    response = await http.post("/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text[:500]
    result = response.json()["result"]["structuredContent"]
    assert isinstance(result, dict)
    return result


async def _initialize(http: httpx2.AsyncClient, key: str) -> dict[str, Any]:
    """The initialize result: the standing instructions list the settings problems."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "paths", "version": "1"}}}
    response = await http.post("/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"})
    result = response.json()["result"]
    assert isinstance(result, dict)
    return result


async def _results_for(http: httpx2.AsyncClient, key: str) -> dict[str, dict[str, Any]]:
    """One answer saved and traced in full, then every read tool that can name a file."""
    asked = await _call(http, key, "ask_glm", {"question": "Is this lock ordering safe under load?"})
    assert asked["status"] == "ok", asked
    return {
        "ask_glm": asked,
        "trace_get": await _call(http, key, "trace_get", {"trace_id": asked["trace_id"],
                                                          "include_content": True}),
        "list_ollama_models": await _call(http, key, "list_ollama_models", {}),
        "ask_fable_help": await _call(http, key, "ask_fable_help", {"topic": "settings"}),
        "diagnose": await _call(http, key, "diagnose", {}),
    }


async def test_a_read_key_gets_no_absolute_server_path(tmp_path: Path) -> None:
    """Before: read keys received the state directory, the config file and saved paths in full."""
    config = config_file_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"timeout": "soon"}))  # a settings warning names the config file
    with FakeProvider() as fp:
        fp.enqueue("anthropic", text=f"Yes.\n\n{SIDECAR}", times=None)
        env = child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_CACHE="false", ASK_FABLE_TRACE_MODE="full",
                        ASK_FABLE_SAVE="1", ASK_FABLE_GLM_API_KEY="sk-glm-paths-0123456789abcdef",
                        ASK_FABLE_GLM_BASE_URL=fp.base_url)
        reader, writer = create_key(env, "reader", "read"), create_key(env, "writer", "write")
        with http_server(env, tmp_path / "stderr.log") as server:
            async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
                read = await _results_for(http, reader)
                read["initialize"] = await _initialize(http, reader)
                written = await _results_for(http, writer)
    home = str(Path.home())
    leaks = {tool: result for tool, result in read.items() if home in json.dumps(result)}
    saved = read["ask_glm"]["saved"]
    bundle = read["trace_get"]["trace"]["artifacts"]["bundle"]
    print(f"read key sees saved={saved!r} bundle={bundle!r}; write key sees {written['ask_glm']['saved']!r}")
    assert leaks == {}
    assert saved.startswith("answers/") and (state_dir() / saved).is_file()
    assert bundle.startswith("traces/") and (state_dir() / bundle).is_file()
    assert "config.json" in json.dumps(read["ask_glm"]["warnings"])
    assert "config.json" in read["initialize"]["instructions"]
    assert written["ask_glm"]["saved"].startswith(str(state_dir()))
