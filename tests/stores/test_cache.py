"""The answer cache: keys, TTL and the periodic sweep."""

from __future__ import annotations

from pathlib import Path

from ask_fable.config import load_settings
from ask_fable.stores.cache import AnswerCache, answer_cache_for
from tests.conftest import StoreBackend
from tests.fakes.clock import ManualClock


def test_key_normalizes_question_whitespace_and_case_only() -> None:
    key = AnswerCache.key_for("ask_glm", ["glm"], "Why  is\nX slow?", "ctx")
    assert key == AnswerCache.key_for("ask_glm", ["glm"], "  why is x SLOW? ", "ctx")
    assert key != AnswerCache.key_for("ask_glm", ["glm"], "Why is X slow?", "CTX")
    assert key != AnswerCache.key_for("ask_kimi", ["glm"], "Why is X slow?", "ctx")
    assert key != AnswerCache.key_for("ask_glm", ["glm"], "Why is X slow?", "ctx", {"effort": "deep"})


def test_models_keep_their_order() -> None:
    a = AnswerCache.key_for("ask_chain", ["glm", "kimi"], "q", "")
    b = AnswerCache.key_for("ask_chain", ["kimi", "glm"], "q", "")
    assert a != b and len(a) == 64


def test_put_then_get_returns_payload_and_age(store_backend: StoreBackend, tmp_path: Path) -> None:
    cache = AnswerCache(store_backend.open("cache", tmp_path / "cache.db"), ttl=3600, max_rows=100)
    key = cache.key_for("ask_glm", ["glm"], "q", "")
    assert cache.get("local", key) is None
    cache.put("local", key, "ask_glm", {"status": "ok", "answer": "42"})
    hit = cache.get("local", key)
    assert hit is not None
    payload, age = hit
    assert payload == {"status": "ok", "answer": "42"} and 0 <= age < 60


def test_expired_rows_are_misses(store_backend: StoreBackend, tmp_path: Path) -> None:
    clock = ManualClock()
    cache = AnswerCache(store_backend.open("cache", tmp_path / "cache.db"), ttl=10, max_rows=100, clock=clock)
    cache.put("local", "k", "t", {"a": 1})
    clock.advance(11)
    assert cache.get("local", "k") is None


def test_ttl_zero_never_hits(store_backend: StoreBackend, tmp_path: Path) -> None:
    cache = AnswerCache(store_backend.open("cache", tmp_path / "cache.db"), ttl=0, max_rows=100)
    cache.put("local", "k", "t", {"a": 1})
    assert cache.get("local", "k") is None


def test_sweep_trims_to_ninety_percent_oldest_first(store_backend: StoreBackend, tmp_path: Path) -> None:
    database = store_backend.open("cache", tmp_path / "cache.db")
    cache = AnswerCache(database, ttl=3600, max_rows=20, sweep_every=25)
    for i in range(25):
        cache.put("local", f"k{i}", "t", {"i": i})
    assert cache.count() == 18
    assert cache.get("local", "k0") is None and cache.get("local", "k6") is None
    assert cache.get("local", "k7") is not None and cache.get("local", "k24") is not None


def test_sweep_deletes_expired_rows(store_backend: StoreBackend, tmp_path: Path) -> None:
    clock = ManualClock()
    cache = AnswerCache(store_backend.open("cache", tmp_path / "cache.db"), ttl=10, max_rows=100, clock=clock)
    cache.put("local", "old", "t", {})
    clock.advance(20)
    cache.put("local", "new", "t", {})
    assert cache.sweep() == 1
    assert cache.count() == 1 and cache.get("local", "new") is not None


def test_write_counter_is_shared_by_instances(store_backend: StoreBackend, tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    for i in range(12):
        cache = AnswerCache(store_backend.open("cache", path), ttl=3600, max_rows=5, sweep_every=6)
        cache.put("local", f"k{i}", "t", {})
    assert AnswerCache(store_backend.open("cache", path), ttl=3600, max_rows=5).count() == 4


def test_factory_reads_settings() -> None:
    settings = load_settings(cache_ttl=12, cache_max_rows=34)
    cache = answer_cache_for(settings)
    assert cache.db.path == settings.cache_db and cache.ttl == 12 and cache.max_rows == 34
