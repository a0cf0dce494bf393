"""ask_glm, ask_deepseek, ask_atlas, ask_openrouter, ask_ollama and the catalogs, through MCP."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from ask_fable.surface.tools.http_models import CatalogResult
from tests.fakes.fake_provider import FakeProvider

KEY = "sk-PLANTED-e2e-secret-a1b2c3d4e5f6"
SIDECAR = '```sidecar\n{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```'
OR_CATALOG = {"data": [
    {"id": "deepseek/deepseek-v4-pro", "name": "DeepSeek V4 Pro", "created": 1767225600,
     "context_length": 163840, "pricing": {"prompt": "0.0000004", "completion": "0.0000016"},
     "supported_parameters": ["reasoning"], "reasoning": {"supported_efforts": ["medium", "low"]}},
    {"id": "openai/gpt-5.6-sol", "name": "GPT-5.6 Sol", "created": 1768000000, "context_length": 400000,
     "pricing": {"prompt": "0.00000125", "completion": "0.00001"}, "supported_parameters": ["reasoning"]},
    {"id": "qwen/qwen3-coder-flash", "name": "Qwen3 Coder Flash", "created": 1765000000,
     "context_length": 256000, "pricing": {"prompt": "0.00000005", "completion": "0.0000002"}},
]}

# tool → (fake route, expected model, settings that point it at the fake)
TOOLS: dict[str, tuple[str, str]] = {
    "ask_glm": ("anthropic", "glm-5.2"),
    "ask_deepseek": ("anthropic", "deepseek-v4-pro"),
    "ask_atlas": ("openai", "openai/gpt-5.6-sol"),
    "ask_openrouter": ("openai", "deepseek/deepseek-v4-pro"),
    "ask_ollama": ("ollama", "gpt-oss:120b-cloud"),
}
#: Quick retries (model calls and catalog listings) for the server under test.
FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
KEY_VARS = {"ask_glm": "ASK_FABLE_GLM_API_KEY", "ask_deepseek": "ASK_FABLE_DEEPSEEK_API_KEY",
            "ask_atlas": "ASK_FABLE_ATLAS_API_KEY", "ask_openrouter": "ASK_FABLE_OPENROUTER_API_KEY"}


@pytest.fixture(autouse=True)
def _no_clis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    empty = tmp_path / "no-clis"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}/usr/bin{os.pathsep}/bin")  # no grok / kimi
    yield


@pytest.fixture
def fp(fp: FakeProvider) -> FakeProvider:
    """The fake provider serving a model catalog on both catalog routes."""
    fp.set_json("GET", "/api/v1/models", OR_CATALOG)
    fp.set_json("GET", "/v1/models", OR_CATALOG)
    return fp


def _wired(fp: FakeProvider, keys: bool = True, **extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "glm_base_url": fp.base_url, "deepseek_base_url": fp.base_url, "atlas_base_url": fp.base_url,
        "openrouter_base_url": f"{fp.base_url}/api/v1", "ollama_base_url": fp.base_url,
        "ollama_catalog_url": f"{fp.base_url}/cloud", "atlas_model": "openai/gpt-5.6-sol",
        "cache": False, "timeout": 10,
    }
    if keys:
        values.update(glm_api_key=KEY, deepseek_api_key=KEY, atlas_api_key=KEY, openrouter_api_key=KEY)
    values.update(extra)
    return values


def _app(settings: dict[str, Any]) -> App:
    return App(load_settings(**settings), resources=Resources(retry=FAST, catalog_retry=FAST))


async def _call(tool: str, arguments: dict[str, Any], settings: dict[str, Any], mode: str | None = None,
                app: App | None = None, **client_kwargs: Any) -> dict[str, Any]:
    server = build_server(app or _app(settings), toolsets=["single", "catalogs"])
    kwargs = {"mode": mode} if mode else {}
    async with Client(server, **kwargs, **client_kwargs) as client:
        result = await client.call_tool(tool, arguments)
    payload = result.structured_content
    assert payload is not None
    assert result.is_error is (payload["status"] == "error")
    return payload


@pytest.mark.parametrize("tool", list(TOOLS))
async def test_each_http_tool_answers(fp: FakeProvider, tool: str) -> None:
    """ok, the model, the answer without its sidecar block, the sidecar, usage and a trace_id."""
    route, model = TOOLS[tool]
    fp.enqueue(route, text=f"Use a partial index.\n\n{SIDECAR}",
               usage={"input_tokens": 40, "output_tokens": 9})
    question = f"Which index does {tool} recommend for the tenant lookup?"
    result = await _call(tool, {"question": question, "context": "SELECT * FROM t WHERE tenant_id = $1"},
                         _wired(fp))
    assert result["status"] == "ok", result
    assert result["model"] == model
    assert result["answer"] == "Use a partial index."
    assert result["sidecar"] == {"recommendation": "apply", "confidence": "high", "needs_context": []}
    assert result["trace_id"]
    assert result["usage"]["input_tokens"] == 40
    [req] = fp.requests_for(route)
    sent = req.body.decode()
    assert question in sent and "tenant_id = $1" in sent
    assert req.json["model"] == model


@pytest.mark.parametrize("tool", list(KEY_VARS))
async def test_missing_key_is_not_configured(fp: FakeProvider, tool: str) -> None:
    """Without its key a tool returns not_configured naming the variable, and sends nothing."""
    result = await _call(tool, {"question": "Is the retry loop bounded?"}, _wired(fp, keys=False))
    assert result["status"] == "error" and result["kind"] == "not_configured"
    assert KEY_VARS[tool] in result["detail"]
    assert fp.requests == []


@pytest.mark.parametrize("tool", list(KEY_VARS))
async def test_rejected_key_is_not_configured_naming_the_variable(fp: FakeProvider, tool: str) -> None:
    """A 401 is not retried: not_configured, the hint names the tool's key variable, the key is not echoed."""
    route, _ = TOOLS[tool]
    fp.enqueue(route, status=401, error=f"invalid api key {KEY}", times=None)
    result = await _call(tool, {"question": "Is the retry loop bounded?"}, _wired(fp))
    assert (result["status"], result["kind"]) == ("error", "not_configured"), result
    assert KEY_VARS[tool] in result["hint"] and "401" in result["detail"]
    assert KEY not in str(result)
    assert len(fp.requests_for(route)) == 1


