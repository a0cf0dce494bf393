"""Model catalogs: fetching, the short-lived cache, ranking for a task, and the picker."""

from __future__ import annotations

import time

import pytest

from ask_fable.backends import catalogs
from ask_fable.backends.catalogs import CatalogModel, clamp_effort, clamp_limit, cloud_id, rank, wants_cheap
from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.providers import atlas, ollama, openrouter
from ask_fable.backends.resources import Resources
from ask_fable.config import Settings, load_settings
from ask_fable.errors import UpstreamError
from tests.fakes.fake_provider import FakeProvider

KEY = "sk-or-PLANTED-catalog-key-000111"
DAY = 86400
NOW = int(time.time())


def _or_model(model_id: str, *, created: int, ctx: int, prompt: str, completion: str, reasoning: bool,
              efforts: list[str] | None = None, outputs: list[str] | None = None) -> dict:
    entry: dict = {"id": model_id, "name": model_id.split("/")[-1].upper(), "created": created,
                   "context_length": ctx, "pricing": {"prompt": prompt, "completion": completion},
                   "architecture": {"output_modalities": outputs or ["text"]},
                   "supported_parameters": ["max_tokens", *(["reasoning"] if reasoning else [])]}
    if reasoning:
        entry["reasoning"] = {"default_effort": "medium", "mandatory": False, "supported_efforts": efforts}
    return entry


OPENROUTER = {"data": [
    _or_model("anthropic/claude-opus-5", created=NOW - 30 * DAY, ctx=1_000_000, prompt="0.000005",
              completion="0.000025", reasoning=True),
    _or_model("anthropic/claude-haiku-5", created=NOW - 60 * DAY, ctx=200_000, prompt="0.000001",
              completion="0.000005", reasoning=True),
    _or_model("openai/gpt-5.6-sol", created=NOW - 15 * DAY, ctx=400_000, prompt="0.00000125",
              completion="0.00001", reasoning=True, efforts=["xhigh", "high", "medium", "low"]),
    _or_model("deepseek/deepseek-v4-pro", created=NOW - 90 * DAY, ctx=163_840, prompt="0.0000004",
              completion="0.0000016", reasoning=True),
    _or_model("meta-llama/llama-5-8b:free", created=NOW - 180 * DAY, ctx=128_000, prompt="0", completion="0",
              reasoning=False),
    _or_model("mistralai/mistral-small-4", created=NOW - 120 * DAY, ctx=128_000, prompt="0.0000001",
              completion="0.0000003", reasoning=False),
    _or_model("qwen/qwen3-coder-flash", created=NOW - 45 * DAY, ctx=256_000, prompt="0.00000005",
              completion="0.0000002", reasoning=False),
    _or_model("openrouter/auto", created=NOW, ctx=2_000_000, prompt="-1", completion="-1", reasoning=True),
    _or_model("openai/gpt-image-2", created=NOW, ctx=32_000, prompt="0.000005", completion="0.00004",
              reasoning=False, outputs=["image"]),
    # Released today: must rank first for a capability task with no change to the ranking code.
    _or_model("newlab/brand-new-1", created=NOW, ctx=1_000_000, prompt="0.000003", completion="0.000015",
              reasoning=True, efforts=["high", "medium"]),
]}

ATLAS = {"object": "list", "data": [
    {"id": "deepseek-ai/deepseek-v4-pro", "object": "model", "owned_by": "deepseek-ai",
     "context_window": 163840, "created_at": "2026-09-01T00:00:00Z", "pricing": {"input": 0.4, "output": 1.6},
     "tags": ["reasoning", "code"]},
    {"id": "zai-org/glm-5.2", "context_length": 200000, "created": NOW - 10 * DAY,
     "pricing": {"input": 0.6, "output": 2.2}, "capabilities": {"reasoning": True}},
    {"id": "black-forest-labs/flux-2", "type": "image", "pricing": {"input": 0.03}},
    {"id": "openai/gpt-5.6-sol", "context_length": 400000, "created": NOW - 5 * DAY,
     "pricing": {"prompt": "0.00000125", "completion": "0.00001"},
     "supported_parameters": ["reasoning_effort"]},
]}


@pytest.fixture
def res() -> Resources:
    """One App's worth of resources (its own catalog cache) with quick retries."""
    fast = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02)
    return Resources(retry=fast, catalog_retry=fast)


