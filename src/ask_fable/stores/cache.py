"""The answer cache: successful single-shot, council and chain answers keyed on what was asked.

The key is ``sha256(tool + models + normalized question + context + extra)``; models keep the
order the caller passes (callers sort them when order does not matter, e.g. councils, and keep
it for chains). Entries belong to a tenant, and a tenant hits only its own (a team-wide cache is
the shared tenant, chosen by the caller). Rows older than the TTL are misses. Every ~100 writes
(counted in the database, so across processes) a sweep deletes expired rows and trims the table to
90% of its cap.
"""

from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, delete, func, select, tuple_

from ask_fable.access import one_tenant
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import SecretSource, redact_obj, secret_list
from ask_fable.stores.cache_keys import cache_key
from ask_fable.stores.db import Database, database_for, open_database, per_dialect, upsert
from ask_fable.stores.driver import run
from ask_fable.stores.engines import Engines
from ask_fable.stores.tables import cache, cache_counters
from ask_fable.stores.views import CachedAnswer

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table
    from sqlalchemy.sql import Executable

    from ask_fable.config import Settings

SWEEP_EVERY = 100

# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_ENTRY_OF = select(cache.c.payload, cache.c.created_at).where(
    cache.c.tenant == bindparam("tenant"), cache.c.key == bindparam("key"))
_EXPIRED = delete(cache).where(cache.c.created_at <= bindparam("expired_at"))
_COUNT = select(func.count()).select_from(cache)
_TRIM = delete(cache).where(tuple_(cache.c.tenant, cache.c.key).in_(
    select(cache.c.tenant, cache.c.key).order_by(cache.c.created_at).limit(bindparam("excess"))))


@per_dialect
def _PUT(dialect: str) -> Executable:
    insert = upsert(dialect, cache)
    return insert.on_conflict_do_update(
        index_elements=["tenant", "key"],
        set_={name: insert.excluded[name] for name in ("tool", "payload", "created_at")})


@functools.cache
def _bump(dialect: str, table: Table) -> Executable:
    """The counter upsert of ``table`` in ``dialect``: the inserted ``value`` is what is added."""
    insert = upsert(dialect, table)
    bumped = insert.on_conflict_do_update(index_elements=["name"],
                                          set_={"value": table.c.value + insert.excluded.value})
    return bumped.returning(table.c.value)


def bump_write_counter(conn: Connection, name: str = "writes", *, by: int = 1,
                       table: Table = cache_counters) -> int:
    """Add ``by`` to a counter in the ``meta`` table and return it (inside the caller's transaction).

    ``table`` is the store's own ``meta`` table; every store's has the same name and columns, so the
    cache's stands for any of them on the store's own connection.
    """
    bumped = _bump(conn.dialect.name, table)
    return int(run(conn, bumped, {"name": name, "value": by}).one()[0])


class AnswerCache:
    """TTL cache of answer payloads over a SQLite file or PostgreSQL: an ``AnswerCacheStore``."""

    def __init__(
        self,
        location: str | os.PathLike[str] | Database,
        ttl: float,
        max_rows: int,
        *,
        secrets: SecretSource = (),
        sweep_every: int = SWEEP_EVERY,
        clock: Clock = SYSTEM_CLOCK,
        engines: Engines | None = None,
    ) -> None:
        self.db = open_database(location, "cache", engines=engines)
        self._clock = clock
        self.ttl = float(ttl)
        self.max_rows = int(max_rows)
        self.sweep_every = max(1, int(sweep_every))
        self._secrets = secret_list(secrets)

    key_for = staticmethod(cache_key)

    def get(self, tenant: str, key: str) -> CachedAnswer | None:
        """``(payload, age_s)`` for the tenant's fresh entry, else ``None`` (expired rows are misses)."""
        with self.db.read() as conn:
            row = run(conn, _ENTRY_OF, {"tenant": one_tenant(tenant), "key": key}).first()
        if row is None:
            return None
        stored, created_at = row
        age = max(0.0, self._clock.now() - float(created_at))
        if age >= self.ttl:
            return None
        try:
            payload = json.loads(stored)
        except ValueError:
            return None
        return CachedAnswer(payload, round(age, 3)) if isinstance(payload, dict) else None

    def put(self, tenant: str, key: str, tool: str, payload: dict[str, Any]) -> None:
        """Store ``payload`` under the tenant's ``key`` (redacted); may run the periodic sweep."""
        one_tenant(tenant)
        text = json.dumps(redact_obj(payload, self._secrets), ensure_ascii=False, default=str)
        now = self._clock.now()

        def store(conn: Connection) -> None:
            run(conn, _PUT(conn), {"tenant": tenant, "key": key, "tool": tool, "payload": text,
                                   "created_at": now})
            # The sweep may delete an entry another writer holds while it waits for the counter row
            # this one holds: a deadlock PostgreSQL breaks by aborting one, which run_write runs again.
            if bump_write_counter(conn) % self.sweep_every == 0:
                self._sweep(conn, now)

        self.db.run_write(store)

    def sweep(self) -> int:
        """Delete expired rows and trim to 90% of the cap now; returns rows deleted."""
        now = self._clock.now()
        return self.db.run_write(lambda conn: self._sweep(conn, now))

    def _sweep(self, conn: Connection, now: float) -> int:
        deleted = conn.execute(_EXPIRED, {"expired_at": now - self.ttl}).rowcount
        count = int(conn.scalar(_COUNT) or 0)
        if count > self.max_rows:
            excess = count - int(self.max_rows * 0.9)
            deleted += conn.execute(_TRIM, {"excess": excess}).rowcount
        return int(deleted)

    def count(self) -> int:
        """Rows stored (fresh or not yet swept)."""
        with self.db.read() as conn:
            return int(conn.scalar(_COUNT) or 0)


def answer_cache_for(settings: Settings, *, clock: Clock = SYSTEM_CLOCK,
                     engines: Engines | None = None) -> AnswerCache:
    """The answer cache configured by ``settings`` (on the App's clock and engines when given)."""
    database = database_for(settings, "cache", settings.cache_db, engines=engines)
    return AnswerCache(database, settings.cache_ttl, settings.cache_max_rows, secrets=settings,
                       clock=clock, engines=engines)