async def test_ollama_daemon_refusing_a_cloud_model_names_ollama_signin(fp: FakeProvider) -> None:
    """The local daemon answering 401 (not signed in, a :cloud model) is not_configured: `ollama signin`."""
    fp.enqueue("ollama", status=401, error="unauthorized")
    result = await _call("ask_ollama", {"question": "Is the retry loop bounded?"}, _wired(fp))
    assert (result["status"], result["kind"]) == ("error", "not_configured"), result
    assert "ollama signin" in result["hint"]


async def test_openrouter_reports_cost_and_clamped_effort(fp: FakeProvider) -> None:
    """ask_openrouter(effort=deep) on a model that tops out at medium sends medium and reports cost."""
    fp.enqueue("openai", text=f"Shard by tenant.\n\n{SIDECAR}", usage={"input_tokens": 12, "output_tokens": 6,
                                                                       "cost": 0.00042})
    result = await _call("ask_openrouter", {"question": "How should we shard the events table?",
                                            "effort": "deep"}, _wired(fp))
    assert result["status"] == "ok"
    assert result["cost_usd"] == pytest.approx(0.00042)
    assert result["effort"] == "medium"
    assert fp.last_json("openai")["reasoning"] == {"effort": "medium"}
    assert fp.last_json("openai")["usage"] == {"include": True}


