"""The HTTP oracle factories: tokens, providers, families, and rerouting to local CLIs."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.providers.atlas import make_atlas_oracle
from ask_fable.backends.providers.deepseek import make_deepseek_oracle
from ask_fable.backends.providers.glm import make_glm_oracle
from ask_fable.backends.providers.ollama import make_ollama_oracle
from ask_fable.backends.providers.openrouter import make_openrouter_oracle
from ask_fable.backends.registry import family_of
from ask_fable.config import load_settings
from tests.fakes.fake_provider import FakeProvider


@pytest.fixture
def no_clis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH with no grok or kimi binary."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.fixture
def fake_clis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """`grok` and `kimi` executables on PATH that print which CLI answered and the argv they got."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("grok", "kimi"):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\ncat >/dev/null\necho "{name} cli answered: $*"\n')
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    yield bin_dir


def test_tokens_providers_and_defaults(no_clis: None) -> None:
    """Each factory names its oracle the way councils and stats expect."""
    settings = load_settings()
    glm = make_glm_oracle(settings)
    assert (glm.token, glm.provider, glm.model, glm.family) == ("glm", "glm", "glm-5.2", "zhipu")
    ds = make_deepseek_oracle(settings)
    assert (ds.token, ds.provider, ds.model) == ("deepseek", "deepseek", "deepseek-v4-pro")
    assert ds.family == "deepseek"
    atlas = make_atlas_oracle(settings, model="openai/gpt-5.6-sol")
    assert (atlas.token, atlas.provider, atlas.family) == ("atlas:openai/gpt-5.6-sol", "atlas", "openai")
    assert make_atlas_oracle(settings).token == "atlas:xai/grok-4.6"  # ASK_FABLE_ATLAS_MODEL
    router = make_openrouter_oracle(settings)
    assert (router.token, router.provider) == ("openrouter:deepseek/deepseek-v4-pro", "openrouter")
    assert make_openrouter_oracle(settings, model="openrouter:qwen/qwen3-max").model == "qwen/qwen3-max"
    ollama = make_ollama_oracle(settings, model="ollama:glm-5.2:cloud")
    assert (ollama.token, ollama.provider, ollama.model, ollama.family) == (
        "ollama:glm-5.2:cloud", "ollama", "glm-5.2:cloud", "zhipu")
    assert glm.breaker_key == "glm:glm-5.2"


@pytest.mark.parametrize(("model", "family"), [
    ("anthropic/claude-opus-5", "anthropic"), ("moonshotai/kimi-k3", "moonshot"), ("xai/grok-4.6", "xai"),
    ("zai-org/glm-5.2", "zhipu"), ("qwen3-coder:480b-cloud", "qwen"), ("gpt-oss:120b-cloud", "openai"),
    ("nemotron-3-ultra:cloud", "nvidia"), ("mystery-model", "unknown"), ("x-ai/grok-5", "xai"),
])
def test_family_of(model: str, family: str) -> None:
    """Families come from the lab prefix or a well-known name fragment."""
    assert family_of(model) == family


async def test_atlas_grok_reroutes_to_the_grok_cli(fp: FakeProvider, fake_clis: Path) -> None:
    """xai/grok-* asked of Atlas runs on the local grok CLI, keyless, marked routed_via."""
    settings = load_settings(atlas_base_url=fp.base_url)  # no Atlas key at all
    oracle = make_atlas_oracle(settings, model="xai/grok-4.6", effort="deep")
    assert oracle.token == "atlas:xai/grok-4.6"
    assert oracle.provider == "grok"
    oracle.ensure_available()
    reply = await oracle.ask(OracleRequest(system="s", prompt="q?", timeout=10), EventSink())
    assert fp.requests == []
    assert reply.routed_via == "grok_cli"
    assert reply.text.startswith("grok cli answered:")
    assert "--model grok-4.6" in reply.text


