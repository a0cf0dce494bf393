"""The answer cache: successful single-shot, council and chain answers keyed on what was asked.

The key is ``sha256(tool + models + normalized question + context + extra)``; models keep the
order the caller passes (callers sort them when order does not matter, e.g. councils, and keep
it for chains). Entries belong to a tenant, and a tenant hits only its own (a team-wide cache is
the shared tenant, chosen by the caller). Rows older than the TTL are misses. Every ~100 writes
(counted in the database, so across processes) a sweep deletes expired rows and trims the table to
90% of its cap.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Any

from ask_fable.access import one_tenant
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import SecretSource, redact_obj, secret_list
from ask_fable.stores.db import Connection, Connections, Database, database_for, open_database
from ask_fable.stores.views import CachedAnswer

if TYPE_CHECKING:
    from ask_fable.config import Settings

SWEEP_EVERY = 100

MIGRATIONS = [
    """
    CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX cache_created ON cache(created_at);
    CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
    # Tenants: existing entries belong to the local tenant; a key is unique within its tenant.
    """
    CREATE TABLE cache_v2 (
        tenant TEXT NOT NULL DEFAULT 'local',
        key TEXT NOT NULL,
        tool TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (tenant, key)
    );
    INSERT INTO cache_v2 (tenant, key, tool, payload, created_at)
        SELECT 'local', key, tool, payload, created_at FROM cache;
    DROP TABLE cache;
    ALTER TABLE cache_v2 RENAME TO cache;
    CREATE INDEX cache_created ON cache(created_at);
    """,
]


def normalize_question(question: str) -> str:
    """Collapse whitespace and fold case, so trivially different re-asks share a key."""
    return " ".join(question.split()).casefold()


def cache_key(
    tool: str,
    models: list[str],
    question: str,
    context: str | None,
    extra: dict[str, Any] | None = None,
) -> str:
    """The cache key of one request (hex sha256), the same whichever store holds the entry."""
    material = json.dumps(
        [tool, list(models), normalize_question(question or ""), context or "", extra or {}],
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def bump_write_counter(conn: Connection, name: str = "writes", *, by: int = 1) -> int:
    """Add ``by`` to a counter in the ``meta`` table and return it (inside the caller's transaction)."""
    row = conn.execute(
        "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = meta.value + ? "
        "RETURNING value",
        (name, by, by),
    ).fetchone()
    return int(row[0])


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
        connections: Connections | None = None,
    ) -> None:
        self.db = open_database(location, MIGRATIONS, connections=connections)
        self._clock = clock
        self.ttl = float(ttl)
        self.max_rows = int(max_rows)
        self.sweep_every = max(1, int(sweep_every))
        self._secrets = secret_list(secrets)

    key_for = staticmethod(cache_key)

    def get(self, tenant: str, key: str) -> CachedAnswer | None:
        """``(payload, age_s)`` for the tenant's fresh entry, else ``None`` (expired rows are misses)."""
        with self.db.read() as conn:
            row = conn.execute("SELECT payload, created_at FROM cache WHERE tenant = ? AND key = ?",
                               (one_tenant(tenant), key)).fetchone()
        if row is None:
            return None
        age = max(0.0, self._clock.now() - float(row["created_at"]))
        if age >= self.ttl:
            return None
        try:
            payload = json.loads(row["payload"])
        except ValueError:
            return None
        return CachedAnswer(payload, round(age, 3)) if isinstance(payload, dict) else None

    def put(self, tenant: str, key: str, tool: str, payload: dict[str, Any]) -> None:
        """Store ``payload`` under the tenant's ``key`` (redacted); may run the periodic sweep."""
        one_tenant(tenant)
        text = json.dumps(redact_obj(payload, self._secrets), ensure_ascii=False, default=str)
        now = self._clock.now()

        def store(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO cache (tenant, key, tool, payload, created_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(tenant, key) DO UPDATE SET tool = excluded.tool, payload = excluded.payload, "
                "created_at = excluded.created_at",
                (tenant, key, tool, text, now),
            )
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
        deleted = conn.execute("DELETE FROM cache WHERE created_at <= ?", (now - self.ttl,)).rowcount
        count = int(conn.execute("SELECT count(*) FROM cache").fetchone()[0])
        if count > self.max_rows:
            excess = count - int(self.max_rows * 0.9)
            deleted += conn.execute(
                "DELETE FROM cache WHERE (tenant, key) IN "
                "(SELECT tenant, key FROM cache ORDER BY created_at LIMIT ?)",
                (excess,),
            ).rowcount
        return int(deleted)

    def count(self) -> int:
        """Rows stored (fresh or not yet swept)."""
        with self.db.read() as conn:
            return int(conn.execute("SELECT count(*) FROM cache").fetchone()[0])


def answer_cache_for(settings: Settings, *, clock: Clock = SYSTEM_CLOCK,
                     connections: Connections | None = None) -> AnswerCache:
    """The answer cache configured by ``settings`` (on the App's clock and connections when given)."""
    database = database_for(settings, "cache", settings.cache_db, MIGRATIONS, connections=connections)
    return AnswerCache(database, settings.cache_ttl, settings.cache_max_rows, secrets=settings,
                       clock=clock, connections=connections)
