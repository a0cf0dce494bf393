"""A backend registered from outside, through the public registration function only, is served like a
built-in one: its tokens resolve in councils and chains, and doctor, diagnose, the tool schemas and
the manual all show it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.backends.base import Oracle
from ask_fable.backends.descriptor import Backend, BackendReport, ProbeOptions, Token
from ask_fable.backends.probes import new_report, tcp_reachable
from ask_fable.backends.registry import register, unregister
from ask_fable.backends.resources import Resources
from ask_fable.config import Settings, load_settings
from ask_fable.core.app import App
from ask_fable.core.doctor import diagnose
from ask_fable.core.tokens import canonical
from ask_fable.errors import BadArgs
from ask_fable.surface.server import build_server
from tests.e2e.helpers import run_in_process
from tests.fakes.fake_provider import FakeProvider

KEY = "sk-parrot-0123456789"


def answer(text: str, rec: str = "apply") -> str:
    sidecar = {"recommendation": rec, "confidence": "high", "needs_context": []}
    return f"{text}\n\n```sidecar\n{json.dumps(sidecar)}\n```"


def parrot_backend(fp: FakeProvider) -> Backend:
    """A throwaway backend speaking the Anthropic Messages shape to the fake provider."""

    def build(settings: Settings, *, token: str, model: str | None, effort: str | None,
              resources: Resources | None) -> Oracle:
        from ask_fable.backends.anthropic_api import AnthropicMessagesOracle

        return AnthropicMessagesOracle(
            token="parrot", provider="parrot", model=model or "parrot-1", family="aviary", label="Parrot",
            base_url=f"{fp.base_url}/parrot", api_key=KEY, key_var=None, max_tokens=settings.max_tokens,
            secrets=[KEY], resources=resources,
        )

    async def probe(backend: Backend, settings: Settings, options: ProbeOptions) -> BackendReport:
        report = new_report(backend)
        report.configured = True
        report.detail = f"endpoint {fp.base_url}"
        if options.reach:
            report.reachable, report.detail = await tcp_reachable(fp.base_url, options.timeout)
        return report

    return Backend(
        name="parrot", label="Parrot", family="aviary", transport="http", build=build, probe=probe,
        enable="feed the parrot", model_fallback="parrot-1",
        tokens=(Token("parrot", aliases=("polly",), about="repeats what it hears"),),
    )


@pytest.fixture
def parrot(fp: FakeProvider) -> Iterator[FakeProvider]:
    """The parrot backend registered for one test, and gone after it."""
    register(parrot_backend(fp))
    try:
        yield fp
    finally:
        unregister("parrot")


def _settings(fp: FakeProvider) -> dict[str, Any]:
    return {"glm_api_key": KEY, "glm_base_url": f"{fp.base_url}/api/anthropic", "cache": False, "hub": False}


async def _call(tool: str, arguments: dict[str, Any], settings: dict[str, Any],
                toolsets: list[str] | None = None) -> dict[str, Any]:
    server = build_server(App(load_settings(**settings)), toolsets=toolsets or ["all"])
    async with Client(server) as client:
        result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return result.structured_content


async def test_a_registered_backend_answers_in_a_council(parrot: FakeProvider) -> None:
    parrot.enqueue("anthropic", text=answer("Squawk: keep the lock."), match="parrot-1")
    parrot.enqueue("anthropic", text=answer("GLM agrees: keep it."), match="glm-5.2")
    parrot.enqueue("anthropic", text=answer("Synthesis: keep the lock."), match="parrot-1")
    with anyio.fail_after(30):
        result = await _call("ask_council", {"question": "Should the cache keep its global lock?",
                                             "models": ["polly", "glm"], "synthesizer": "parrot"},
                             _settings(parrot))
    assert result["status"] == "ok", result
    assert {s["token"] for s in result["sources"]} == {"parrot", "glm"}
    assert result["synthesizer"] == "parrot" and result["answer"] == "Synthesis: keep the lock."
    assert any(r.path.startswith("/parrot/") for r in parrot.requests_for("anthropic"))


async def test_a_registered_backend_takes_a_stage_in_a_chain(parrot: FakeProvider) -> None:
    parrot.enqueue("anthropic", text=answer("Draft.", "investigate"), match="glm-5.2")
    parrot.enqueue("anthropic", text=answer("Decision."), match="parrot-1")
    with anyio.fail_after(30):
        result = await _call("ask_chain", {"question": "How should we paginate?", "pipeline": "glm > Polly"},
                             _settings(parrot))
    assert result["status"] == "ok", result
    assert result["pipeline"] == ["glm", "parrot"]
    assert result["answered_by"] == "parrot" and result["answer"] == "Decision."


async def test_doctor_reports_a_registered_backend(parrot: FakeProvider) -> None:
    with anyio.fail_after(15):
        report = await diagnose(load_settings(), only=["parrot"], timeout=1.0)
    [entry] = report.backends
    assert (entry.name, entry.kind, entry.status, entry.model) == ("parrot", "http", "ready", "parrot-1")

    done = await anyio.to_thread.run_sync(
        lambda: run_in_process(["doctor", "--json", "--no-probe"], dict(os.environ)))
    printed = json.loads(done.stdout)
    parrot_entry = next(b for b in printed["backends"] if b["name"] == "parrot")
    assert parrot_entry["status"] == "ready" and parrot_entry["kind"] == "http"
    assert "parrot" in printed["ready"]


async def test_diagnose_lists_and_reports_a_registered_backend(parrot: FakeProvider) -> None:
    server = build_server(App(load_settings()), toolsets=["observability"])
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        with anyio.fail_after(15):
            result = await client.call_tool("diagnose", {"backends": ["parrot"]})
    assert "parrot" in tools["diagnose"].input_schema["properties"]["backends"]["items"]["enum"]
    assert not result.is_error, result.structured_content
    [entry] = result.structured_content["backends"]
    assert entry["name"] == "parrot" and entry["status"] == "ready" and entry["reachable"] is True


async def test_the_manual_lists_a_registered_backends_tokens(parrot: FakeProvider) -> None:
    result = await _call("ask_fable_help", {"topic": "tokens"}, {}, toolsets=["core"])
    text = " ".join(result["text"].split())
    assert "parrot (repeats what it hears; also polly)" in text


async def test_an_unregistered_backend_is_an_unknown_token(fp: FakeProvider) -> None:
    register(parrot_backend(fp))
    assert canonical("polly") == "parrot"
    unregister("parrot")
    with pytest.raises(BadArgs, match="unknown model token 'polly'"):
        canonical("polly")
    result = await _call("diagnose", {"backends": ["parrot"]}, {}, toolsets=["observability"])
    assert result["status"] == "error" and result["kind"] == "bad_args"
