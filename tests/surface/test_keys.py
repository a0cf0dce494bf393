"""API keys: shown once, stored only as hashes, verified in constant time, revocable."""

from __future__ import annotations

import re
import sqlite3
import stat
from pathlib import Path

import pytest
from sqlalchemy import select

from ask_fable.errors import BadArgs
from ask_fable.stores.engines import Engines
from ask_fable.stores.keys import KeyStore, hash_key, looks_like_key
from ask_fable.stores.tables import api_keys
from tests.conftest import StoreBackend

KEY_SHAPE = re.compile(r"afk_[A-Za-z0-9_\-]{32}")


@pytest.fixture
def store(store_backend: StoreBackend, tmp_path: Path) -> KeyStore:
    """The key store on a SQLite file, then on PostgreSQL."""
    return KeyStore(store_backend.open("keys", tmp_path / "keys.db"))


def test_a_new_key_has_the_documented_shape(store: KeyStore) -> None:
    record, key = store.create("ci", "ask")
    assert KEY_SHAPE.fullmatch(key)
    assert record.prefix == key[:10]
    assert record.scope == "ask" and record.name == "ci" and record.tenant == "ci"
    assert record.created_at and record.last_used_at is None and record.revoked_at is None


def test_keys_are_unique(store: KeyStore) -> None:
    keys = {store.create(f"k{i}", "read")[1] for i in range(20)}
    assert len(keys) == 20


def test_only_the_hash_is_stored(store: KeyStore, tmp_path: Path) -> None:
    _, key = store.create("ci", "write")
    with store.db.read() as conn:
        rows = [tuple(row) for row in conn.execute(select(api_keys))]
    assert key not in str(rows) and key[4:] not in str(rows)
    assert [row for row in rows if hash_key(key) in row]
    path = tmp_path / "keys.db"
    if not path.exists():
        return  # PostgreSQL: the rows above are all there is
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("keys.db"))
    assert key.encode() not in raw
    assert key[4:].encode() not in raw
    with sqlite3.connect(path) as conn:
        hashes = [row[0] for row in conn.execute("SELECT key_hash FROM api_keys")]
    assert hashes == [hash_key(key)]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_verify_accepts_the_key_and_rejects_others(store: KeyStore) -> None:
    record, key = store.create("ci", "read")
    found = store.verify(key)
    assert found is not None and found.id == record.id and found.scope == "read"
    assert store.verify(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert store.verify("afk_" + "x" * 32) is None
    assert store.verify("") is None
    assert store.verify(key + "x") is None


def test_verify_notes_last_use_and_flush_writes_it(store: KeyStore) -> None:
    record, key = store.create("ci", "write")
    store.verify(key)
    assert store.get(record.id).last_used_at is None  # verifying writes nothing
    store.flush_usage()
    assert store.get(record.id).last_used_at is not None


def test_a_key_revoked_through_another_store_is_refused_at_once(
    store: KeyStore, store_backend: StoreBackend, tmp_path: Path
) -> None:
    """A key verified before is reused only while nobody changed the table, in this process or another."""
    record, key = store.create("ci", "ask")
    assert store.verify(key) is not None
    engines = Engines()  # connections of its own, as another process has
    try:
        elsewhere = StoreBackend(store_backend.name, engines, store_backend.url)
        KeyStore(elsewhere.open("keys", tmp_path / "keys.db")).revoke(record.id)
    finally:
        engines.close()
    assert store.verify(key) is None


def test_a_revoked_key_no_longer_verifies(store: KeyStore) -> None:
    record, key = store.create("ci", "write")
    revoked = store.revoke(record.id)
    assert revoked.revoked_at is not None and not revoked.active
    assert store.verify(key) is None
    assert store.revoke(str(record.id)).revoked_at == revoked.revoked_at


def test_revoke_by_display_prefix(store: KeyStore) -> None:
    record, _ = store.create("ci", "write")
    assert store.revoke(record.prefix).id == record.id


def test_revoking_an_unknown_key_is_a_clear_error(store: KeyStore) -> None:
    with pytest.raises(BadArgs, match="no API key"):
        store.revoke(42)


def test_list_shows_every_key_without_secrets(store: KeyStore) -> None:
    a, key_a = store.create("alpha", "read")
    b, _ = store.create("beta", "write")
    store.revoke(a.id)
    listed = store.list_keys()
    assert [r.name for r in listed] == ["alpha", "beta"]
    assert [r.name for r in store.list_keys(include_revoked=False)] == ["beta"]
    assert key_a not in repr(listed) and key_a not in str([r.to_dict() for r in listed])
    assert b.active


def test_the_former_write_scope_creates_an_ask_key(store: KeyStore) -> None:
    record, _ = store.create("script", "write")
    assert record.scope == "ask"


def test_bad_scope_and_empty_name_are_refused(store: KeyStore) -> None:
    with pytest.raises(BadArgs, match="scope"):
        store.create("ci", "root")
    with pytest.raises(BadArgs, match="name"):
        store.create("  ", "read")


def test_shape_check() -> None:
    assert looks_like_key("afk_" + "a" * 32)
    assert not looks_like_key("afk_" + "a" * 31)
    assert not looks_like_key("sk-" + "a" * 32)


def test_a_tenant_cannot_hold_two_active_keys_of_one_name(store: KeyStore) -> None:
    """On either database: the second ``ci`` of tenant ``team`` is refused (any case) and not stored;
    another tenant's ``ci`` and a ``ci`` made after the first is revoked are fine."""
    first, _ = store.create("ci", "ask", "team")
    taken = rf"tenant 'team' already has an active key named 'ci' \(id {first.id}\)"
    with pytest.raises(BadArgs, match=taken):
        store.create("CI ", "read", "team")
    assert [key.name for key in store.list_keys()] == ["ci"]
    store.create("ci", "ask", "platform")
    store.revoke(first.id)
    store.create("ci", "ask", "team")
    assert [(key.name, key.tenant) for key in store.list_keys(include_revoked=False)] == [
        ("ci", "platform"), ("ci", "team")]


@pytest.mark.parametrize("name", ["x" * 65, "a\x00b", "-leading", "two\nlines"])
def test_a_name_that_is_not_a_plain_label_of_at_most_64_characters_is_refused(store: KeyStore,
                                                                              name: str) -> None:
    with pytest.raises(BadArgs, match="use 1-64 letters, digits, spaces"):
        store.create(name, "ask", "team")
    assert store.list_keys() == []
