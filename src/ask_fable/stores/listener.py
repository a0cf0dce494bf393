"""``LISTEN`` on a PostgreSQL channel: how every server learns at once that the shared settings changed.

The saved settings' writers ``NOTIFY`` (``stores/saved_settings.py``); each server keeps one
connection of its own, outside the stores' pool, listening on the channel.
"""

from __future__ import annotations

import math
import random
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ask_fable.stores.engines import postgres_url, quiet_driver_logs, require_driver

if TYPE_CHECKING:
    import psycopg

#: How long a listener waits for a notification before it looks at whether it should stop.
LISTEN_POLL_S = 0.5
#: First and longest pause before a listener connects again after losing the database.
LISTEN_RETRY_S = (0.1, 2.0)


class Listener:
    """``LISTEN channel`` on a connection of its own, in a daemon thread: ``on_change`` runs once the
    listen is in place (the first time and after every reconnection, since notifications sent while
    disconnected are lost) and after each notification, which ``on_notice`` is handed first (its
    payload) the moment it arrives. ``on_change`` failing (the database went away while it read) is
    tried again at the next poll.
    """

    def __init__(self, url: str, channel: str, on_change: Callable[[], None], *,
                 connect_timeout: float, on_notice: Callable[[str], None] | None = None) -> None:
        if not re.fullmatch(r"[a-z_]+", channel):
            raise ValueError(f"invalid channel name: {channel!r}")
        # psycopg takes libpq's own URL; anything else was refused when the settings were read.
        self.url = postgres_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self.channel = channel
        self.on_change = on_change
        self.on_notice = on_notice
        self.connect_timeout = connect_timeout
        self._stop = threading.Event()
        self._first = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start listening; returns once ``on_change`` ran the first time, or the database did not
        answer within the connect timeout (the thread keeps trying)."""
        self._thread = threading.Thread(target=self._run, name=f"ask-fable-listen-{self.channel}",
                                        daemon=True)
        self._thread.start()
        self._first.wait(self.connect_timeout + 1)

    def _run(self) -> None:
        require_driver()
        quiet_driver_logs()
        import psycopg

        delay, longest = LISTEN_RETRY_S
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True,
                                     connect_timeout=max(1, math.ceil(self.connect_timeout))) as conn:
                    conn.execute(f"LISTEN {self.channel}")
                    delay = LISTEN_RETRY_S[0]
                    self._listen(conn)
            except psycopg.Error:
                pass
            self._first.set()
            self._stop.wait(delay * (0.5 + random.random()))
            delay = min(delay * 2, longest)

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        pending = True
        while not self._stop.is_set():
            if pending:
                pending = not self._changed()
                self._first.set()
            for notice in conn.notifies(timeout=LISTEN_POLL_S, stop_after=1):
                if self.on_notice is not None:
                    self.on_notice(notice.payload)
                pending = True

    def _changed(self) -> bool:
        if self._stop.is_set():
            return True
        try:
            self.on_change()
        except Exception:  # the database went away mid-read: tried again at the next poll
            return False
        return True

    def close(self) -> None:
        """Stop listening: the thread calls ``on_change`` no more and ends within
        :data:`LISTEN_POLL_S`, closing its connection (not waited for: a server stops at once)."""
        self._stop.set()
        self._thread = None
