"""Every store's schema version: applied by ``ask-fable db upgrade``, checked before serving.

On PostgreSQL (``database_url``) a serving process never migrates: :func:`upgrade` applies each
store's pending migrations in one transaction under ``pg_advisory_xact_lock`` (two upgrades at
once take turns; the second finds nothing to do) and records ``(store, version)`` in
``ask_fable.schema_migrations``; :func:`check` raises
:class:`~ask_fable.errors.SchemaMismatch` when any store is behind or ahead of this release. On
SQLite each file migrates itself on first use, as always; :func:`check` refuses only a file
written by a newer release, and :func:`upgrade` opens every store file so all are current.
:func:`ping` is the cheap readiness probe of replicas.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ask_fable.errors import SchemaMismatch
from ask_fable.stores import (
    answers,
    audit_index,
    cache,
    context,
    hub,
    keys,
    quotas,
    saved_settings,
    traces,
    transcripts,
    ui_sessions,
)
from ask_fable.stores.db import SqliteDatabase, split_statements

if TYPE_CHECKING:
    from ask_fable.config import Settings
    from ask_fable.stores.postgres import PostgresPool

#: Each store's migrations, by the name its schema and version are kept under.
STORES: dict[str, list[str]] = {
    "context": context.MIGRATIONS,
    "cache": cache.MIGRATIONS,
    "hub": hub.MIGRATIONS,
    "traces": traces.MIGRATIONS,
    "audit": audit_index.MIGRATIONS,
    "keys": keys.MIGRATIONS,
    "answers": answers.MIGRATIONS,
    "transcripts": transcripts.MIGRATIONS,
    "quotas": quotas.MIGRATIONS,
    "settings": saved_settings.MIGRATIONS,
    "ui_sessions": ui_sessions.MIGRATIONS,
}
PING_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class StoreVersion:
    """One store's schema: the version found (before an upgrade) and the one this release uses."""

    store: str
    found: int
    wanted: int
    location: str

    @property
    def state(self) -> str:
        """``current``, ``behind`` (``db upgrade`` applies the rest) or ``newer`` (a later release's)."""
        if self.found == self.wanted:
            return "current"
        return "behind" if self.found < self.wanted else "newer"


def _sqlite_files(settings: Settings) -> dict[str, Path]:
    audit = settings.audit_file
    return {
        "context": settings.context_db,
        "cache": settings.cache_db,
        "hub": settings.hub_db,
        "traces": settings.traces_db,
        "audit": audit.with_name(f"{audit.stem}.index.db"),
        "keys": settings.keys_db,
        "transcripts": settings.session_db,
        "quotas": settings.quotas_db,
        "ui_sessions": settings.ui_sessions_db,
    }


def _sqlite_version(path: Path) -> int:
    """The ``user_version`` of an existing SQLite file, read without creating or changing it."""
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def status(settings: Settings) -> list[StoreVersion]:
    """Every store's schema version now and the one this release uses."""
    if settings.database_url:
        from ask_fable.stores.loop_bridge import await_io
        from ask_fable.stores.postgres import store_version

        pool = _pool(settings)
        try:
            with pool.transaction(read_only=True) as conn:
                return [StoreVersion(name, await_io(store_version(conn.connection, name)), len(m),
                                     f"postgresql:{name}") for name, m in STORES.items()]
        finally:
            pool.close()
    files = _sqlite_files(settings)
    return [StoreVersion(name, _sqlite_version(path), len(STORES[name]), str(path))
            for name, path in files.items()]


def check(settings: Settings) -> None:
    """Raise :class:`SchemaMismatch` when a store's schema is not the one this release serves on
    (PostgreSQL: behind or ahead; SQLite: ahead only, since a file migrates itself)."""
    for found in status(settings):
        if found.state == "newer":
            raise SchemaMismatch.newer(f"{found.store} ({found.location})", found.found, found.wanted)
        if found.state == "behind" and settings.database_url:
            raise SchemaMismatch.behind(f"PostgreSQL {found.store}", found.found, found.wanted)


def upgrade(settings: Settings) -> list[StoreVersion]:
    """Apply every store's pending migrations; returns each store's version as it was found."""
    if not settings.database_url:
        before = status(settings)
        for name, path in _sqlite_files(settings).items():
            database = SqliteDatabase(path, STORES[name])
            try:
                with database.read():
                    pass
            finally:
                database.close()
        return before
    from ask_fable.stores.loop_bridge import await_io
    from ask_fable.stores.postgres import (
        MIGRATION_LOCK,
        MIGRATIONS_TABLE,
        postgres_ddl,
        schema_name,
        store_version,
    )

    pool = _pool(settings)
    report: list[StoreVersion] = []
    try:
        with pool.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            conn.execute("CREATE SCHEMA IF NOT EXISTS ask_fable")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (store TEXT PRIMARY KEY, "
                         "version INTEGER NOT NULL, applied_at DOUBLE PRECISION NOT NULL)")
            for name, migrations in STORES.items():
                found = await_io(store_version(conn.connection, name))
                report.append(StoreVersion(name, found, len(migrations), f"postgresql:{name}"))
                if found > len(migrations):
                    raise SchemaMismatch.newer(f"PostgreSQL {name}", found, len(migrations))
                if found == len(migrations):
                    continue
                schema = schema_name(name)
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                conn.execute(f"SET LOCAL search_path TO {schema}")
                for script in migrations[found:]:
                    for statement in split_statements(postgres_ddl(script)):
                        conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (store, version, applied_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (store) DO UPDATE SET version = excluded.version, "
                    "applied_at = excluded.applied_at",
                    (name, len(migrations), time.time()),
                )
    finally:
        pool.close()
    return report


def ping(settings: Settings, timeout: float = PING_TIMEOUT_S) -> bool:
    """Whether the stores' database answers within ``timeout`` seconds (always true on SQLite)."""
    if not settings.database_url:
        return True
    return _pool(settings).ping(timeout)


def _pool(settings: Settings) -> PostgresPool:
    from ask_fable.stores.postgres import PostgresPool

    assert settings.database_url
    return PostgresPool(settings.database_url, connect_timeout=settings.database_connect_timeout, size=1)