@pytest.fixture
def fp(fp: FakeProvider) -> FakeProvider:
    """The fake provider serving the OpenRouter and Atlas catalogs."""
    fp.set_json("GET", "/api/v1/models", OPENROUTER)
    fp.set_json("GET", "/v1/models", ATLAS)
    return fp


def _settings(fp: FakeProvider, **extra: object) -> Settings:
    values: dict[str, object] = {"openrouter_base_url": f"{fp.base_url}/api/v1", "openrouter_api_key": KEY,
                                 "atlas_base_url": fp.base_url, "atlas_api_key": KEY}
    values.update(extra)
    return load_settings(**values)


async def test_openrouter_capability_shortlist_is_provider_diverse(fp: FakeProvider, res: Resources) -> None:
    """No task: reasoning, recency and context lead; one model per provider; routers and image models out."""
    result = await openrouter.list_openrouter_models(_settings(fp), task="", limit=5, resources=res)
    ids = [m["id"] for m in result["models"]]
    assert result["status"] == "ok" and result["ranking"] == "capability"
    assert ids[0] == "newlab/brand-new-1"
    assert len(ids) == 5
    providers = [m["provider"] for m in result["models"]]
    assert len(set(providers)) == len(providers)
    assert {"openrouter/auto", "openai/gpt-image-2"}.isdisjoint(ids)
    assert not any(i.endswith(":free") for i in ids)
    assert result["count"] == 8
    top = result["models"][0]
    assert top["context_length"] == 1_000_000 and top["reasoning"] is True
    assert top["price_per_million"] == {"prompt": 3.0, "completion": 15.0}
    assert top["efforts"] == ["high", "medium"]


async def test_cheap_task_flips_toward_free_and_cheap(fp: FakeProvider, res: Resources) -> None:
    """A cheap / high-volume task puts the free and cheapest models first."""
    result = await openrouter.list_openrouter_models(_settings(fp),
                                                     task="cheap high-volume log summarization",
                                                   limit=3, resources=res)
    assert result["ranking"] == "cheap"
    ids = [m["id"] for m in result["models"]]
    assert ids[0] == "meta-llama/llama-5-8b:free"
    assert result["models"][0]["free"] is True
    assert "anthropic/claude-opus-5" not in ids and "newlab/brand-new-1" not in ids


@pytest.mark.parametrize(("given", "expected"), [(1, 2), (0, 2), (2, 2), (5, 5), (8, 8), (50, 8), (None, 5)])
def test_limit_is_clamped(given: int | None, expected: int) -> None:
    """limit is forced into 2–8."""
    assert clamp_limit(given) == expected


async def test_limit_fills_beyond_distinct_providers(fp: FakeProvider, res: Resources) -> None:
    """With more slots than providers the shortlist fills with each provider's next best."""
    result = await openrouter.list_openrouter_models(_settings(fp), limit=8, resources=res)
    ids = [m["id"] for m in result["models"]]
    assert len(ids) == len(set(ids)) == 7  # every text model except the :free variant
    assert ids.index("anthropic/claude-opus-5") < ids.index("anthropic/claude-haiku-5")


async def test_picker_offers_models_and_efforts(fp: FakeProvider, res: Resources) -> None:
    """The picker carries labelled model options and the three effort presets."""
    result = await openrouter.list_openrouter_models(_settings(fp), task="review a risky migration", limit=3,
                                                   resources=res)
    picker = result["picker"]
    assert [o["value"] for o in picker["models"]] == [m["id"] for m in result["models"]]
    assert all(o["label"] and o["description"] for o in picker["models"])
    assert "context" in picker["models"][0]["description"]
    assert [e["value"] for e in picker["efforts"]] == ["quick", "standard", "deep"]
    assert picker["default_model"] == result["models"][0]["id"]


async def test_every_refresh_fetches_and_sends_no_key(fp: FakeProvider, res: Resources) -> None:
    """refresh=true fetches the live catalog each time, and the GET carries no key."""
    settings = _settings(fp)
    first = await openrouter.list_openrouter_models(settings, resources=res)
    second = await openrouter.list_openrouter_models(settings, task="debug a race", resources=res)
    gets = [r for r in fp.requests if r.method == "GET"]
    assert len(gets) == 2
    assert {g.path for g in gets} == {"/api/v1/models"}
    assert all("authorization" not in g.headers and KEY not in str(g.headers) for g in gets)
    assert first["fetched"] is True and second["fetched"] is True and second["cached"] is False


