"""Statements run on the driver (``stores/driver.run``) behave as ``Connection.execute`` does, on
SQLite and on PostgreSQL: the same rows, values of the same types, errors of the same class, a
rolled-back transaction leaving nothing, and statements it cannot plan handed over unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import bindparam, insert, select
from sqlalchemy.exc import IntegrityError

from ask_fable.stores.db import upsert
from ask_fable.stores.driver import run, run_each, run_many
from ask_fable.stores.tables import context, trace_bundles
from tests.conftest import StoreBackend

_ENTRY = select(context.c.key, context.c.value, context.c.size_chars, context.c.updated_at).where(
    context.c.tenant == bindparam("tenant"), context.c.key == bindparam("key"))
_KEYS_IN = select(context.c.key).where(context.c.key.in_(bindparam("keys", expanding=True))).order_by(
    context.c.key)
_BUNDLE = select(trace_bundles.c.content).where(trace_bundles.c.trace_id == bindparam("trace_id"))


def _row(key: str, value: str = "v") -> dict[str, object]:
    return {"tenant": "local", "key": key, "value": value, "size_chars": len(value), "size_bytes": len(value),
            "created_at": 1.5, "updated_at": 2.5}


def test_rows_match_connection_execute(store_backend: StoreBackend, tmp_path: Path) -> None:
    db = store_backend.open("context", tmp_path / "context.db")
    with db.write() as conn:
        run_many(conn, insert(context), [_row("a", "alpha"), _row("b", "beta")])
    with db.read() as conn:
        ours = run(conn, _ENTRY, {"tenant": "local", "key": "a"})
        theirs = conn.execute(_ENTRY, {"tenant": "local", "key": "a"}).mappings().one()
        expanded = run(conn, _KEYS_IN, {"keys": ["b", "a", "zz"]}).scalars()
        missing = run(conn, _ENTRY, {"tenant": "local", "key": "none"})
    expected = {"key": "a", "value": "alpha", "size_chars": 5, "updated_at": 2.5}
    assert ours.mapping() == dict(theirs) == expected
    assert [type(v) for v in ours.one()] == [type(v) for v in theirs.values()]
    assert expanded == ["a", "b"]  # an expanding IN runs through Connection.execute
    assert missing.first() is None and missing.mapping() is None and missing.scalars() == []


def test_binary_values_keep_their_type(store_backend: StoreBackend, tmp_path: Path) -> None:
    db = store_backend.open("traces", tmp_path / "traces.db")
    content = bytes(range(256)) * 4
    with db.write() as conn:
        run(conn, insert(trace_bundles), {"trace_id": "t1", "tenant": "local", "content": content})
    with db.read() as conn:
        stored = run(conn, _BUNDLE, {"trace_id": "t1"}).scalar()
    assert bytes(stored) == content


def test_a_driver_error_is_sqlalchemys_and_the_transaction_keeps_nothing(store_backend: StoreBackend,
                                                                         tmp_path: Path) -> None:
    db = store_backend.open("context", tmp_path / "context.db")
    with db.write() as conn:
        run(conn, insert(context), _row("a"))
    with pytest.raises(IntegrityError) as raised, db.write() as conn:
        run(conn, insert(context), _row("b"))
        run(conn, insert(context), _row("a"))  # the primary key is taken
    assert raised.value.orig is not None and not raised.value.connection_invalidated
    with db.read() as conn:
        keys = run(conn, select(context.c.key).order_by(context.c.key)).scalars()
    assert keys == ["a"]  # "b" was rolled back with the failed statement's transaction


def test_a_dml_statement_reports_its_row_count(store_backend: StoreBackend, tmp_path: Path) -> None:
    db = store_backend.open("context", tmp_path / "context.db")
    done = context.delete().where(context.c.key == bindparam("gone"))
    with db.write() as conn:
        run_many(conn, insert(context), [_row("a"), _row("b")])
        assert run(conn, done, {"gone": "a"}).rowcount == 1
        assert run(conn, done, {"gone": "a"}).rowcount == 0


def test_each_execution_returns_its_own_rows_and_a_skipped_insert_none(store_backend: StoreBackend,
                                                                       tmp_path: Path) -> None:
    db = store_backend.open("context", tmp_path / "context.db")
    with db.write() as conn:
        new = upsert(conn, context).on_conflict_do_nothing().returning(context.c.key, context.c.size_chars)
        run(conn, insert(context), _row("b", "taken"))
        returned = run_each(conn, new, [_row("a", "alpha"), _row("b", "beta"), _row("c", "gamma!")])
    assert returned == [[("a", 5)], [], [("c", 6)]]
    assert [type(v) for v in returned[0][0]] == [str, int]
    with pytest.raises(IntegrityError), db.write() as conn:
        run_each(conn, insert(context).returning(context.c.key), [_row("d"), _row("a")])
    with db.read() as conn:
        keys = run(conn, select(context.c.key).order_by(context.c.key)).scalars()
    assert keys == ["a", "b", "c"]
