"""Settings the ``configure_*`` tools save, kept in the shared database so every replica runs with them.

:class:`SettingsStore` keeps them (name → JSON value, the saver's tenant, when) under a revision
that every save raises in the same transaction, which also serializes two saves; on PostgreSQL a
save notifies :data:`CHANNEL` as it commits. :class:`SharedSettings` is what one server applies:
the latest snapshot it has seen, saved through the store and reloaded by a PostgreSQL listener
(``stores.listener.Listener``) when another server saves and after every (re)connection. A call
compares revision numbers held in memory (no round trip); one arriving between a notice and the
listener's reload loads the snapshot itself. SQLite (one machine) keeps these settings in the
config file instead; the store runs on both dialects all the same.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import String, bindparam, delete, func, select, update

from ask_fable.stores.db import Database, per_dialect, upsert
from ask_fable.stores.interfaces import SavedSettingsStore
from ask_fable.stores.records import SavedSettings
from ask_fable.stores.tables import saved_settings, saved_settings_revision

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.sql import Executable

#: Where a result says the settings went when they went to the database.
LOCATION = "database"
#: The PostgreSQL notification channel a save notifies, its payload the new revision.
CHANNEL = "ask_fable_saved_settings"

#: A snapshot older than any stored one: what a server holds before its first load.
UNLOADED = SavedSettings(revision=-1, values={})

# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_REVISION = select(saved_settings_revision.c.revision).where(saved_settings_revision.c.one == 1)
_VALUES = select(saved_settings.c.name, saved_settings.c.value).order_by(saved_settings.c.name)
_ENTRIES = select(saved_settings.c.name, saved_settings.c.value, saved_settings.c.tenant,
                  saved_settings.c.saved_at).order_by(saved_settings.c.name)
_NAMES = select(saved_settings.c.name).order_by(saved_settings.c.name)
_REMOVE = delete(saved_settings).where(saved_settings.c.name == bindparam("name"))
_FORGET = delete(saved_settings).where(saved_settings.c.name.in_(bindparam("names", expanding=True)))
_NEXT_REVISION = (update(saved_settings_revision).where(saved_settings_revision.c.one == 1)
                  .values(revision=saved_settings_revision.c.revision + 1)
                  .returning(saved_settings_revision.c.revision))
_NOTIFY = select(func.pg_notify(CHANNEL, bindparam("revision", type_=String())))


@per_dialect
def _SAVE(dialect: str) -> Executable:
    saving = upsert(dialect, saved_settings)
    return saving.on_conflict_do_update(
        index_elements=["name"],
        set_={column: saving.excluded[column] for column in ("value", "tenant", "saved_at")})


@dataclass(frozen=True)
class SavedEntry:
    """One saved setting as an admin reviews it: its value, who saved it (the caller's tenant), when."""

    name: str
    value: Any
    tenant: str
    saved_at: float


class SettingsStore:
    """The saved settings on one :class:`~ask_fable.stores.db.Database` (SQLite or PostgreSQL)."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock

    def load(self) -> SavedSettings:
        """Every saved setting and the revision they are at."""
        with self.db.read() as conn:
            return _snapshot(conn)

    def save(self, updates: Mapping[str, Any], tenant: str) -> SavedSettings:
        """Save ``updates`` (a ``None`` value removes that setting) for ``tenant``'s caller, raise the
        revision, and return the snapshot as committed."""
        now = self._clock()

        def body(conn: Connection) -> SavedSettings:
            revision = self._next_revision(conn)
            for name, value in updates.items():
                if value is None:
                    conn.execute(_REMOVE, {"name": name})
                else:
                    conn.execute(_SAVE(conn), {"name": name, "value": json.dumps(value), "tenant": tenant,
                                               "saved_at": now})
            self._announce(conn, revision)
            return _snapshot(conn)

        return self.db.run_write(body)

    def entries(self) -> list[SavedEntry]:
        """Every saved setting with who saved it and when, by name."""
        with self.db.read() as conn:
            rows = conn.execute(_ENTRIES).all()
        return [SavedEntry(row.name, json.loads(row.value), row.tenant, float(row.saved_at)) for row in rows]

    def forget(self, names: Collection[str] | None = None) -> list[str]:
        """Remove the saved settings ``names`` (``None``: every one) in one save, so every server drops
        them as it applies a save; returns the names that were saved and are now gone."""

        def body(conn: Connection) -> list[str]:
            revision = self._next_revision(conn)
            saved = conn.scalars(_NAMES).all()
            gone = [name for name in saved if names is None or name in names]
            if gone:
                conn.execute(_FORGET, {"names": gone})
            self._announce(conn, revision)
            return gone

        return self.db.run_write(body)

    @staticmethod
    def _next_revision(conn: Connection) -> int:
        """Raise the revision; taken first in a write, its row's lock makes concurrent writes take turns."""
        return int(conn.execute(_NEXT_REVISION).scalar_one())

    def _announce(self, conn: Connection, revision: int) -> None:
        """On PostgreSQL, notify the listening servers of ``revision`` as the write commits."""
        if self.db.dialect == "postgres":
            conn.execute(_NOTIFY, {"revision": str(revision)})

    def close(self) -> None:
        """Close what the store's database opened for itself."""
        self.db.close()


def _snapshot(conn: Connection) -> SavedSettings:
    revision = int(conn.execute(_REVISION).scalar_one())
    rows = conn.execute(_VALUES)
    return SavedSettings(revision=revision, values={name: json.loads(value) for name, value in rows})


class Closeable(Protocol):
    """What keeps a :class:`SharedSettings` current, stopped when the server closes."""

    def close(self) -> None:
        """Stop."""
        ...


class SharedSettings:
    """The saved settings one server applies: the newest snapshot seen, from its own saves and loads."""

    def __init__(self, store: SavedSettingsStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._snapshot = UNLOADED
        #: The newest revision a notice announced, perhaps not loaded yet.
        self._announced = UNLOADED.revision
        self._watch: Closeable | None = None

    @property
    def snapshot(self) -> SavedSettings:
        """The newest snapshot seen (:data:`UNLOADED` until the database first answered)."""
        return self._snapshot

    def latest(self) -> SavedSettings:
        """The snapshot a call should run with: the one seen, loaded first when a notice announced a
        newer revision that the listener has not loaded yet (so a call that follows a save on another
        server runs with it). A load that fails keeps the snapshot seen."""
        if self._announced > self._snapshot.revision:
            with suppress(Exception):
                self.refresh()
        return self._snapshot

    def announce(self, payload: str) -> None:
        """A save's notice arrived: its payload is the revision it committed."""
        with suppress(ValueError):
            revision = int(payload)
            with self._lock:
                self._announced = max(self._announced, revision)

    def offer(self, snapshot: SavedSettings) -> None:
        """Apply ``snapshot`` unless a newer one is already applied (loads and saves may cross)."""
        with self._lock:
            if snapshot.revision > self._snapshot.revision:
                self._snapshot = snapshot

    def refresh(self) -> None:
        """Load the stored snapshot and apply it (raises what the database raises)."""
        self.offer(self.store.load())

    def save(self, updates: Mapping[str, Any], tenant: str) -> SavedSettings:
        """Save ``updates`` and apply the result here at once (other servers: on their next call)."""
        snapshot = self.store.save(updates, tenant)
        self.offer(snapshot)
        return snapshot

    def watch(self, watcher: Closeable) -> None:
        """Keep ``watcher`` (which calls :meth:`announce` and :meth:`refresh` when the stored settings
        change) until close."""
        self._watch = watcher

    def close(self) -> None:
        """Stop watching and close the store."""
        watcher, self._watch = self._watch, None
        if watcher is not None:
            watcher.close()
        self.store.close()