async def test_max_age_reuses_a_recent_catalog(fp: FakeProvider, res: Resources) -> None:
    """An internal look-up with max_age reuses a catalog fetched that recently, and fetches past it."""
    settings = _settings(fp)
    await openrouter.list_openrouter_models(settings, resources=res)
    reused = await openrouter.list_openrouter_models(settings, max_age=catalogs.CACHE_TTL, resources=res)
    assert len([r for r in fp.requests if r.method == "GET"]) == 1
    assert reused["cached"] is True and reused["models"]
    await openrouter.list_openrouter_models(settings, max_age=0.0, resources=res)
    assert len([r for r in fp.requests if r.method == "GET"]) == 2


async def test_refresh_false_makes_no_network_call(fp: FakeProvider, res: Resources) -> None:
    """refresh=false with nothing cached returns only effort choices and touches no network."""
    result = await openrouter.list_openrouter_models(_settings(fp), refresh=False, task="anything",
                                                   resources=res)
    assert fp.requests == []
    assert result["models"] == [] and result["picker"]["models"] == []
    assert [e["value"] for e in result["picker"]["efforts"]] == ["quick", "standard", "deep"]


async def test_refresh_false_serves_the_cached_catalog(fp: FakeProvider, res: Resources) -> None:
    """After one fetch, refresh=false ranks the cached catalog without a request."""
    await openrouter.list_openrouter_models(_settings(fp), resources=res)
    before = len(fp.requests)
    result = await openrouter.list_openrouter_models(_settings(fp), refresh=False, task="cheap bulk",
                                                   resources=res)
    assert len(fp.requests) == before
    assert result["cached"] is True and result["models"]


async def test_fetch_failure_without_cache_is_upstream_error(fp: FakeProvider, res: Resources) -> None:
    """An unreachable or broken catalog with nothing cached is a structured upstream error."""
    fp.set_json("GET", "/api/v1/models", {"error": {"message": "catalog down"}}, status=503)
    with pytest.raises(UpstreamError) as info:
        await openrouter.list_openrouter_models(_settings(fp), resources=res)
    assert "catalog down" in info.value.detail


async def test_fetch_failure_with_a_stale_cache_serves_it(fp: FakeProvider, res: Resources) -> None:
    """A failed refresh falls back to the last catalog, flagged stale."""
    await openrouter.list_openrouter_models(_settings(fp), resources=res)
    fp.set_json("GET", "/api/v1/models", "not json at all", status=200)
    result = await openrouter.list_openrouter_models(_settings(fp), resources=res)
    assert result["stale"] is True and result["models"]


async def test_atlas_catalog_tolerant_fields(fp: FakeProvider, res: Resources) -> None:
    """Atlas: GET {base}/v1/models, no key, image models dropped, per-token prices normalized."""
    result = await atlas.list_atlas_models(_settings(fp), task="debug a large Rust repository", limit=5,
                                              resources=res)
    [get] = [r for r in fp.requests if r.method == "GET"]
    assert get.path == "/v1/models" and "authorization" not in get.headers
    by_id = {m["id"]: m for m in result["models"]}
    assert set(by_id) == {"deepseek-ai/deepseek-v4-pro", "zai-org/glm-5.2", "openai/gpt-5.6-sol"}
    assert all(m["reasoning"] for m in by_id.values())
    assert by_id["openai/gpt-5.6-sol"]["price_per_million"] == {"prompt": 1.25, "completion": 10.0}
    assert by_id["deepseek-ai/deepseek-v4-pro"]["context_length"] == 163840
    assert by_id["deepseek-ai/deepseek-v4-pro"]["released"] == "2026-09-01"
    assert result["picker"]["default_effort"] == "deep"  # ASK_FABLE_ATLAS_EFFORT default


def test_clamp_effort_rules() -> None:
    """Clamping picks the nearest listed effort; unknown entries pass through; non-reasoners get none."""
    reasoner = CatalogModel(id="a/b", name="b", provider="a", reasoning=True, efforts=["high", "medium"])
    assert clamp_effort("low", reasoner) == "medium"
    assert clamp_effort("high", reasoner) == "high"
    assert clamp_effort("high", None) == "high"
    assert clamp_effort("high", CatalogModel(id="a/c", name="c", provider="a", reasoning=False)) is None
    assert clamp_effort("medium", CatalogModel(id="a/d", name="d", provider="a", reasoning=True)) == "medium"