async def test_atlas_model_and_effort_arguments(fp: FakeProvider) -> None:
    """ask_atlas passes the chosen model and maps effort to reasoning_effort."""
    fp.enqueue("openai", text=f"Fine.\n\n{SIDECAR}")
    result = await _call("ask_atlas", {"question": "Is this lock order safe?", "model": "zai-org/glm-5.2",
                                       "effort": "quick"}, _wired(fp))
    assert result["model"] == "zai-org/glm-5.2"
    assert fp.last_json("openai")["reasoning_effort"] == "low"
    assert fp.requests_for("openai")[0].path == "/v1/chat/completions"


async def test_atlas_grok_routes_to_the_local_cli(fp: FakeProvider, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """xai/grok-* on ask_atlas runs the installed grok CLI without any Atlas key."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    grok = bin_dir / "grok"
    grok.write_text("#!/bin/sh\ncat >/dev/null\necho 'Grok via the CLI.'\n")
    grok.chmod(grok.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    result = await _call("ask_atlas", {"question": "Is this lock order safe?", "model": "xai/grok-4.6"},
                         _wired(fp, keys=False))
    assert result["status"] == "ok", result
    assert result["routed_via"] == "grok_cli"
    assert result["answer"] == "Grok via the CLI."
    assert fp.requests == []


async def test_faults_are_structured(fp: FakeProvider) -> None:
    """429 then success is retried; repeated 500, garbage and a hang become structured errors."""
    fp.enqueue("anthropic", status=429, retry_after=0.05)
    fp.enqueue("anthropic", text=f"Recovered.\n\n{SIDECAR}")
    ok = await _call("ask_glm", {"question": "Is the migration reversible?"}, _wired(fp))
    assert ok["status"] == "ok" and ok["answer"] == "Recovered."

    fp.enqueue("openai", status=500, error="upstream overloaded", times=3)
    failed = await _call("ask_atlas", {"question": "Is the migration reversible?"}, _wired(fp))
    assert failed["kind"] == "upstream_error" and "upstream overloaded" in failed["detail"]

    fp.enqueue("ollama", garbage=True)
    garbage = await _call("ask_ollama", {"question": "Is the migration reversible?"}, _wired(fp))
    assert garbage["kind"] == "upstream_error"

    fp.enqueue("anthropic", hang=True)
    with anyio.fail_after(10):
        hung = await _call("ask_deepseek", {"question": "Is the migration reversible?"},
                           _wired(fp, timeout=1))
    assert hung["kind"] == "timeout"


async def test_planted_key_never_reaches_results_or_state(fp: FakeProvider, isolated_env: Path) -> None:
    """Providers echoing the key: no result, audit line, trace or saved file carries it."""
    echo = f"invalid x-api-key {KEY}"
    settings = _wired(fp, trace_mode="full", save=True, audit_raw=True)
    outputs: list[str] = []
    fp.enqueue("anthropic", status=401, error=echo)
    outputs.append(str(await _call("ask_glm", {"question": "Is the key valid?"}, settings)))
    fp.enqueue("openai", status=503, error=echo, times=3)
    outputs.append(str(await _call("ask_openrouter", {"question": "Is the key valid?"}, settings)))
    fp.enqueue("openai", body=f"<html>{echo}</html>".encode(), status=200)
    outputs.append(str(await _call("ask_atlas", {"question": "Is the key valid?"}, settings)))
    fp.enqueue("ollama", text=f"All good.\n\n{SIDECAR}")
    outputs.append(str(await _call("ask_ollama", {"question": "Is the key valid?"}, settings)))
    assert all(KEY not in text for text in outputs)
    assert any("[REDACTED]" in text for text in outputs)
    leaked = [p for p in isolated_env.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []
    # The key travelled only where it belongs: as a header to the providers that own it.
    for req in fp.requests:
        assert KEY not in req.body.decode()


async def test_an_answer_that_echoes_a_configured_key_reaches_the_caller_redacted(fp: FakeProvider) -> None:
    """A model that repeats the provider key in its answer: the result the caller gets, both its
    structured content and its text, carries [REDACTED] in its place."""
    fp.enqueue("anthropic", text=f"Your key {KEY} is fine.\n\n{SIDECAR}")
    server = build_server(_app(_wired(fp)), toolsets=["single"])
    async with Client(server) as client:
        result = await client.call_tool("ask_glm", {"question": "Is the key valid?"})
    assert result.structured_content is not None
    assert result.structured_content["status"] == "ok"
    assert result.structured_content["answer"] == "Your key [REDACTED] is fine."
    assert KEY not in str(result.structured_content) and KEY not in str(result.content)


async def test_a_key_changed_in_the_config_file_between_calls_is_redacted_from_the_next_result(
        fp: FakeProvider, isolated_env: Path) -> None:
    """The server keeps running while the operator rotates the GLM key in the config file: the next
    answer echoing the new key reaches the caller redacted, and no stored file keeps either key."""
    from ask_fable.config import config_file_path

    config = config_file_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    # Neither has a known key shape: only the configured values can redact them.
    old, new = "glm-first-0f9e8d7c6b5a4", "glm-rotated-a1b2c3d4e5f6x"
    config.write_text(json.dumps({"glm_base_url": fp.base_url, "glm_api_key": old, "cache": False}))
    server = build_server(App(resources=Resources(retry=FAST)), toolsets=["single"])
    answers = []
    async with Client(server) as client:
        for key in (old, new):
            config.write_text(json.dumps({"glm_base_url": fp.base_url, "glm_api_key": key, "cache": False,
                                          "audit_raw": True}))
            fp.enqueue("anthropic", text=f"Your key {key} is fine.\n\n{SIDECAR}")
            result = await client.call_tool("ask_glm", {"question": f"Is {key} still valid?"})
            assert result.structured_content is not None
            answers.append(result.structured_content.get("answer"))
            assert key not in str(result.structured_content) and key not in str(result.content)
    assert answers == ["Your key [REDACTED] is fine."] * 2
    assert [req.headers.get("x-api-key") for req in fp.requests_for("anthropic")] == [old, new]
    stored = [p for p in isolated_env.rglob("*") if p.is_file() and p != config]
    assert not [p for p in stored if old.encode() in p.read_bytes() or new.encode() in p.read_bytes()]


async def test_glm_settings_changed_in_the_config_file_apply_from_the_next_call(
        fp: FakeProvider, isolated_env: Path) -> None:
    """One running server, the config file edited between calls (as the operator or a configure_*
    tool does): each call asks with the model, key and endpoint the file names at that moment."""
    from ask_fable.config import config_file_path

    config = config_file_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    steps = [("glm-5.2", "glm-key-one-0123456789", "/one"), ("glm-6-air", "glm-key-two-9876543210", "/two"),
             ("glm-6-air", "glm-key-two-9876543210", "/two")]
    server = build_server(App(resources=Resources(retry=FAST)), toolsets=["single"])
    async with Client(server) as client:
        for model, key, prefix in steps:
            config.write_text(json.dumps({"glm_base_url": fp.base_url + prefix, "glm_model": model,
                                          "glm_api_key": key, "cache": False}))
            fp.enqueue("anthropic", text=f"Fine.\n\n{SIDECAR}")
            result = await client.call_tool("ask_glm", {"question": "Is the retry bounded?"})
            assert result.structured_content is not None and result.structured_content["status"] == "ok"
            assert result.structured_content["model"] == model
    seen = [(json.loads(r.body)["model"], r.headers.get("x-api-key"), r.path.split("/v1/")[0])
            for r in fp.requests_for("anthropic")]
    assert seen == steps


def _accept(model_pick: str | None, effort: str) -> Any:
    async def callback(context: Any, params: Any) -> mt.ElicitResult:
        content: dict[str, Any] = {"effort": effort}
        props = params.requested_schema["properties"]
        if "model" in props:
            content["model"] = model_pick or props["model"]["default"]
        callback.seen.append(params)  # type: ignore[attr-defined]
        return mt.ElicitResult(action="accept", content=content)

    callback.seen = []  # type: ignore[attr-defined]
    return callback


async def test_catalog_native_picker_returns_the_selection(fp: FakeProvider) -> None:
    """A client with form elicitation gets the model + effort picker; the accepted choice comes back."""
    callback = _accept("openai/gpt-5.6-sol", "quick")
    result = await _call("list_openrouter_models", {"task": "review a risky migration", "limit": 3},
                         _wired(fp), mode="legacy", elicitation_callback=callback)
    assert result["status"] == "ok"
    assert result["selection"] == {"action": "accept", "model": "openai/gpt-5.6-sol", "effort": "quick"}
    [params] = callback.seen
    offered = [o["const"] for o in params.requested_schema["properties"]["model"]["oneOf"]]
    assert offered == [m["id"] for m in result["models"]]
    assert [o["const"] for o in params.requested_schema["properties"]["effort"]["oneOf"]] == [
        "quick", "standard", "deep"]


async def test_catalog_picker_decline(fp: FakeProvider) -> None:
    """A declined picker is reported as such, with no model chosen."""
    async def decline(context: Any, params: Any) -> mt.ElicitResult:
        return mt.ElicitResult(action="decline")

    result = await _call("list_atlas_models", {"task": "debug a flaky test"}, _wired(fp), mode="legacy",
                         elicitation_callback=decline)
    assert result["selection"]["action"] == "decline"
    assert result["selection"].get("model") is None and result["selection"].get("effort") is None


@pytest.mark.parametrize("mode", ["legacy", None])
async def test_catalog_without_elicitation_returns_the_picker(fp: FakeProvider, mode: str | None) -> None:
    """A client without form elicitation gets the same choices under picker, and no selection."""
    result = await _call("list_atlas_models", {"task": "debug a large Rust repository", "limit": 2},
                         _wired(fp), mode=mode)
    assert result["status"] == "ok" and "selection" not in result
    assert len(result["models"]) == 2
    assert [o["value"] for o in result["picker"]["models"]] == [m["id"] for m in result["models"]]
    assert [e["value"] for e in result["picker"]["efforts"]] == ["quick", "standard", "deep"]
    assert [r.path for r in fp.requests] == ["/v1/models"]


@pytest.mark.parametrize(("tool", "path"), [("list_atlas_models", "/v1/models"),
                                            ("list_openrouter_models", "/api/v1/models")])
async def test_catalog_refresh_true_fetches_every_time(fp: FakeProvider, tool: str, path: str) -> None:
    """Each refresh=true call fetches the live catalog; refresh=false then serves the server's last one
    without a request."""
    settings = _wired(fp)
    app = _app(settings)
    fresh = [await _call(tool, {"refresh": True, "interactive": False}, settings, app=app) for _ in range(3)]
    assert [r.path for r in fp.requests] == [path] * 3
    assert all(r["fetched"] is True and r["models"] for r in fresh)
    offline = await _call(tool, {"refresh": False, "interactive": False}, settings, app=app)
    assert len(fp.requests) == 3 and offline["cached"] is True and offline["models"]


async def test_ollama_listing_refresh_true_fetches_every_time(fp: FakeProvider) -> None:
    """Each refresh=true list_ollama_models asks the cloud catalog and the daemon again."""
    fp.set_json("GET", "/cloud/api/tags", {"models": [{"name": "gpt-oss:120b"}]})
    fp.ollama_tags = {"models": [{"name": "gpt-oss:120b-cloud"}]}
    settings = _wired(fp)
    app = _app(settings)
    for _ in range(3):
        result = await _call("list_ollama_models", {"refresh": True}, settings, app=app)
        assert result["reachable"] is True and result["available_cloud"] == ["gpt-oss:120b-cloud"]
    assert sorted(r.path for r in fp.requests) == ["/api/tags"] * 3 + ["/cloud/api/tags"] * 3
    offline = await _call("list_ollama_models", {"refresh": False}, settings, app=app)
    assert len(fp.requests) == 6 and offline["pulled_local"] == ["gpt-oss:120b-cloud"]


async def test_catalog_refresh_false_is_offline(fp: FakeProvider) -> None:
    """refresh=false makes no request and offers only the effort choices."""
    result = await _call("list_openrouter_models", {"refresh": False, "interactive": False}, _wired(fp))
    assert result["status"] == "ok" and result["models"] == []
    assert result["picker"]["models"] == [] and result["picker"]["default_model"] is None
    assert fp.requests == []


async def test_a_listed_model_sends_what_its_catalog_did_not_say_as_null(fp: FakeProvider) -> None:
    """A model whose catalog entry gives no context window, price or date is listed with those null,
    and the result model reads the listing it sent."""
    fp.set_json("GET", "/api/v1/models", {"data": [{"id": "mystery/bare", "name": "Bare"}]})
    result = await _call("list_openrouter_models", {"interactive": False}, _wired(fp))
    assert result["models"] == [{
        "id": "mystery/bare", "name": "Bare", "provider": "mystery", "context_length": None,
        "price_per_million": {"prompt": None, "completion": None}, "free": False, "reasoning": False,
        "released": None,
    }]
    assert CatalogResult.model_validate(result).wire() == result


async def test_catalog_unreachable_is_upstream_error(fp: FakeProvider) -> None:
    """A catalog that fails with nothing cached is a structured error."""
    fp.set_json("GET", "/api/v1/models", {"error": {"message": "catalog maintenance"}}, status=500)
    result = await _call("list_openrouter_models", {"interactive": False}, _wired(fp))
    assert result["kind"] == "upstream_error" and "catalog maintenance" in result["detail"]


async def test_list_ollama_models(fp: FakeProvider) -> None:
    """Cloud catalog, pulled models, council and config file through the tool."""
    fp.set_json("GET", "/cloud/api/tags", {"models": [{"name": "kimi-k2.7-code"}, {"name": "gpt-oss:120b"}]})
    fp.ollama_tags = {"models": [{"name": "gpt-oss:120b-cloud"}]}
    result = await _call("list_ollama_models", {}, _wired(fp))
    assert result["status"] == "ok" and result["reachable"] is True
    assert result["available_cloud"] == ["gpt-oss:120b-cloud", "kimi-k2.7-code:cloud"]
    assert result["pulled_local"] == ["gpt-oss:120b-cloud"]
    assert "minimax-m3:cloud" in result["configured_council"]
    assert result["config_file"].endswith("config.json")


async def test_listing_declares_arguments_and_families(fp: FakeProvider) -> None:
    """ask_atlas / ask_openrouter take model + effort; ask_ollama takes model; catalogs are read-only."""
    server = build_server(App(load_settings()), toolsets=["single", "catalogs"])
    async with Client(server, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"ask_glm", "ask_deepseek", "ask_atlas", "ask_openrouter", "ask_ollama", "list_atlas_models",
            "list_openrouter_models", "list_ollama_models"} <= set(tools)
    for name in ("ask_atlas", "ask_openrouter"):
        assert {"model", "effort"} <= set(tools[name].input_schema["properties"])
    assert "model" in tools["ask_ollama"].input_schema["properties"]
    assert "effort" not in tools["ask_glm"].input_schema["properties"]
    catalog_args = set(tools["list_atlas_models"].input_schema["properties"])
    assert {"refresh", "task", "limit", "interactive"} <= catalog_args
    assert tools["list_ollama_models"].annotations.read_only_hint is True
