"""What one App opens for its backends and stores, and closes when it ends.

The server's lifespan owns one :class:`Resources` (through its ``App``) and hands it to everything
that needs it: HTTP oracles and catalogs take their pooled client, retry policy and reply bound
from it, CLI oracles and the Claude routes their per-binary gates, the Claude routes the chosen
Claude Code CLI and the model ids found unavailable lately, catalog look-ups the catalog cache,
the stores their database engines, and the breaker, caches, stats and traces the clock. A part that
a backend module defines is made by that module's accessor through :meth:`Resources.part`
(``http_client.http_clients(resources)``, ``catalogs.catalog_cache(resources)``…), so this module
imports none of them.
:meth:`Resources.aclose` closes what holds sockets or file handles. Nothing here is opened at
import time, and each piece is made on first use, so a server that never calls a model opens nothing.

Code running outside an App (a test, a one-off listing) gets :meth:`Resources.standalone`: no
pooled client, so nothing is left open when it is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from ask_fable.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:  # pragma: no cover
    from ask_fable.backends.http_client import HttpClients, RetryPolicy
    from ask_fable.backends.subprocess_runner import ProcessGates
    from ask_fable.stores.engines import Engines

_Part = TypeVar("_Part")


class Memo:
    """A bounded map of recent results that forgets each one ``ttl`` seconds after it was stored,
    safe to share between threads."""

    def __init__(self, clock: Clock, *, maxsize: int, ttl: float) -> None:
        from cachetools import TTLCache

        self._lock = threading.Lock()
        self._items: TTLCache[str, object] = TTLCache(maxsize=maxsize, ttl=ttl, timer=clock.monotonic)

    def get(self, key: str) -> object | None:
        """What was stored under ``key`` and has not expired, else None."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: str, value: object) -> None:
        """Store ``value`` under ``key`` (the oldest entry makes room when full)."""
        with self._lock:
            self._items[key] = value

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


class Resources:
    """The App's clients, gates, caches, connections, clock and retry policies.

    ``retry`` is the policy of model calls, ``catalog_retry`` the one of catalog listings (one
    quick retry: a listing is interactive); ``max_reply_bytes`` bounds one HTTP reply body;
    ``read_only_stores`` opens the SQLite stores read-only (a reader such as the web view).
    """

    def __init__(
        self,
        *,
        clock: Clock = SYSTEM_CLOCK,
        retry: RetryPolicy | None = None,
        catalog_retry: RetryPolicy | None = None,
        max_reply_bytes: int | None = None,
        pooled: bool = True,
        read_only_stores: bool = False,
    ) -> None:
        self.clock = clock
        # None: the default of the module that uses it (``http_client.retry_policy`` and so on).
        self.given_retry = retry
        self.given_catalog_retry = catalog_retry
        self.given_max_reply_bytes = max_reply_bytes
        self.pooled = pooled
        self._read_only_stores = read_only_stores
        self._lock = threading.Lock()
        self._parts: dict[str, object] = {}
        self._remembered: dict[tuple[str, ...], tuple[object, object]] = {}

    @classmethod
    def standalone(cls) -> Resources:
        """Resources for code running outside an App: a private HTTP client per call, nothing to close."""
        return cls(pooled=False)

    def part(self, name: str, factory: Callable[[], _Part]) -> _Part:
        """The part called ``name``, made by ``factory`` on first use (each name is made by one
        module's accessor, ``http_client.http_clients`` and the like, so it holds that type)."""
        with self._lock:
            part = self._parts.get(name)
            if part is None:
                part = self._parts[name] = factory()
            # Each name is made by one property's factory, so it holds that factory's type.
            return cast(_Part, part)

    def remembered(self, key: tuple[str, ...], settings: object, build: Callable[[], _Part]) -> _Part:
        """What ``build`` made for ``key`` from these very ``settings``, made again for any other.

        The App loads its settings as a new object whenever the config file changes, and a call
        keeps the object it started with, so what is remembered never outlives the settings it was
        built from (an oracle with its key, endpoint and model).
        """
        with self._lock:
            found = self._remembered.get(key)
            if found is not None and found[0] is settings:
                return cast(_Part, found[1])
        part = build()
        with self._lock:
            self._remembered[key] = (settings, part)
        return part

    @property
    def gates(self) -> ProcessGates:
        """The per-binary concurrency gates of CLI processes."""
        from ask_fable.backends.subprocess_runner import ProcessGates

        return self.part("gates", ProcessGates)

    @property
    def guard_verdicts(self) -> Memo:
        """The guard model's verdicts on recent questions, kept for a day."""
        return self.part("guard_verdicts", lambda: Memo(self.clock, maxsize=4096, ttl=86_400.0))

    @property
    def engines(self) -> Engines:
        """The database engines the App's stores share (one pool per SQLite file or PostgreSQL URL);
        read-only ones (never creating, migrating or writing anything) when made with
        ``read_only_stores``."""
        from ask_fable.stores.engines import Engines

        return self.part("engines", lambda: Engines(read_only=self._read_only_stores))

    async def aclose(self) -> None:
        """Close the HTTP clients and the database connections (caches, gates and choices hold nothing
        open and are kept). The resources stay usable: a client or connection needed again is
        reopened on first use.
        """
        with self._lock:
            http = cast("HttpClients | None", self._parts.get("http"))
            engines = cast("Engines | None", self._parts.get("engines"))
        if http is not None:
            await http.aclose()
        if engines is not None:
            await engines.aclose()
