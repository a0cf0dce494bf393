"""HTTP replies are bounded like a CLI's output: an endless stream or an oversized body ends the call
with a clear error, and the connection is closed instead of being read forever."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.backends.http_client import MAX_REPLY_BYTES, RetryPolicy
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.e2e.helpers import structured
from tests.fakes.fake_provider import FakeProvider, RecordedRequest

KEY = "sk-bounded-replies-0123456789"
QUESTION = "Why does the replica fall behind under write bursts?"
#: tool → the fake provider route that serves it
ROUTES = {"ask_glm": "anthropic", "ask_atlas": "openai", "ask_ollama": "ollama"}
LIMIT_TEXT = f"larger than {MAX_REPLY_BYTES // (1024 * 1024)} MiB"


@pytest.fixture(autouse=True)
def _no_clis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    empty = tmp_path / "no-clis"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}/usr/bin{os.pathsep}/bin")
    yield


def _app(fp: FakeProvider) -> App:
    settings = load_settings(glm_api_key=KEY, glm_base_url=fp.base_url, atlas_api_key=KEY,
                             atlas_base_url=fp.base_url, ollama_base_url=fp.base_url,
                             openrouter_api_key=KEY, openrouter_base_url=f"{fp.base_url}/api/v1",
                             cache=False, timeout=60)
    one_try = RetryPolicy(attempts=1, base_delay=0.01, max_delay=0.01)
    return App(settings, resources=Resources(retry=one_try, catalog_retry=one_try))


async def _call(fp: FakeProvider, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(build_server(_app(fp), toolsets=["single", "catalogs"])) as client:
        with anyio.fail_after(60):
            return await structured(client, tool, arguments)


async def _closed_by_us(request: RecordedRequest) -> None:
    """Wait until the fake provider saw the client close the connection mid-answer."""
    with anyio.fail_after(10):
        while not request.client_closed:
            await anyio.sleep(0.02)


@pytest.mark.parametrize("tool", list(ROUTES))
async def test_an_endless_stream_ends_the_call_at_the_reply_bound(fp: FakeProvider, tool: str) -> None:
    """A provider that streams forever gets an upstream_error naming the bound, and a closed connection."""
    route = ROUTES[tool]
    fp.enqueue(route, endless=True)  # type: ignore[arg-type]
    result = await _call(fp, tool, {"question": QUESTION})
    assert (result["status"], result["kind"]) == ("error", "upstream_error"), result
    assert LIMIT_TEXT in result["detail"] and "connection was closed" in result["detail"]
    [request] = fp.requests_for(route)
    await _closed_by_us(request)


@pytest.mark.parametrize("tool", list(ROUTES))
async def test_an_oversized_body_ends_the_call_at_the_reply_bound(fp: FakeProvider, tool: str) -> None:
    """One reply body past the bound (not streamed) is refused the same way, never held whole."""
    route = ROUTES[tool]
    # Three times the bound, more than the sockets buffer, so the fake sees the connection close.
    body = b'{"content": "' + b"x" * (3 * MAX_REPLY_BYTES) + b'"}'
    fp.enqueue(route, body=body, status=200)  # type: ignore[arg-type]
    result = await _call(fp, tool, {"question": QUESTION})
    assert (result["status"], result["kind"]) == ("error", "upstream_error"), result
    assert LIMIT_TEXT in result["detail"]
    [request] = fp.requests_for(route)
    await _closed_by_us(request)


async def test_an_oversized_catalog_is_an_error_not_a_blow_up(fp: FakeProvider) -> None:
    """A catalog listing past the bound is an upstream_error naming it."""
    fp.set_json("GET", "/api/v1/models", {"data": [], "padding": "x" * (MAX_REPLY_BYTES + 65536)})
    result = await _call(fp, "list_openrouter_models", {"refresh": True, "interactive": False})
    assert (result["status"], result["kind"]) == ("error", "upstream_error"), result
    assert LIMIT_TEXT in result["detail"]
