"""The context bus: named chunks of context shared by every agent and server process.

Values are redacted before they are stored, so a key pasted by accident never reaches disk
(or a model through ``context_ref``). A secret used as a key *name* is refused outright: names are
listed to every caller, and a redacted name could not be told from another.
"""

from __future__ import annotations

import builtins
import difflib
import os
import time
from typing import cast

from ask_fable.errors import BadArgs
from ask_fable.stores.db import Connections, Database
from ask_fable.stores.redact import SecretSource, redact, secret_list
from ask_fable.stores.views import ContextEntry, ContextListed, ContextMeta, ResolvedContext

MAX_KEY_CHARS = 200

MIGRATIONS = [
    """
    CREATE TABLE context (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        size_chars INTEGER NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX context_updated ON context(updated_at);
    """,
]

_META = "key, description, size_chars, created_at, updated_at"


def validate_key(key: object, secrets: SecretSource = ()) -> str:
    """Return ``key`` if it is a usable context key, else raise :class:`BadArgs`.

    A key holding a secret (one of ``secrets`` or a known key shape) is not usable.
    """
    if not isinstance(key, str) or not key.strip():
        raise BadArgs("context key must be a non-empty string")
    if len(key) > MAX_KEY_CHARS:
        raise BadArgs(f"context key is {len(key)} characters; the limit is {MAX_KEY_CHARS}")
    if not key.isprintable():
        raise BadArgs("context key must contain printable characters only (no newlines or tabs)")
    if redact(key, secrets) != key:
        raise BadArgs("context key looks like a secret (an API key or token); name the entry after what "
                      "it holds instead")
    return key


class ContextStore:
    """Key → text store over SQLite (``settings.context_db``): the ``ContextBus``."""

    def __init__(self, path: str | os.PathLike[str], *, secrets: SecretSource = (),
                 connections: Connections | None = None) -> None:
        self.db = Database(path, MIGRATIONS, connections=connections)
        self._secrets = secret_list(secrets)

    def write(self, key: str, value: str, description: str = "") -> ContextMeta:
        """Store ``value`` under ``key`` (overwriting, keeping ``created_at``); returns its metadata."""
        validate_key(key, self._secrets)
        if not isinstance(value, str):
            raise BadArgs("context value must be a string")
        if not isinstance(description, str):
            raise BadArgs("context description must be a string")
        value = redact(value, self._secrets)
        description = redact(description, self._secrets)
        now = time.time()
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO context (key, value, description, size_chars, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                "description = excluded.description, size_chars = excluded.size_chars, "
                "updated_at = excluded.updated_at",
                (key, value, description, len(value), now, now),
            )
            row = conn.execute(f"SELECT {_META} FROM context WHERE key = ?", (key,)).fetchone()
        return cast(ContextMeta, dict(row))

    def read(self, key: str) -> ContextEntry | None:
        """The value and metadata under ``key`` (with ``age_s``), or ``None``."""
        validate_key(key, self._secrets)
        with self.db.read() as conn:
            row = conn.execute(f"SELECT value, {_META} FROM context WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        data = cast(ContextEntry, dict(row))
        data["age_s"] = round(max(0.0, time.time() - data["updated_at"]), 3)
        return data

    def list(self) -> list[ContextListed]:
        """Metadata of every entry, most recently updated first; never the values."""
        now = time.time()
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_META} FROM context ORDER BY updated_at DESC, key").fetchall()
        out = []
        for row in rows:
            data = cast(ContextListed, dict(row))
            data["age_s"] = round(max(0.0, now - data["updated_at"]), 3)
            out.append(data)
        return out

    def keys(self) -> builtins.list[str]:
        """Every stored key."""
        with self.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT key FROM context ORDER BY key")]

    def delete(self, key: str) -> bool:
        """Remove ``key``; ``True`` if it existed."""
        validate_key(key, self._secrets)
        with self.db.write() as conn:
            return conn.execute("DELETE FROM context WHERE key = ?", (key,)).rowcount > 0

    def resolve(self, keys: builtins.list[str]) -> ResolvedContext:
        """Join the values of ``keys`` (each under a header) → ``(text, resolved, missing)``.

        Duplicate keys are used once; order is preserved.
        """
        wanted = list(dict.fromkeys(validate_key(k, self._secrets) for k in keys))
        if not wanted:
            return ResolvedContext("", [], [])
        with self.db.read() as conn:
            marks = ",".join("?" * len(wanted))
            found = {
                r[0]: r[1]
                for r in conn.execute(f"SELECT key, value FROM context WHERE key IN ({marks})", wanted)
            }
        resolved = [k for k in wanted if k in found]
        missing = [k for k in wanted if k not in found]
        text = "\n\n".join(f"### context: {k}\n{found[k]}" for k in resolved)
        return ResolvedContext(text, resolved, missing)

    def suggest(self, missing: builtins.list[str], limit: int = 5) -> builtins.list[str]:
        """Stored keys that look like the ``missing`` ones (did-you-mean), best first."""
        stored = self.keys()
        if not stored:
            return []
        folded = {k.casefold(): k for k in stored}
        out: builtins.list[str] = []
        for want in missing:
            if not isinstance(want, str):
                continue
            target = want.casefold()
            matches = difflib.get_close_matches(target, list(folded), n=3, cutoff=0.5)
            matches += [k for k in folded if target and (target in k or k in target)]
            for match in matches:
                original = folded[match]
                if original not in out:
                    out.append(original)
        return out[:limit]
