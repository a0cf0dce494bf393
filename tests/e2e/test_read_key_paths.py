"""A key without the admin scope learns nothing of the server's file layout: the real
``ask-fable serve --http`` returns paths relative to its directories (saved answers, trace bundles,
the config file, settings warnings, the standing instructions) to read and ask keys, where an admin
key (the operator's) still gets the paths in its results whole."""

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


async def _results_for(http: httpx2.AsyncClient, asker: str, reader: str) -> dict[str, dict[str, Any]]:
    """One answer saved and traced in full (asked with ``asker``), then every tool that can name a
    file, each called with the weakest key that may call it."""
    asked = await _call(http, asker, "ask_glm", {"question": "Is this lock ordering safe under load?"})
    assert asked["status"] == "ok", asked
    return {
        "ask_glm": asked,
        "trace_get": await _call(http, reader, "trace_get", {"trace_id": asked["trace_id"],
                                                             "include_content": True}),
        "list_ollama_models": await _call(http, asker, "list_ollama_models", {}),
        "ask_fable_help": await _call(http, reader, "ask_fable_help", {"topic": "settings"}),
        "diagnose": await _call(http, asker, "diagnose", {}),
    }


async def test_keys_without_admin_scope_get_no_absolute_server_path(tmp_path: Path) -> None:
    """Before: every key received the state directory, the config file and saved paths in full."""
    config = config_file_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"timeout": "soon"}))  # a settings warning names the config file
    with FakeProvider() as fp:
        fp.enqueue("anthropic", text=f"Yes.\n\n{SIDECAR}", times=None)
        env = child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_CACHE="false", ASK_FABLE_TRACE_MODE="full",
                        ASK_FABLE_SAVE="1", ASK_FABLE_GLM_API_KEY="sk-glm-paths-0123456789abcdef",
                        ASK_FABLE_GLM_BASE_URL=fp.base_url)
        reader, asker, admin = (create_key(env, scope, scope, tenant="team")
                                for scope in ("read", "ask", "admin"))
        with http_server(env, tmp_path / "stderr.log") as server:
            async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
                seen = await _results_for(http, asker, reader)
                seen["initialize"] = await _initialize(http, reader)
                operator = await _results_for(http, admin, admin)
    home = str(Path.home())
    leaks = {tool: result for tool, result in seen.items() if home in json.dumps(result)}
    saved = seen["ask_glm"]["saved"]
    bundle = seen["trace_get"]["trace"]["artifacts"]["bundle"]
    print(f"ask/read keys see saved={saved!r} bundle={bundle!r}; admin sees {operator['ask_glm']['saved']!r}")
    assert leaks == {}
    assert saved.startswith("answers/") and (state_dir() / saved).is_file()
    assert bundle.startswith("traces/") and (state_dir() / bundle).is_file()
    assert "config.json" in json.dumps(seen["ask_glm"]["warnings"])
    assert "config.json" in seen["initialize"]["instructions"]
    assert operator["ask_glm"]["saved"].startswith(str(state_dir()))


def _web_view_trace_page(http: httpx2.Client, key: str, trace_id: str) -> str:
    """The web view's page of one trace, as the browser of someone logged in with ``key`` sees it."""
    import re

    form = http.get("/ui/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None, form.text
    assert http.post("/ui/login", data={"key": key, "csrf": csrf.group(1)}).status_code == 303
    page = http.get(f"/ui/traces/{trace_id}")
    assert page.status_code == 200, page.text[:500]
    return page.text


def test_the_web_view_shows_keys_without_admin_scope_no_absolute_server_path(tmp_path: Path) -> None:
    """A full-mode trace whose answer was saved, opened in the web view: a read or ask key's login sees
    the saved file relative to the state directory, where the operator's admin login sees it whole."""
    with FakeProvider() as fp:
        fp.enqueue("anthropic", text=f"Yes.\n\n{SIDECAR}", times=None)
        env = child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_CACHE="false", ASK_FABLE_TRACE_MODE="full",
                        ASK_FABLE_SAVE="1", ASK_FABLE_GLM_API_KEY="sk-glm-paths-0123456789abcdef",
                        ASK_FABLE_GLM_BASE_URL=fp.base_url)
        keys = {scope: create_key(env, scope, scope, tenant="team") for scope in ("read", "ask", "admin")}
        with http_server(env, tmp_path / "stderr.log") as server:
            with httpx2.Client(base_url=server.url, timeout=60) as http:
                question = {"question": "Is this lock ordering safe?"}
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "ask_glm", "arguments": question}}
                asked = http.post("/mcp", json=body, headers={**MCP_HEADERS,
                                                              "Authorization": f"Bearer {keys['ask']}"})
                result = asked.json()["result"]["structuredContent"]
                assert result["status"] == "ok", result
            pages = {}
            for scope, key in keys.items():
                with httpx2.Client(base_url=server.url, timeout=60) as browser:
                    pages[scope] = _web_view_trace_page(browser, key, result["trace_id"])
    home = str(Path.home())
    relative = f"answers/tenants/team/{Path(result['saved']).name}"
    shows_home = {scope: home in page for scope, page in pages.items()}
    assert shows_home == {"read": False, "ask": False, "admin": True}
    assert relative in pages["read"] and relative in pages["ask"]
