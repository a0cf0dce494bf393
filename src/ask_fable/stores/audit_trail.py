"""The ``AuditStore``: the JSONL audit log with stats from its SQLite index (embedded), or the
``recs`` table of PostgreSQL (``audit_index.AuditTable``) when ``database_url`` is set."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.stores.audit import AuditLog, audit_log_for
from ask_fable.stores.audit_index import AuditIndex, AuditTable
from ask_fable.stores.db import database_for, is_unreachable
from ask_fable.stores.engines import Engines
from ask_fable.stores.interfaces import AuditStore
from ask_fable.stores.records import AuditRecord
from ask_fable.stores.stats import validate
from ask_fable.stores.views import StatsReport

if TYPE_CHECKING:
    from ask_fable.config import Settings


class AuditTrail:
    """Appends records to an :class:`AuditLog` and answers ``stats`` through its summary index.

    The stats window ends at ``clock``'s now unless a call names another; the index is read on the
    App's ``engines`` when given.
    """

    def __init__(self, log: AuditLog, *, clock: Clock = SYSTEM_CLOCK,
                 engines: Engines | None = None) -> None:
        self.log = log
        self._clock = clock
        self._engines = engines
        self._scratch: tuple[tempfile.TemporaryDirectory[str], AuditIndex] | None = None
        self._scratch_lock = threading.Lock()

    def append(self, record: AuditRecord) -> None:
        """Write ``record`` as one line of the log (redacted, rotated as configured)."""
        self.log.append(record.line())

    def append_many(self, records: Sequence[AuditRecord]) -> None:
        """Write ``records`` as lines of the log in one append: all of them, or none if it fails."""
        self.log.append_many([record.line() for record in records])

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

        When the index beside the log cannot be written (a read-only state directory or reader, a
        broken file), a private one in a temporary directory is used instead, kept for this trail's
        life and brought up to date on each call. Arguments are validated first.
        """
        validate(window, by)
        now = self._clock.now() if now is None else now
        try:
            index = AuditIndex(self.log, engines=self._engines)
            index.refresh()
            return index.stats(tenant, window=window, by=by, model=model, session=session, now=now)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            index = self._scratch_index()
            index.refresh()
            return index.stats(tenant, window=window, by=by, model=model, session=session, now=now)

    def _scratch_index(self) -> AuditIndex:
        """The private index used when the one beside the log cannot be written (made on first use)."""
        with self._scratch_lock:
            if self._scratch is None:
                directory = tempfile.TemporaryDirectory(prefix="ask-fable-index-")
                self._scratch = (directory, AuditIndex(self.log, Path(directory.name) / "index.db"))
            return self._scratch[1]


def audit_trail_for(settings: Settings, *, clock: Clock = SYSTEM_CLOCK,
                    engines: Engines | None = None) -> AuditStore:
    """The audit trail configured by ``settings`` (path, rotation size, backups, secrets; or the
    PostgreSQL table), on the App's clock and engines when given."""
    if settings.database_url:
        database = database_for(settings, "audit", settings.audit_file, engines=engines)
        return AuditTable(database, secrets=settings, clock=clock)
    return AuditTrail(audit_log_for(settings), clock=clock, engines=engines)
