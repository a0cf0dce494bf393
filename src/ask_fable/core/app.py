"""The services one server process shares: settings, resources, stores, breaker, console and sessions.

Owned by the server's lifespan; nothing is opened at import time and every store is created on
first use. The App's :class:`~ask_fable.backends.resources.Resources` (HTTP clients, CLI gates,
catalog cache, the chosen Claude CLI, database engines, clock, retry policy) are handed to the
oracles, stores and breaker it makes, and :meth:`App.aclose` closes everything it opened.
Settings are re-read when the config file changes, or, with ``database_url``, when the settings
the ``configure_*`` tools saved to the shared database change (a revision number held in memory,
kept current by a listener: no round trip per call), so those tools apply from the next call on
every server; a value the new settings get wrong is replaced by its fallback and reported on
stderr (and in the results of the calls that read it), never fatal.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import anyio

from ask_fable.backends.resources import Resources
from ask_fable.clock import Clock
from ask_fable.config import Settings, config_file_path, load_settings, problem_lines
from ask_fable.core.conversations import Conversations
from ask_fable.core.tracing import Console
from ask_fable.stores.interfaces import (
    AnswerArchive,
    AnswerCacheStore,
    ApiKeyStore,
    AuditStore,
    ContextBus,
    GivenStores,
    HubStore,
    QuotaStore,
    SessionTranscriptStore,
    TraceRecordStore,
    WebSessionStore,
)

if TYPE_CHECKING:
    from ask_fable.backends.breaker import CircuitBreaker
    from ask_fable.backends.claude_sessions import ClaudeSessions
    from ask_fable.core.metrics import CallMetrics
    from ask_fable.core.quota_batcher import QuotaBatcher
    from ask_fable.core.record_writer import RecordWriter
    from ask_fable.stores.saved_settings import SharedSettings
    from ask_fable.stores.views import SettleRequest

_Service = TypeVar("_Service")
P = ParamSpec("P")
T = TypeVar("T")

#: The settings a block of work holds (:meth:`App.holding_settings`), with the App they are for.
_HELD: ContextVar[tuple[App, Settings] | None] = ContextVar("ask_fable_held_settings", default=None)


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    # Config writes replace the file, so the inode changes even within one mtime tick.
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def derive_project_id(cwd: str | None = None) -> str:
    """A stable project label from the working directory: ``<basename>-<short hash>``."""
    path = Path(cwd or os.getcwd()).resolve()
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    return f"{path.name or 'root'}-{digest}"


class App:
    """Process-wide services, created lazily and closed by :meth:`aclose`.

    Stores are reached through their interfaces (``stores/interfaces.py``): each is opened from the
    settings on first use, unless ``stores`` hands the App an implementation to use instead.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        client_name: str | None = None,
        quiet: bool = False,
        stores: GivenStores | None = None,
        resources: Resources | None = None,
    ) -> None:
        self._pinned = settings
        #: What the App opens for its backends and stores (a test may hand in its clock or retry policy).
        self.resources = resources or Resources()
        #: ``--quiet`` on the command line: silence the console whatever the settings say.
        self._quiet = quiet
        self._given = stores or GivenStores()
        self._settings = settings or load_settings()
        # Resolved once: settings are read on every step of a call, the file's location rarely moves.
        self._config_path = str(config_file_path())
        self._stamp = _file_stamp(self._config_path)
        #: The settings saved to the shared database (with ``database_url``), opened on first read.
        self._shared: tuple[str, SharedSettings] | None = None
        #: The revision of those settings ``_settings`` was loaded with (None: not loaded with any).
        self._revision: int | None = None
        # Re-entrant: a service factory may read settings, which may reload them.
        self._lock = threading.RLock()
        #: Each service by name, with the key (settings values) it was opened for.
        self._services: dict[str, tuple[object, object]] = {}
        self.client_name = client_name
        self._console: tuple[Settings, Console] | None = None
        #: The process's Prometheus metrics, when the team server serves them (``--metrics-port``).
        self.metrics: CallMetrics | None = None

    # --- settings ---------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """Current settings; reloaded when the config file changed since the last read."""
        if self._pinned is not None:
            return self._pinned
        held = _HELD.get()
        if held is not None and held[0] is self:
            return held[1]
        stamp = _file_stamp(self._config_path)
        shared = self._shared_settings()
        saved = None if shared is None else shared.latest()
        revision = None if saved is None else saved.revision
        if stamp != self._stamp or revision != self._revision:
            with self._lock:
                if stamp != self._stamp or revision != self._revision:
                    self._stamp, self._revision = stamp, revision
                    known = set(self._settings.problems)
                    # Stores are keyed by path below, so a changed path opens a new one.
                    self._settings = load_settings(saved=None if saved is None else saved.values)
                    fresh = [p for p in self._settings.problems if p not in known]
                    for line in problem_lines(fresh):
                        print(line, file=sys.stderr, flush=True)
        return self._settings

    def _shared_settings(self) -> SharedSettings | None:
        """The settings saved to the shared database, watched from first use; None without one."""
        # Read untracked: every call reads this, and it is not a choice the call depends on.
        url: str | None = vars(self._pinned or self._settings)["database_url"]
        shared = self._shared
        if shared is not None and shared[0] == url:
            return shared[1]
        if not url:
            return None
        with self._lock:
            if self._shared is None or self._shared[0] != url:
                old, self._shared = self._shared, (url, self._watch_shared(url))
                if old is not None:
                    old[1].close()
            return self._shared[1]

    def _watch_shared(self, url: str) -> SharedSettings:
        from ask_fable.stores.db import database_for
        from ask_fable.stores.listener import Listener
        from ask_fable.stores.saved_settings import CHANNEL, SettingsStore, SharedSettings

        s = self._pinned or self._settings
        database = database_for(s, "settings", None, engines=self.resources.engines)
        store = SettingsStore(database)
        shared = SharedSettings(store)
        listener = Listener(url, CHANNEL, shared.refresh, connect_timeout=s.database_connect_timeout,
                            on_notice=shared.announce)
        shared.watch(listener)
        listener.start()
        return shared

    def save_settings(self, updates: dict[str, Any], tenant: str) -> str:
        """Save the settings a ``configure_*`` tool chose (``None`` removes one) where every server
        reading these settings sees them: the shared database with ``database_url`` (this server
        applies them at once, the others from their next call), else the config file. Returns where
        they went: ``database`` or the file's path. Blocks: call it from a worker thread."""
        from ask_fable.config import update_config_file
        from ask_fable.stores.saved_settings import LOCATION

        shared = self._shared_settings()
        if shared is None:
            return str(update_config_file(updates))
        shared.save(updates, tenant)
        return LOCATION

    @contextmanager
    def holding_settings(self) -> Iterator[Settings]:
        """Read the settings once and hold them for the block: every read inside it (a call's steps,
        the tasks it starts, the record writes it hands to a worker thread) gets the same settings
        without looking at the config file again. A change to the file applies from the next block."""
        held = _HELD.get()
        if held is not None and held[0] is self:  # a block inside one: it holds the same settings
            yield held[1]
            return
        settings = self.settings
        token = _HELD.set((self, settings))
        try:
            yield settings
        finally:
            _HELD.reset(token)

    @property
    def project_id(self) -> str:
        """The project label stored with traces, audit records and hub turns."""
        explicit = self.settings.project_id
        if explicit:
            return explicit
        cwd = os.getcwd()
        return self._service("project_id", cwd, lambda: derive_project_id(cwd))

    @property
    def agent_id(self) -> str:
        """Who is calling, for the hub: the explicit setting, the MCP client name, or the pid."""
        return self.settings.agent_id or self.client_name or f"pid-{os.getpid()}"

    def _service(self, name: str, key: object, factory: Callable[[], _Service]) -> _Service:
        with self._lock:
            current = self._services.get(name)
            if current is not None and current[0] == key:
                # Only ``factory`` fills ``name``, so the service there has its type.
                return cast(_Service, current[1])
            service = factory()
            self._services[name] = (key, service)
            return service

    def opened(self, name: str) -> object | None:
        """The service ``name`` if it was opened, without opening it (for gauges read at a scrape)."""
        with self._lock:
            current = self._services.get(name)
        return None if current is None else current[1]

    def _store(self, given: _Service | None, name: str, key: object,
               factory: Callable[[], _Service]) -> _Service:
        """The ``given`` store, else the one opened from settings (again when ``key`` changes)."""
        return given if given is not None else self._service(name, key, factory)

    # --- services ---------------------------------------------------------------------------------
    @property
    def clock(self) -> Clock:
        """The clock the breaker, caches, stats windows and traces read."""
        return self.resources.clock

    @property
    def console(self) -> Console:
        """The stderr progress trace."""
        known = self._console
        # Read several times a call: reuse it for the settings last loaded (a call's first settings
        # read has already reloaded them if the file changed).
        if known is not None and known[0] is (self._pinned or self._settings):
            return known[1]
        s = self.settings
        secrets = tuple(s.secret_values())
        quiet = s.quiet or self._quiet
        console = self._service(
            "console",
            (quiet, s.show_reasoning, secrets),
            lambda: Console(quiet, s.show_reasoning, secrets=secrets),
        )
        self._console = (s, console)
        return console

    # --- stores -----------------------------------------------------------------------------------
    @property
    def audit(self) -> AuditStore:
        """The audit trail (and the stats computed over it)."""
        from ask_fable.stores.audit_trail import audit_trail_for

        s = self.settings
        key = (s.database_url, s.audit_file, s.audit_max_bytes, s.audit_backups, tuple(s.secret_values()))
        res = self.resources
        return self._store(self._given.audit, "audit", key,
                           lambda: audit_trail_for(s, clock=res.clock, engines=res.engines))

    @property
    def traces(self) -> TraceRecordStore:
        """The trace index (and full-mode bundles)."""
        from ask_fable.stores.traces import TraceStore

        s = self.settings
        engines = self.resources.engines
        # The secrets are part of the key: the store redacts with those it was opened with.
        key = (s.database_url, s.traces_db, s.traces_dir, tuple(s.secret_values()))
        return self._store(self._given.traces, "traces", key, lambda: TraceStore(s, engines=engines))

    @property
    def context_store(self) -> ContextBus:
        """The context bus."""
        from ask_fable.stores.context import context_store_for

        s = self.settings
        key = (s.database_url, s.context_db, tuple(s.secret_values()), s.context_max_tenant_bytes,
               s.context_max_tenant_entries)
        engines = self.resources.engines
        return self._store(self._given.context, "context", key,
                           lambda: context_store_for(s, engines=engines))

    @property
    def cache(self) -> AnswerCacheStore | None:
        """The answer cache, or None when disabled."""
        s = self.settings
        if not s.cache:
            return None
        from ask_fable.stores.cache import answer_cache_for

        key = (s.database_url, s.cache_db, s.cache_ttl, s.cache_max_rows, tuple(s.secret_values()))
        res = self.resources
        return self._store(self._given.cache, "cache", key,
                           lambda: answer_cache_for(s, clock=res.clock, engines=res.engines))

    @property
    def hub(self) -> HubStore | None:
        """The session hub, or None when disabled."""
        s = self.settings
        if not s.hub:
            return None
        from ask_fable.stores.hub import SessionHub

        res = self.resources
        key = (s.database_url, s.hub_db, s.hub_max_rows, s.hub_stale_seconds, tuple(s.secret_values()))
        return self._store(self._given.hub, "hub", key,
                           lambda: SessionHub(s, clock=res.clock, engines=res.engines))

    @property
    def answers(self) -> AnswerArchive:
        """Saved answers and session transcripts."""
        from ask_fable.stores.answers import archive_for

        s = self.settings
        key = (s.database_url, s.answers_dir, s.sessions_dir, s.max_answers, s.max_sessions,
               tuple(s.secret_values()))
        engines = self.resources.engines
        return self._store(self._given.answers, "answers", key,
                           lambda: archive_for(s, engines=engines))

    @property
    def keys(self) -> ApiKeyStore:
        """The HTTP API keys."""
        from ask_fable.stores.keys import key_store_for

        s = self.settings
        engines = self.resources.engines
        return self._store(self._given.keys, "keys", (s.database_url, s.keys_db),
                           lambda: key_store_for(s, engines=engines))

    @property
    def quotas(self) -> QuotaStore:
        """Each key's quota use (calls per minute, in flight, spend per day)."""
        from ask_fable.stores.quotas import quota_store_for

        s = self.settings
        engines = self.resources.engines
        return self._store(self._given.quotas, "quotas", (s.database_url, s.quotas_db),
                           lambda: quota_store_for(s, engines=engines))

    @property
    def ui_sessions(self) -> WebSessionStore:
        """The team server's web view logins, shared by every server reading these stores."""
        from ask_fable.stores.ui_sessions import ui_session_store_for

        s = self.settings
        engines = self.resources.engines
        return self._service("ui_sessions", (s.database_url, s.ui_sessions_db),
                             lambda: ui_session_store_for(s, engines=engines))

    def records_transaction(self) -> AbstractContextManager[None]:
        """One transaction for what a group of finished calls leaves, where the stores share a
        PostgreSQL database (``stores/db.joined_writes``); on SQLite files each store keeps its own."""
        from ask_fable.stores.db import joined_writes

        return joined_writes(self.resources.engines)

    async def run_store(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A store's blocking method called from the event loop, in a worker thread: one hop per
        store call, whichever database it runs on. A cancelled caller waits for the call to end, so
        its transaction is committed or rolled back whole and its connection returned."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    def settle_quotas(self, settles: Sequence[SettleRequest]) -> None:
        """End these calls' quota holds in one write (blocking; a finished call's records are written
        just before, in the same worker thread: ``core/record_writer.py``)."""
        batcher = self.quota_batcher
        self.quotas.apply(settles, [], [], batcher.holder, self.clock.now(), batcher.lease_s)

    def keep_unsettled(self, settles: Sequence[SettleRequest]) -> None:
        """Hand settlements that did not land to the quota batcher, which retries them."""
        self.quota_batcher.unsettled.extend(settles)

    @property
    def quota_batcher(self) -> QuotaBatcher:
        """Runs this process's quota admissions, settlements and lease renewals in batches."""
        from ask_fable.core.quota_batcher import QuotaBatcher

        return self._service("quota_batcher", None, lambda: QuotaBatcher(self))

    @property
    def record_writer(self) -> RecordWriter:
        """Writes finished calls' records to these stores, grouping calls that finish together."""
        from ask_fable.core.record_writer import RecordWriter

        return self._service("record_writer", None, lambda: RecordWriter(self))

    @property
    def transcripts(self) -> SessionTranscriptStore:
        """Conversation transcripts: the turns every ``ask`` session continues from."""
        from ask_fable.stores.transcripts import transcript_store_for

        s = self.settings
        key = (s.database_url, s.session_db, s.session_retention_days, tuple(s.secret_values()))
        res = self.resources
        return self._store(self._given.transcripts, "transcripts", key, lambda: transcript_store_for(
            s, clock=res.clock, engines=res.engines))

    # --- other services -----------------------------------------------------------------------------
    @property
    def breaker(self) -> CircuitBreaker | None:
        """The per-oracle circuit breaker, or None when disabled."""
        s = self.settings
        if not s.circuit_breaker:
            return None
        from ask_fable.backends.breaker import CircuitBreaker

        key = (s.breaker_window, s.breaker_threshold, s.breaker_cooldown)
        return self._service("breaker", key, lambda: CircuitBreaker.from_settings(s, self.clock))

    @property
    def conversations(self) -> Conversations:
        """The turn-at-a-time order of this process's conversations (their truth is ``transcripts``)."""
        return self._service("conversations", None, Conversations)

    @property
    def claude_sessions(self) -> ClaudeSessions:
        """The warm Claude Code processes of Fable / Opus conversations (a cache of the transcripts)."""
        from ask_fable.backends.claude_sessions import ClaudeSessions

        # A settings getter, so a config change (model pin, reasoning stream) applies on the next turn.
        def start() -> ClaudeSessions:
            return ClaudeSessions(lambda: self.settings, self.resources)

        return self._service("claude_sessions", None, start)

    def _stop_following_settings(self) -> None:
        with self._lock:
            shared, self._shared, self._revision = self._shared, None, None
        if shared is not None:
            shared[1].close()

    def close_stores(self) -> None:
        """Stop following the shared settings and return every database connection: all a command
        that used only the stores opened (synchronous: such a command may run where a loop already runs)."""
        self._stop_following_settings()
        self.resources.engines.close()

    async def aclose(self) -> None:
        """Close everything the App opened: services holding processes (warm Claude sessions), then
        the resources (HTTP clients, database connections). The App stays usable; what is needed again
        is reopened on first use."""
        with self._lock:
            services = list(self._services.values())
            self._services.clear()
        self._stop_following_settings()
        for _, service in services:
            closer = getattr(service, "aclose", None)
            if closer is not None:
                await closer()
        await self.resources.aclose()
