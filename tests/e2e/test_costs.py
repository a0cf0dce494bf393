"""What a call costs, through an MCP client against the fake provider: a backend that reports tokens
but no dollars is priced from them (genai-prices, an operator's negotiated price, a catalog), and a
model nobody prices says so instead of costing $0."""

from __future__ import annotations

import json

from genai_prices import Usage, calc_price

from tests.e2e.test_mode_tools import answer, call, http_settings
from tests.fakes.fake_provider import FakeProvider


async def test_deepseek_is_priced_from_the_tokens_it_reported(fp: FakeProvider) -> None:
    fp.enqueue("anthropic", text=answer("Use a queue."), match="deepseek-v4-pro",
               usage={"input_tokens": 1200, "output_tokens": 800})
    result = await call("ask_deepseek", {"question": "Should the worker poll or use a queue?"},
                        http_settings(fp))
    assert result["status"] == "ok", result
    assert result["usage"]["input_tokens"] == 1200 and result["usage"]["output_tokens"] == 800
    expected = float(calc_price(Usage(input_tokens=1200, output_tokens=800), "deepseek-v4-pro",
                                provider_id="deepseek").total_price)
    assert result["cost_usd"] == round(expected, 10) > 0
    assert result["cost_source"] == "estimated"


async def test_a_negotiated_price_replaces_the_library_price(fp: FakeProvider) -> None:
    fp.enqueue("anthropic", text=answer("Use a queue."), match="glm-5.2",
               usage={"input_tokens": 2000, "output_tokens": 1000})
    prices = {"glm": {"input_per_m": 0.5, "output_per_m": 2.0}}
    result = await call("ask_glm", {"question": "Should the worker poll or use a queue?"},
                        http_settings(fp, prices=json.dumps(prices)))
    assert result["status"] == "ok", result
    assert result["cost_usd"] == round((2000 * 0.5 + 1000 * 2.0) / 1_000_000, 10)
    assert result["cost_source"] == "estimated"


async def test_an_unknown_model_is_cost_source_unknown_never_zero(fp: FakeProvider) -> None:
    fp.enqueue("openai", text=answer("Keep the lock."), match="acme/never-heard-of-it")
    result = await call("ask_atlas", {"question": "Should the cache keep its lock?",
                                      "model": "acme/never-heard-of-it"}, http_settings(fp))
    assert result["status"] == "ok", result
    assert result["cost_source"] == "unknown"
    assert "cost_usd" not in result and result["usage"]["output_tokens"] > 0
