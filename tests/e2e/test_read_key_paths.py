"""A key without the admin scope learns nothing of the server's file layout: the real
``ask-fable serve --http`` returns paths relative to its directories (saved answers, trace bundles,
the config file, settings warnings, the standing instructions) to read and ask keys, where an admin
key (the operator's) still gets the paths in its results whole."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest

from ask_fable.config import config_file_path, state_dir
from tests.e2e.helpers import child_env
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis
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


#: An absolute path of two or more components, not the path of a URL (``https://host/path``).
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~@-])/(?:[\w.@+-]+/)+[\w.@+-]+")


def _absolute_paths(result: Any) -> list[str]:
    return sorted(set(ABSOLUTE_PATH.findall(json.dumps(result))))


async def _sweep(tmp_path: Path, tools: list[str]) -> tuple[list[str], dict[str, list[str]], dict[str, Any],
                                                          FakeCLIs, Path]:
    """``tools`` called with an ask key (valid example arguments, admin tools skipped) on a server whose
    CLIs and project live outside its home, then ``diagnose`` and ``context_pack`` with an admin key:
    the tools called, the absolute paths each returned to the ask key, what the admin key got."""
    from tests.e2e.test_tool_annotations import EXAMPLES

    clis = install_fake_clis(tmp_path / "opt" / "bin")
    project = tmp_path / "srv" / "project"
    project.mkdir(parents=True)
    (project / "notes.md").write_text("The fetcher retries five times.\n", encoding="utf-8")
    with FakeProvider() as fp:
        fp.enqueue("anthropic", text=f"Yes.\n\n{SIDECAR}", times=None)
        env = child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_CACHE="false", ASK_FABLE_SAVE="1",
                        ASK_FABLE_TRACE_MODE="full", ASK_FABLE_PROJECT_ROOT=str(project),
                        ASK_FABLE_GLM_API_KEY="sk-glm-paths-0123456789abcdef",
                        ASK_FABLE_GLM_BASE_URL=fp.base_url,
                        ASK_FABLE_DEEPSEEK_API_KEY="sk-ds-paths-0123456789abcdef",
                        ASK_FABLE_DEEPSEEK_BASE_URL=fp.base_url, ASK_FABLE_TIMEOUT="10",
                        PATH=f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}")
        asker, admin = (create_key(env, scope, scope, tenant="team") for scope in ("ask", "admin"))
        leaks: dict[str, list[str]] = {}
        called: list[str] = []
        with http_server(env, tmp_path / "stderr.log") as server:
            async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
                trace_id = "none"
                for tool in tools:
                    arguments = json.loads(json.dumps(EXAMPLES[tool]).replace("{trace_id}", trace_id))
                    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": tool, "arguments": arguments}}
                    response = await http.post("/mcp", json=body,
                                               headers={**MCP_HEADERS, "Authorization": f"Bearer {asker}"})
                    if response.status_code == 403:
                        continue  # an admin tool
                    assert response.status_code == 200, (tool, response.text[:300])
                    result = response.json()["result"]["structuredContent"]
                    trace_id = result.get("trace_id", trace_id) if trace_id == "none" else trace_id
                    called.append(tool)
                    if found := _absolute_paths(result):
                        leaks[tool] = found
                operator = {tool: await _call(http, admin, tool, arguments) for tool, arguments in
                            (("diagnose", {"probe": False}),
                             ("context_pack", {"key": "pack", "paths": ["notes.md"]}))}
    return called, leaks, operator, clis, project


async def test_an_ask_key_learns_no_absolute_path_from_diagnose_or_context_pack(tmp_path: Path) -> None:
    """Before: ``diagnose`` returned 14 absolute paths to an ask key (the bundled ``claude``, each CLI
    found on PATH) and ``context_pack`` its absolute ``root``. Now, with the CLIs and the project outside
    the server's home, both (and a CLI call's trace) name each CLI by its name and the project's files
    relative to its root, while an admin key still gets where each CLI and the project are."""
    called, leaks, operator, clis, project = await _sweep(
        tmp_path, ["ask_m3", "trace_get", "diagnose", "context_pack"])
    assert called == ["ask_m3", "trace_get", "diagnose", "context_pack"]
    assert leaks == {}
    assert str(clis.bin_dir / "mmx") in json.dumps(operator["diagnose"])
    assert operator["context_pack"]["root"] == str(project.resolve())


@pytest.mark.slow
async def test_an_ask_key_learns_no_absolute_path_from_any_tool(tmp_path: Path) -> None:
    """Every tool an ask key may call, with valid arguments: names and relative paths only."""
    from tests.e2e.test_tool_annotations import EXAMPLES

    called, leaks, _, _, _ = await _sweep(tmp_path, list(EXAMPLES))
    print(f"an ask key called {len(called)} tools; absolute paths: {leaks}")
    assert len(called) > 30
    assert leaks == {}
