"""A store with no tables is created from ``tables.py`` and stamped at the head; Alembic's history run
from nothing must build the same tables, on both engines, so a store made either way is read and
migrated alike by every later revision."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, create_engine, select, text

from ask_fable.stores import schema
from ask_fable.stores.engines import postgres_url
from ask_fable.stores.migrations.legacy import LEGACY_SENTINEL
from ask_fable.stores.tables import METADATA, schema_name
from tests.fakes.postgres import PostgresServer

STORES = list(METADATA)


def _run_history(conn: Connection, store: str, schema_: str | None) -> None:
    """Alembic's ``upgrade head`` of ``store`` on ``conn``, every revision from the first."""
    config = schema.alembic_config()
    config.attributes.update(connection=conn, store=store, schema=schema_)
    try:
        command.upgrade(config, "head")
    finally:
        config.attributes.clear()


def _rows(conn: Connection, store: str) -> dict[str, list[Any]]:
    """Every row of every table of ``store`` on ``conn`` (what a new store starts with)."""
    return {name: sorted(map(tuple, conn.execute(select(table)).all()))
            for name, table in METADATA[store].tables.items()}


def _differences(conn: Connection, store: str) -> list[Any]:
    """What Alembic's autogenerate finds between ``conn``'s tables and ``tables.py`` (types included)."""
    context = MigrationContext.configure(conn, opts={"compare_type": True})
    return list(compare_metadata(context, METADATA[store]))


@contextmanager
def _sqlite(path: Path) -> Iterator[Connection]:
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


@pytest.mark.parametrize("store", STORES)
def test_on_sqlite_the_history_builds_what_a_new_file_is_created_with(tmp_path: Path, store: str) -> None:
    by_history, created = tmp_path / "history.db", tmp_path / "created.db"
    with _sqlite(by_history) as conn, conn.begin():
        _run_history(conn, store, None)
        assert _differences(conn, store) == []
        first_rows = _rows(conn, store)
    with _sqlite(created) as conn:
        schema.upgrade_sqlite_file(conn, store, str(created))
        assert _differences(conn, store) == []
        assert _rows(conn, store) == first_rows
    for path in (by_history, created):
        plain = sqlite3.connect(path)
        assert plain.execute("SELECT version_num FROM alembic_version").fetchall() == [(schema.head(),)]
        assert plain.execute("PRAGMA user_version").fetchone()[0] == LEGACY_SENTINEL
        plain.close()


def test_on_postgresql_the_history_builds_what_db_upgrade_creates(pg_server: PostgresServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    by_history, created = pg_server.empty_database(), pg_server.empty_database()
    engine = create_engine(postgres_url(by_history))
    try:
        with engine.connect() as conn:
            for store in STORES:
                name = schema_name(store)
                with conn.begin():
                    conn.exec_driver_sql(f"CREATE SCHEMA {name}")
                    conn.exec_driver_sql(f"SET LOCAL search_path TO {name}")
                    _run_history(conn.execution_options(schema_translate_map={None: name}), store, name)
    finally:
        engine.dispose()
    from ask_fable.config import load_settings

    monkeypatch.setenv("ASK_FABLE_DATABASE_URL", created)
    assert {found.state for found in schema.upgrade(load_settings())} == {"behind"}
    first_rows: dict[str, Any] = {}
    for url in (by_history, created):
        engine = create_engine(postgres_url(url))
        try:
            with engine.connect() as conn:
                for store in STORES:
                    conn.exec_driver_sql(f"SET search_path TO {schema_name(store)}")
                    assert (store, _differences(conn, store)) == (store, [])
                    assert _rows(conn, store) == first_rows.setdefault(store, _rows(conn, store))
                    assert schema.current_revision(conn, schema_name(store)) == schema.head()
                    marker = conn.execute(text("SELECT version FROM ask_fable.schema_migrations "
                                               "WHERE store = :store"), {"store": store}).scalar()
                    assert marker == LEGACY_SENTINEL
                conn.rollback()
        finally:
            engine.dispose()
