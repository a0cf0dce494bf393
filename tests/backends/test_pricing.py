"""Every backend's default model has a price out of the box, and the price sources apply in order."""

from __future__ import annotations

import pytest

from ask_fable.backends.builtin import BUILTIN
from ask_fable.backends.catalogs import CatalogCache, CatalogModel, openrouter_catalog_url
from ask_fable.backends.claude_common import FABLE_LADDER
from ask_fable.backends.descriptor import Backend
from ask_fable.backends.pricing import PriceBook, combined_source
from ask_fable.config import load_settings
from ask_fable.values import Usage


@pytest.mark.parametrize("backend", BUILTIN, ids=lambda b: b.name)
def test_every_backends_default_model_is_priced(backend: Backend) -> None:
    settings = load_settings()
    provider = "anthropic" if backend.transport == "claude" else backend.name
    models = FABLE_LADDER if backend.name == "fable" else (backend.model(settings),)
    for model in models:
        assert PriceBook(settings).price(provider, model, 1000, 1000) is not None, (provider, model)


def test_a_reported_cost_wins_and_an_unknown_model_counts_at_the_conservative_rate() -> None:
    book = PriceBook(load_settings(unknown_price_input_per_m=10, unknown_price_output_per_m=40))
    reported = book.call("glm", "glm-5.2", Usage(input_tokens=10, output_tokens=10, cost_usd=0.5))
    assert (reported.cost_usd, reported.source) == (0.5, "reported")
    unknown = book.call("openrouter", "acme/unknown", Usage(input_tokens=1000, output_tokens=500))
    assert unknown.cost_usd is None and unknown.source == "unknown"
    assert unknown.budget_usd == pytest.approx((1000 * 10 + 500 * 40) / 1e6)


def test_a_cli_reply_without_tokens_is_counted_locally() -> None:
    book = PriceBook(load_settings())
    priced = book.call("codex", "gpt-5.6-sol", None, sent="x" * 3000, received="y" * 300)
    assert priced.source == "estimated"
    assert priced.cost_usd == pytest.approx(book.price("codex", "gpt-5.6-sol", 1000, 100))


def test_a_fetched_catalog_price_comes_before_the_library() -> None:
    settings = load_settings()
    catalogs = CatalogCache()
    catalogs.put(openrouter_catalog_url(str(settings.value_of("openrouter_base_url"))),
                 [CatalogModel(id="deepseek/deepseek-v4-pro", name="x", provider="deepseek",
                               prompt_per_m=1.0, completion_per_m=4.0)])
    assert PriceBook(settings, catalogs).price("openrouter", "deepseek/deepseek-v4-pro", 1000, 1000) \
        == pytest.approx(0.005)


def test_a_calls_cost_source_combines_its_parts() -> None:
    assert combined_source([]) is None
    assert combined_source(["reported", "reported"]) == "reported"
    assert combined_source(["estimated"]) == "estimated"
    assert combined_source(["reported", "estimated"]) == "mixed"
    assert combined_source(["reported", "unknown"]) == "unknown"