def test_cheap_words() -> None:
    """Only tasks about cost, speed or volume flip the ranking."""
    assert wants_cheap("fast triage of many tickets")
    assert wants_cheap("High-volume classification")
    assert wants_cheap("the cheapest model for bulk tagging")
    assert not wants_cheap("prove this lock-free queue is linearizable")
    assert not wants_cheap("why does the breakfast service freeze?")
    assert not wants_cheap("measure the latency regression")


def test_fast_task_prefers_low_latency_at_equal_price() -> None:
    """Published latency breaks ties toward the faster model when the task asks for speed."""
    slow = CatalogModel(id="a/slow", name="slow", provider="a", prompt_per_m=0.2, completion_per_m=0.6,
                        created=NOW, latency_s=4.0)
    quick = CatalogModel(id="b/quick", name="quick", provider="b", prompt_per_m=0.2, completion_per_m=0.6,
                         created=NOW, latency_s=0.3)
    assert [m.id for m in rank([slow, quick], "fast autocomplete", 2)] == ["b/quick", "a/slow"]
    parsed = catalogs.parse_model({"id": "c/m", "latency_ms": 850})
    assert parsed is not None and parsed.latency_s == 0.85


def test_rank_on_empty_catalog() -> None:
    """Nothing to rank gives an empty shortlist."""
    assert rank([], "anything") == []


@pytest.mark.parametrize(("name", "expected"), [
    ("gpt-oss:120b", "gpt-oss:120b-cloud"), ("glm-5.2", "glm-5.2:cloud"),
    ("qwen3-coder:480b-cloud", "qwen3-coder:480b-cloud"), ("minimax-m3:cloud", "minimax-m3:cloud"),
])
def test_cloud_ids(name: str, expected: str) -> None:
    """Catalog names become the ids the local daemon runs."""
    assert cloud_id(name) == expected


async def test_list_ollama_models(fp: FakeProvider, res: Resources) -> None:
    """Cloud catalog (daemon-ready ids), locally pulled models, the configured council and config file."""
    fp.set_json("GET", "/cloud/api/tags", {"models": [{"name": "gpt-oss:120b"}, {"name": "glm-5.2"},
                                                      {"name": "deepseek-v4-pro"}]})
    fp.ollama_tags = {"models": [{"name": "gpt-oss:120b-cloud", "model": "gpt-oss:120b-cloud"}]}
    settings = load_settings(ollama_base_url=fp.base_url, ollama_catalog_url=f"{fp.base_url}/cloud",
                             ollama_council="glm-5.2:cloud, gpt-oss:120b-cloud")
    result = await ollama.list_ollama_models(settings, resources=res)
    assert result["status"] == "ok" and result["reachable"] is True
    assert result["available_cloud"] == ["deepseek-v4-pro:cloud", "glm-5.2:cloud", "gpt-oss:120b-cloud"]
    assert result["pulled_local"] == ["gpt-oss:120b-cloud"]
    assert result["configured_council"] == ["glm-5.2:cloud", "gpt-oss:120b-cloud"]
    assert result["config_file"].endswith("ask_fable/config.json")
    assert {r.path for r in fp.requests} == {"/cloud/api/tags", "/api/tags"}


async def test_list_ollama_models_with_the_daemon_down(fp: FakeProvider, res: Resources) -> None:
    """An unreachable daemon is reported as reachable=false, not an error."""
    fp.set_json("GET", "/cloud/api/tags", {"models": [{"name": "glm-5.2"}]})
    with FakeProvider() as dead:
        dead_url = dead.base_url
    settings = load_settings(ollama_base_url=dead_url, ollama_catalog_url=f"{fp.base_url}/cloud")
    result = await ollama.list_ollama_models(settings, resources=res)
    assert result["reachable"] is False
    assert result["pulled_local"] == []
    assert result["available_cloud"] == ["glm-5.2:cloud"]
    assert "local_error" in result


async def test_list_ollama_models_refresh_false_is_offline(fp: FakeProvider, res: Resources) -> None:
    """refresh=false reads nothing from the network."""
    result = await ollama.list_ollama_models(load_settings(ollama_base_url=fp.base_url,
                                                             ollama_catalog_url=fp.base_url), refresh=False,
                                                                 resources=res)
    assert fp.requests == []
    assert result["reachable"] is None and result["available_cloud"] == []
    assert result["configured_council"]  # the default council