async def test_openrouter_kimi_and_grok_reroute(fake_clis: Path) -> None:
    """OpenRouter's moonshotai/kimi-* and xai/grok-* ids go to the local CLIs when installed."""
    settings = load_settings()
    kimi = make_openrouter_oracle(settings, model="moonshotai/kimi-k3")
    assert (kimi.token, kimi.provider) == ("openrouter:moonshotai/kimi-k3", "kimi")
    reply = await kimi.ask(OracleRequest(system="s", prompt="q?", timeout=10), EventSink())
    assert reply.routed_via == "kimi_cli"
    assert reply.text.startswith("kimi cli answered:")
    grok = make_openrouter_oracle(settings, model="xai/grok-4.6")
    assert grok.provider == "grok"


def test_atlas_does_not_reroute_kimi(fake_clis: Path) -> None:
    """Only OpenRouter reroutes Kimi ids; Atlas keeps them on HTTP."""
    oracle = make_atlas_oracle(load_settings(), model="moonshotai/kimi-k3")
    assert oracle.provider == "atlas"


def test_without_the_cli_grok_stays_on_http(no_clis: None) -> None:
    """With no grok binary, xai/grok-* is an ordinary HTTP call needing the provider key."""
    oracle = make_atlas_oracle(load_settings(), model="xai/grok-4.6")
    assert oracle.provider == "atlas"
    router = make_openrouter_oracle(load_settings(), model="moonshotai/kimi-k3")
    assert router.provider == "openrouter"


async def test_openrouter_x_ai_grok_reroutes_with_the_prefix_stripped(fake_clis: Path) -> None:
    """OpenRouter spells Grok ids x-ai/grok-*; they run on the grok CLI as the bare model."""
    grok = make_openrouter_oracle(load_settings(), model="x-ai/grok-4.6")
    assert (grok.token, grok.provider) == ("openrouter:x-ai/grok-4.6", "grok")
    reply = await grok.ask(OracleRequest(system="s", prompt="q?", timeout=10), EventSink())
    assert reply.routed_via == "grok_cli" and "--model grok-4.6 " in reply.text


async def test_backends_apply_max_tokens_but_openrouter_only_when_asked(
    fp: FakeProvider, no_clis: None
) -> None:
    """GLM, DeepSeek and Ollama send ASK_FABLE_MAX_TOKENS themselves; OpenRouter sends none by default."""
    settings = load_settings(
        max_tokens=1234, glm_base_url=fp.base_url, glm_api_key="k" * 12, deepseek_base_url=fp.base_url,
        deepseek_api_key="d" * 12, ollama_base_url=fp.base_url, openrouter_base_url=fp.base_url,
        openrouter_api_key="o" * 12,
    )
    request = OracleRequest(system="s", prompt="q?", timeout=10)
    for oracle in (make_glm_oracle(settings), make_deepseek_oracle(settings)):
        await oracle.ask(request, EventSink())
        assert fp.requests[-1].json["max_tokens"] == 1234
    await make_ollama_oracle(settings, model="qwen3:cloud").ask(request, EventSink())
    assert fp.requests[-1].json["options"]["num_predict"] == 1234
    router = make_openrouter_oracle(settings, model="qwen/qwen3-max")
    await router.ask(request, EventSink())
    assert "max_tokens" not in fp.requests[-1].json
    await router.ask(request.model_copy(update={"max_tokens": 77}), EventSink())
    assert fp.requests[-1].json["max_tokens"] == 77


def test_an_apps_glm_and_deepseek_oracles_are_built_once_per_settings_object() -> None:
    """Calls on one App's settings share their oracle; settings loaded anew (a changed config file)
    get one built from them, and another App never shares it."""
    from ask_fable.backends.resources import Resources

    resources, other = Resources(), Resources()
    settings = load_settings(glm_model="glm-5.2", deepseek_api_key="ds-key-0123456789")
    glm = make_glm_oracle(settings, resources=resources)
    assert make_glm_oracle(settings, resources=resources) is glm
    assert make_deepseek_oracle(settings, resources=resources) is not glm
    assert make_glm_oracle(settings, resources=other) is not glm
    reloaded = load_settings(glm_model="glm-6-air")
    assert make_glm_oracle(reloaded, resources=resources).model == "glm-6-air"
    assert make_glm_oracle(settings, resources=resources).model == "glm-5.2"
    assert make_glm_oracle(settings) is not make_glm_oracle(settings)  # no App: nothing kept
