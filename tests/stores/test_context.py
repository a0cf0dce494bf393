"""The context bus store."""

from __future__ import annotations

from pathlib import Path

import pytest

from ask_fable.errors import BadArgs
from ask_fable.stores.context import ContextStore
from tests.conftest import StoreBackend


@pytest.fixture
def store(store_backend: StoreBackend, tmp_path: Path) -> ContextStore:
    return ContextStore(store_backend.open("context", tmp_path / "context.db"))


def test_write_then_read_returns_value_and_metadata(store: ContextStore) -> None:
    meta = store.write("local", "trace-1", "Traceback: boom", "the failing run")
    assert meta.key == "trace-1" and meta.size_chars == len("Traceback: boom")
    assert meta.description == "the failing run" and not hasattr(meta, "value")
    got = store.read("local", "trace-1")
    assert got is not None
    assert got.value == "Traceback: boom" and got.age_s >= 0
    assert store.read("local", "absent") is None


def test_overwrite_keeps_created_at_and_updates_value(store: ContextStore) -> None:
    first = store.write("local", "k", "one")
    second = store.write("local", "k", "two two")
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    got = store.read("local", "k")
    assert got is not None and got.value == "two two" and got.size_chars == 7


def test_list_never_returns_values(store: ContextStore) -> None:
    store.write("local", "a", "secret-ish body")
    store.write("local", "b", "another body", "desc")
    listing = store.list("local")
    assert {row.key for row in listing} == {"a", "b"}
    assert all("value" not in row for row in listing)
    assert listing[0].key == "b"  # most recently updated first


def test_delete_reports_whether_the_key_existed(store: ContextStore) -> None:
    store.write("local", "gone", "x")
    assert store.delete("local", "gone") is True
    assert store.delete("local", "gone") is False
    assert store.read("local", "gone") is None


def test_resolve_joins_found_values_with_headers(store: ContextStore) -> None:
    store.write("local", "api", "def f(): ...")
    store.write("local", "log", "ERROR x")
    text, resolved, missing = store.resolve("local", ["api", "nope", "log", "api"])
    assert resolved == ["api", "log"] and missing == ["nope"]
    assert text == "### context: api\ndef f(): ...\n\n### context: log\nERROR x"
    assert store.resolve("local", []) == ("", [], [])


def test_suggest_offers_close_keys(store: ContextStore) -> None:
    for key in ("auth-middleware", "db-schema", "stack-trace"):
        store.write("local", key, "x")
    assert store.suggest("local", ["auth-midleware"])[0] == "auth-middleware"
    assert "db-schema" in store.suggest("local", ["schema"])
    assert store.suggest("local", ["zzzzzz"]) == []


@pytest.mark.parametrize("key", ["", "   ", "a" * 201, "line\nbreak", "tab\there", None, 5])
def test_invalid_keys_are_bad_args(store: ContextStore, key: object) -> None:
    with pytest.raises(BadArgs):
        store.write("local", key, "v")  # type: ignore[arg-type]
    with pytest.raises(BadArgs):
        store.read("local", key)  # type: ignore[arg-type]


def test_key_of_exactly_200_chars_is_accepted(store: ContextStore) -> None:
    store.write("local", "k" * 200, "v")
    assert store.read("local", "k" * 200) is not None


def test_non_string_value_is_bad_args(store: ContextStore) -> None:
    with pytest.raises(BadArgs):
        store.write("local", "k", 123)  # type: ignore[arg-type]


def test_values_are_redacted_before_storage(store_backend: StoreBackend, tmp_path: Path) -> None:
    store = ContextStore(store_backend.open("context", tmp_path / "c.db"), secrets=["my-configured-secret"])
    store.write("local", "cfg", "key=my-configured-secret other=sk-proj-ABCDEFGHIJKLMNOPQRSTUV123")
    got = store.read("local", "cfg")
    assert got is not None
    assert got.value == "key=[REDACTED] other=[REDACTED]"


def test_two_store_objects_see_the_same_database(store_backend: StoreBackend, tmp_path: Path) -> None:
    ContextStore(store_backend.open("context", tmp_path / "shared.db")).write("local", "k", "from one")
    got = ContextStore(store_backend.open("context", tmp_path / "shared.db")).read("local", "k")
    assert got is not None and got.value == "from one"


def test_a_tenants_caps_refuse_the_write_that_would_pass_them_and_keep_what_is_stored(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    capped = ContextStore(store_backend.open("context", tmp_path / "context.db"), max_tenant_bytes=10,
                          max_tenant_entries=2)
    capped.write("team", "a", "12345")
    with pytest.raises(BadArgs, match="ASK_FABLE_CONTEXT_MAX_TENANT_BYTES"):
        capped.write("team", "b", "é" * 3)  # 6 bytes: 11 in all
    capped.write("team", "a", "1234567")  # replacing an entry counts its new size only
    capped.write("team", "b", "abc")
    with pytest.raises(BadArgs, match="ASK_FABLE_CONTEXT_MAX_TENANT_ENTRIES"):
        capped.write("team", "c", "")
    capped.write("other", "c", "1234567890")  # another tenant has its own room
    assert [(e.key, e.size_chars) for e in sorted(capped.list("team"), key=lambda e: e.key)] == [
        ("a", 7), ("b", 3)]


def test_a_tenants_entry_cap_holds_under_writers_racing_from_many_connections(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    """24 writers of new keys released at once, as calls on several replicas would be: exactly the
    cap's 5 are stored and every other write is refused, on SQLite as on PostgreSQL."""
    import threading

    capped = ContextStore(store_backend.open("context", tmp_path / "context.db"), max_tenant_entries=5)
    start = threading.Barrier(24)
    refused: list[BadArgs] = []

    def write(number: int) -> None:
        start.wait(timeout=30)
        try:
            capped.write("team", f"note-{number}", "x" * 100)
        except BadArgs as exc:
            refused.append(exc)

    threads = [threading.Thread(target=write, args=(number,)) for number in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(capped.list("team")) == 5
    assert len(refused) == 19
