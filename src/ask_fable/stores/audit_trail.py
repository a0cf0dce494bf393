"""The ``AuditStore``: the JSONL audit log with stats from its SQLite index (embedded), or the
``recs`` table of PostgreSQL (``audit_index.AuditTable``) when ``database_url`` is set."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.stores.audit import AuditLog, audit_log_for
from ask_fable.stores.audit_index import MIGRATIONS, AuditIndex, AuditTable
from ask_fable.stores.db import Connections, database_for
from ask_fable.stores.interfaces import AuditStore
from ask_fable.stores.records import AuditRecord
from ask_fable.stores.stats import validate
from ask_fable.stores.views import StatsReport

if TYPE_CHECKING:
    from ask_fable.config import Settings


class AuditTrail:
    """Appends records to an :class:`AuditLog` and answers ``stats`` through its summary index.

    The stats window ends at ``clock``'s now unless a call names another; the index is read on the
    App's SQLite ``connections`` when given.
    """

    def __init__(self, log: AuditLog, *, clock: Clock = SYSTEM_CLOCK,
                 connections: Connections | None = None) -> None:
        self.log = log
        self._clock = clock
        self._connections = connections

    def append(self, record: AuditRecord) -> None:
        """Write ``record`` as one line of the log (redacted, rotated as configured)."""
        self.log.append(record.line())

    def iter_records(self, since_ts: float | None = None) -> Iterator[dict[str, Any]]:
        """Every line as written, oldest first (rotated segments included)."""
        return self.log.iter_records(since_ts)

    def stats(
        self,
        tenant: str,
        window: str = "24h",
        by: str = "model",
        model: str | None = None,
        session: str | None = None,
        now: float | None = None,
    ) -> StatsReport:
        """The tenant's stats over the whole log, rotations included; only lines new since the last
        call are read.

        When the index beside the log cannot be used (a read-only or broken state directory), a
        throwaway one is built for this call instead. Arguments are validated first.
        """
        validate(window, by)
        now = self._clock.now() if now is None else now
        try:
            index = AuditIndex(self.log, connections=self._connections)
            index.refresh()
            return index.stats(tenant, window=window, by=by, model=model, session=session, now=now)
        except (sqlite3.Error, OSError):
            with tempfile.TemporaryDirectory(prefix="ask-fable-index-") as scratch:
                index = AuditIndex(self.log, Path(scratch) / "index.db")
                try:
                    index.refresh()
                    return index.stats(tenant, window=window, by=by, model=model, session=session, now=now)
                finally:
                    index.db.close()


def audit_trail_for(settings: Settings, *, clock: Clock = SYSTEM_CLOCK,
                    connections: Connections | None = None) -> AuditStore:
    """The audit trail configured by ``settings`` (path, rotation size, backups, secrets; or the
    PostgreSQL table), on the App's clock and connections when given."""
    if settings.database_url:
        database = database_for(settings, "audit", settings.audit_file, MIGRATIONS, connections=connections)
        return AuditTable(database, secrets=settings, clock=clock)
    return AuditTrail(audit_log_for(settings), clock=clock, connections=connections)
