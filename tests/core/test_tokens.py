"""Model tokens: aliases, the twin group, tiers, pipelines, provider normalization, oracle building."""

from __future__ import annotations

import pytest

from ask_fable.config import load_settings
from ask_fable.core import tokens
from ask_fable.core.tokens import (
    UnavailableOracle,
    canonical,
    expand_models,
    normalize_ollama_model,
    normalize_synthesizer,
    parse_pipeline,
    provider_council_tokens,
    provider_synth_ladder,
    resolve_oracle,
    single_token,
    tier_models,
)
from ask_fable.errors import BadArgs, NotConfigured


@pytest.mark.parametrize(
    ("alias", "expected"),
    [("m3", "minimax"), ("gpt", "codex"), ("opus5", "opus"), ("opus-5", "opus"), ("OPUS", "opus"),
     (" fable51 ", "fable51"), ("Kimi", "kimi")],
)
def test_aliases_resolve_to_one_canonical_token(alias: str, expected: str) -> None:
    assert canonical(alias) == expected


def test_prefixed_tokens_keep_their_model_id() -> None:
    assert canonical("Atlas:openai/GPT-5.6-sol") == "atlas:openai/GPT-5.6-sol"
    assert canonical("ollama:qwen3-coder:480b-cloud") == "ollama:qwen3-coder:480b-cloud"
    assert canonical("openrouter: meta/llama-5") == "openrouter:meta/llama-5"


def test_unknown_token_is_bad_args_naming_the_known_ones() -> None:
    with pytest.raises(BadArgs) as info:
        canonical("gpt5")
    assert "gpt5" in info.value.detail
    for known in ("fable", "minimax", "codex", "twin", "ollama:<model>"):
        assert known in info.value.detail


def test_empty_prefixed_model_is_bad_args() -> None:
    with pytest.raises(BadArgs):
        canonical("atlas:")


@pytest.mark.parametrize("spelling", ["twin", "twins", "twin flames", "Twin-Flame", "twin_flames"])
def test_twin_expands_in_place_in_a_list(spelling: str) -> None:
    assert expand_models(["m3", spelling, "glm"]) == ["minimax", "fable", "opus", "glm"]


@pytest.mark.parametrize("spelling", ["twin", "twin flames"])
def test_twin_is_refused_in_a_single_model_slot(spelling: str) -> None:
    with pytest.raises(BadArgs) as info:
        single_token(spelling)
    assert "fable + opus" in info.value.detail


def test_pipeline_string_keeps_order_and_repeats_and_expands_twin() -> None:
    assert parse_pipeline("m3 > twin > fable") == ["minimax", "fable", "opus", "fable"]
    assert parse_pipeline(["glm", "m3 > fable"]) == ["glm", "minimax", "fable"]


@pytest.mark.parametrize("bad", ["", "  ", "fable >> opus", "fable >"])
def test_malformed_pipeline_is_bad_args(bad: str) -> None:
    with pytest.raises(BadArgs):
        parse_pipeline(bad)


def test_default_tier_adds_deepseek_only_with_its_key() -> None:
    assert tier_models("default", load_settings()) == ["minimax", "fable"]
    keyed = load_settings(deepseek_api_key="sk-test-123456")
    assert tier_models("default", keyed) == ["minimax", "deepseek", "fable"]


def test_twin_and_middle_tiers() -> None:
    settings = load_settings()
    assert tier_models("twin", settings) == ["fable", "opus"]
    middle = tier_models("middle", settings)
    assert set(middle) == {"fable", "minimax", "opus", "glm", "gemini", "codex", "grok", "kimi"}
    assert middle[0] == "minimax" and middle[-1] == "fable"


def test_full_tier_appends_the_configured_ollama_council() -> None:
    settings = load_settings(ollama_council=["minimax-m3", "gpt-oss:120b-cloud"])
    full = tier_models("full", settings)
    assert full[-2:] == ["ollama:minimax-m3:cloud", "ollama:gpt-oss:120b-cloud"]
    assert full[: len(tier_models("middle", settings))] == tier_models("middle", settings)


def test_unknown_tier_is_bad_args() -> None:
    with pytest.raises(BadArgs, match="default, twin, middle, full"):
        tier_models("huge", load_settings())


@pytest.mark.parametrize(
    ("name", "expected"),
    [("minimax-m3", "minimax-m3:cloud"), ("ollama:glm-5.2", "glm-5.2:cloud"),
     ("gpt-oss:120b-cloud", "gpt-oss:120b-cloud"), ("deepseek-v4-pro:cloud", "deepseek-v4-pro:cloud")],
)
def test_ollama_names_are_normalized(name: str, expected: str) -> None:
    assert normalize_ollama_model(name) == expected


def test_synthesizer_normalization() -> None:
    assert normalize_synthesizer("gpt", "atlas") == "codex"
    assert normalize_synthesizer("openai/gpt-5.6-sol", "atlas") == "atlas:openai/gpt-5.6-sol"
    assert normalize_synthesizer("atlas:openai/gpt-5.6-sol", "atlas") == "atlas:openai/gpt-5.6-sol"
    assert normalize_synthesizer("opus5") == "opus"
    with pytest.raises(BadArgs):
        normalize_synthesizer("twin", "atlas")


def test_provider_council_tokens_and_ladders() -> None:
    ollama = provider_council_tokens("ollama", ["minimax-m3", "ollama:minimax-m3"])
    assert ollama == ["ollama:minimax-m3:cloud"]
    assert provider_council_tokens("atlas", ["atlas:zai-org/glm-5.2", "xai/grok-4.6"]) == [
        "atlas:zai-org/glm-5.2", "atlas:xai/grok-4.6",
    ]
    assert provider_synth_ladder("atlas") == ["codex", "atlas:openai/gpt-5.6-sol", "fable"]
    assert provider_synth_ladder("openrouter", "opus") == [
        "opus", "codex", "openrouter:openai/gpt-5.6-sol", "fable",
    ]


def test_family_is_inferred_from_provider_model_ids() -> None:
    assert tokens.family_of("opus") == "anthropic"
    assert tokens.family_of("atlas:openai/gpt-5.6-sol") == "openai"
    assert tokens.family_of("ollama:qwen3-coder:480b-cloud") == "qwen"
    assert tokens.family_of("openrouter:acme/mystery") == "unknown"
    # bare provider ids too: the lab before the slash wins, then a name fragment
    assert tokens.family_of("x-ai/grok-5") == "xai" and tokens.family_of("thudm/glm-4") == "zhipu"
    assert tokens.family_of("qwen3-coder:480b-cloud") == "qwen"


def test_one_family_of_and_one_claude_fallback_ladder() -> None:
    from ask_fable.backends import registry
    from ask_fable.core.modes import chain, council, debate

    assert registry.family_of is tokens.family_of
    assert tokens.CLAUDE_FALLBACKS == ("fable", "opus")
    assert council.synth_ladder("glm") == ["glm", *tokens.CLAUDE_FALLBACKS]
    for module in (chain, council, debate):
        assert module.CLAUDE_FALLBACKS is tokens.CLAUDE_FALLBACKS


def test_a_resolver_failure_becomes_an_unavailable_oracle() -> None:
    def resolver(token: str) -> tokens.Oracle:
        raise NotConfigured(f"{token} has no key")

    oracle = resolve_oracle("glm", resolver)
    assert isinstance(oracle, UnavailableOracle)
    with pytest.raises(NotConfigured, match="glm has no key"):
        oracle.ensure_available()


def test_build_oracle_refuses_groups_before_importing_a_backend() -> None:
    with pytest.raises(BadArgs):
        tokens.build_oracle("twins", load_settings())
