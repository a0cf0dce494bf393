"""Every store's schema, owned by Alembic (``stores/migrations/``): applied by ``ask-fable db upgrade``,
checked before serving, reported by ``ask-fable db status``.

One history upgrades every store; each store records its revision in its own ``alembic_version``
table. On SQLite each file is brought to the head on first use (``db.Database``), as always; on
PostgreSQL (``database_url``) a serving process never migrates: :func:`upgrade` runs the history
for every store in one transaction under ``pg_advisory_xact_lock`` (two upgrades at once take turns;
the second finds nothing to do), and :func:`check` raises :class:`~ask_fable.errors.SchemaMismatch`
when any store is behind or ahead of this release. :func:`ping` is the replicas' readiness probe.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ask_fable.errors import SchemaMismatch
from ask_fable.stores.engines import Engines, begin_sqlite, unusable_file
from ask_fable.stores.migrations import HEAD
from ask_fable.stores.migrations.legacy import LEGACY_SENTINEL, set_legacy_version
from ask_fable.stores.tables import METADATA, schema_name

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from sqlalchemy import Connection

    from ask_fable.config import Settings

#: The stores, by the name their schema (PostgreSQL), file and migrations are known under.
STORES: tuple[str, ...] = tuple(METADATA)
#: ``pg_advisory_xact_lock`` key held while migrations run, so two upgrades never interleave.
MIGRATION_LOCK = 0x61736B66  # "askf"
PING_TIMEOUT_S = 1.0
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
VERSION_TABLE = "alembic_version"


@dataclass(frozen=True)
class StoreVersion:
    """One store's schema: the revision found (before an upgrade; ``None`` for none yet) and the
    head this release serves on."""

    store: str
    found: str | None
    wanted: str
    location: str
    #: Whether ``found`` is a revision of this release's history (else a newer release wrote it).
    known: bool = True

    @property
    def state(self) -> str:
        """``current``, ``behind`` (``db upgrade`` applies the rest) or ``newer`` (a later release's)."""
        if self.found == self.wanted:
            return "current"
        return "behind" if self.known else "newer"


@lru_cache(maxsize=1)
def alembic_config() -> Config:
    """The Alembic configuration of the stores' history (no ini file: everything is set here)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


@lru_cache(maxsize=1)
def _scripts() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


def head() -> str:
    """The revision this release serves on."""
    return HEAD


def _known(revision: str | None) -> bool:
    if revision is None or revision == HEAD:
        return True
    from alembic.util import CommandError

    try:
        return _scripts().get_revision(revision) is not None
    except CommandError:
        return False


def current_revision(conn: Connection, schema: str | None) -> str | None:
    """The revision recorded on ``conn`` for the store in ``schema`` (``None``: none yet), read from
    Alembic's ``alembic_version`` table as Alembic reads it, without loading Alembic."""
    from sqlalchemy import column, inspect, select, table

    if not inspect(conn).has_table(VERSION_TABLE, schema=schema):
        return None
    versions = table(VERSION_TABLE, column("version_num"), schema=schema)
    found = [str(row) for row in conn.execute(select(versions.c.version_num)).scalars()]
    # Several rows are branches this release's linear history never wrote: no revision it knows.
    return ", ".join(found) or None


def upgrade_store(conn: Connection, store: str, schema: str | None, *, where: str) -> None:
    """Bring ``store`` on ``conn`` (inside the caller's transaction) to the head; a store written by a
    newer release is refused with :class:`SchemaMismatch`, and nothing is changed.

    A store with no table yet is created as the head describes it (``tables.py``) and stamped there,
    as Alembic's own recipe for a new database does, without loading Alembic; a store with tables
    (an earlier revision, or the previous release's) is migrated by the history."""
    found = current_revision(conn, schema)
    if found == head():
        return
    if found is None and not inspect_tables(conn, schema):
        create_at_head(conn, store)
        return
    if not _known(found):
        raise SchemaMismatch.newer(where, str(found), head())
    from alembic import command

    config = alembic_config()
    config.attributes.update(connection=conn, store=store, schema=schema)
    try:
        command.upgrade(config, "head")
    finally:
        config.attributes.clear()


def inspect_tables(conn: Connection, schema: str | None) -> list[str]:
    """The names of the tables on ``conn`` in ``schema`` (the default one for ``None``)."""
    from sqlalchemy import inspect

    return list(inspect(conn).get_table_names(schema=schema))


def create_at_head(conn: Connection, store: str) -> None:
    """Create ``store``'s tables and indexes on ``conn`` (in the caller's transaction, in the schema
    its ``schema_translate_map`` names), record the head in ``alembic_version`` as Alembic does, and
    set the old version marker as the first revision does."""
    from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table, insert

    METADATA[store].create_all(conn, checkfirst=False)
    # The table Alembic keeps its revision in, with the name and key it gives them.
    versions = Table(VERSION_TABLE, MetaData(), Column("version_num", String(32), nullable=False),
                     PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"))
    versions.create(conn)
    conn.execute(insert(versions).values(version_num=head()))
    set_legacy_version(conn, store, LEGACY_SENTINEL)


def upgrade_sqlite_file(conn: Connection, store: str, where: str) -> None:
    """Bring ``store``'s SQLite file (``conn``'s, outside a transaction) to the head, holding the
    file's write lock meanwhile."""
    begin_sqlite(conn, immediate=True)
    try:
        upgrade_store(conn, store, None, where=where)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def require_current(conn: Connection, store: str, schema: str | None) -> None:
    """:class:`SchemaMismatch` unless ``store``'s schema on ``conn`` is at this release's head."""
    found = current_revision(conn, schema)
    if found == head():
        return
    if not _known(found):
        raise SchemaMismatch.newer(f"PostgreSQL {store}", str(found), head())
    raise SchemaMismatch.behind(f"PostgreSQL {store}", found or "none", head())


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


def _sqlite_revision(path: Path) -> str | None:
    """The revision of an existing SQLite file, read without creating or changing it."""
    if not path.exists():
        return None
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (VERSION_TABLE,)).fetchone() is None:
            return None
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        return None if row is None else str(row[0])
    finally:
        conn.close()


def _version(store: str, found: str | None, location: str) -> StoreVersion:
    return StoreVersion(store, found, head(), location, known=_known(found))


def status(settings: Settings) -> list[StoreVersion]:
    """Every store's revision now and the one this release serves on."""
    if settings.database_url:
        with _postgres(settings) as conn, conn.begin():
            return [_version(name, current_revision(conn, schema_name(name)), f"postgresql:{name}")
                    for name in STORES]
    return [_version(name, _sqlite_revision(path), str(path))
            for name, path in _sqlite_files(settings).items()]


def check(settings: Settings) -> None:
    """Raise :class:`SchemaMismatch` when a store's schema is not the one this release serves on
    (PostgreSQL: behind or ahead; SQLite: ahead only, since a file migrates itself)."""
    for found in status(settings):
        if found.state == "newer":
            raise SchemaMismatch.newer(f"{found.store} ({found.location})", str(found.found), found.wanted)
        if found.state == "behind" and settings.database_url:
            raise SchemaMismatch.behind(f"PostgreSQL {found.store}", found.found or "none", found.wanted)


def upgrade(settings: Settings) -> list[StoreVersion]:
    """Bring every store to this release's head; returns each store's revision as it was found."""
    if not settings.database_url:
        from sqlalchemy.exc import DBAPIError

        before = status(settings)
        engines = Engines()
        try:
            for name, path in _sqlite_files(settings).items():
                try:
                    with engines.sqlite(path).connect() as conn:
                        upgrade_sqlite_file(conn, name, str(path))
                except (OSError, DBAPIError) as exc:
                    if isinstance(exc, DBAPIError) and not isinstance(exc.orig, sqlite3.OperationalError):
                        raise
                    raise unusable_file(path, exc) from exc
        finally:
            engines.close()
        return before
    from sqlalchemy import text

    report: list[StoreVersion] = []
    with _postgres(settings) as conn, conn.begin():
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        for name in STORES:
            schema = schema_name(name)
            found = _version(name, current_revision(conn, schema), f"postgresql:{name}")
            report.append(found)
            if found.state == "newer":
                raise SchemaMismatch.newer(f"PostgreSQL {name}", str(found.found), found.wanted)
            if found.state == "current":
                continue
            conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            # Raw SQL in a revision (and the frozen scripts it adopts from) finds the store's tables too.
            conn.exec_driver_sql(f"SET LOCAL search_path TO {schema}")
            upgrade_store(conn.execution_options(schema_translate_map={None: schema}), name, schema,
                          where=f"PostgreSQL {name}")
    return report


def ping(settings: Settings, timeout: float = PING_TIMEOUT_S) -> bool:
    """Whether the stores' database answers within ``timeout`` seconds (always true on SQLite): a
    direct connection, outside the pool, so a pool waiting on a hung database does not hide it."""
    if not settings.database_url:
        return True
    import psycopg

    from ask_fable.stores.engines import postgres_url

    url = postgres_url(settings.database_url).set(drivername="postgresql")
    try:
        with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True,
                             connect_timeout=max(1, math.ceil(timeout))) as conn:
            conn.execute(f"SET statement_timeout = {max(1, int(timeout * 1000))}".encode())
            conn.execute(b"SELECT 1")
        return True
    except psycopg.Error:
        return False


@contextmanager
def _postgres(settings: Settings) -> Iterator[Connection]:
    """One connection to the configured PostgreSQL database, for the schema commands; a failure to
    connect is the caller-facing :class:`~ask_fable.errors.Unavailable` naming its cause."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError
    from sqlalchemy.pool import NullPool

    from ask_fable.stores.engines import connection_failure, postgres_url, require_driver

    url = settings.database_url
    assert url
    require_driver()
    seconds = max(1, math.ceil(settings.database_connect_timeout))
    engine = create_engine(postgres_url(url), poolclass=NullPool, connect_args={"connect_timeout": seconds})
    try:
        try:
            conn = engine.connect()
        except DBAPIError as exc:
            raise connection_failure(exc, url) from exc
        with conn:
            yield conn
    finally:
        engine.dispose()
