"""API keys for the HTTP surface: created once, stored only as SHA-256 hashes.

A key is ``afk_`` + 32 URL-safe random characters, returned once by :meth:`KeyStore.create`; the
store keeps its hash, a display prefix, its scope (:mod:`ask_fable.access`), its tenant, its
timestamps (UTC, ISO 8601) and its own quotas (unset: the settings' defaults).

Checking a key costs no write. On SQLite a key verified before is reused while the file is
unchanged (one ``PRAGMA data_version``, which moves when any other connection commits; our own
commits show in ``total_changes``), so a key revoked from another process is refused on the next
request. On PostgreSQL every check is a lookup (:attr:`KeyStore.blocking`). Last use is noted in
memory and written by :meth:`KeyStore.flush_usage`, periodically and at shutdown.

Bringing a file from before scopes meant money to the current schema turns ``write`` into ``ask``
and puts every existing key in the ``local`` tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Text, bindparam, func, insert, select, update

from ask_fable.access import ALL_TENANTS, SHARED_TENANT, Scope, parse_scope, tenant_from_name, validate_tenant
from ask_fable.errors import BadArgs
from ask_fable.redact import SecretSource, redact, secret_list
from ask_fable.stores.db import Database, database_for, open_database
from ask_fable.stores.driver import run
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import ApiKey, QuotaLimits
from ask_fable.stores.tables import api_keys

if TYPE_CHECKING:
    from sqlalchemy import Connection, RowMapping

    from ask_fable.config import Settings

KEY_PREFIX = "afk_"
KEY_BODY_CHARS = 32
DISPLAY_CHARS = 6
#: Verified keys kept for reuse (beyond this many, the cache starts over).
MAX_KNOWN_KEYS = 1024
#: A SQLite connection with its ``data_version`` and ``total_changes`` at one moment.
_Stamp = tuple[sqlite3.Connection, int, int]
_KEY_SHAPE = re.compile(rf"{KEY_PREFIX}[A-Za-z0-9_\-]{{{KEY_BODY_CHARS}}}")

def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def hash_key(key: str) -> str:
    """The hex SHA-256 of a key: the only form a key is stored in."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def generate_key() -> str:
    """A fresh key: ``afk_`` + 32 URL-safe random characters (192 bits)."""
    body = secrets.token_urlsafe(24)  # 24 bytes → exactly 32 base64url characters
    return KEY_PREFIX + body


def looks_like_key(text: str) -> bool:
    """Whether ``text`` has the shape of an ask-fable key (cheap check before any lookup)."""
    return bool(_KEY_SHAPE.fullmatch(text))


def _row(row: Mapping[Any, Any]) -> ApiKey:
    daily = row["daily_usd"]
    limits = QuotaLimits(rpm=row["rpm"], concurrent=row["concurrent"],
                         daily_usd=None if daily is None else float(daily))
    return ApiKey(
        id=int(row["id"]), name=row["name"], scope=row["scope"], tenant=row["tenant"], prefix=row["prefix"],
        created_at=row["created_at"], last_used_at=row["last_used_at"], revoked_at=row["revoked_at"],
        limits=limits,
    )


#: Every column but the hash.
_COLUMNS = (api_keys.c.id, api_keys.c.name, api_keys.c.scope, api_keys.c.tenant, api_keys.c.prefix,
            api_keys.c.created_at, api_keys.c.last_used_at, api_keys.c.revoked_at, api_keys.c.rpm,
            api_keys.c.concurrent, api_keys.c.daily_usd)
# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect). An UPDATE's own
# parameters are not named after a column: a parameter so named would be set in that column.
_BY_ID = select(*_COLUMNS).where(api_keys.c.id == bindparam("id"))
_BY_PREFIX = select(*_COLUMNS).where(api_keys.c.prefix == bindparam("prefix"))
_BY_HASH = select(*_COLUMNS, api_keys.c.key_hash).where(api_keys.c.key_hash == bindparam("digest"))
_LISTED = select(*_COLUMNS).order_by(api_keys.c.id)
_LISTED_ACTIVE = _LISTED.where(api_keys.c.revoked_at.is_(None))
_NAME_TAKEN = (select(api_keys.c.id, api_keys.c.name)
               .where(api_keys.c.tenant == bindparam("tenant"),
                      func.lower(api_keys.c.name) == func.lower(bindparam("name", type_=Text())),
                      api_keys.c.revoked_at.is_(None))
               .order_by(api_keys.c.id))
#: The row given as parameters.
_CREATE = insert(api_keys).returning(*_COLUMNS)
_REVOKE = (update(api_keys).where(api_keys.c.id == bindparam("key_id"))
           .values(revoked_at=func.coalesce(api_keys.c.revoked_at, bindparam("now", type_=Text())))
           .returning(*_COLUMNS))
#: Sets the limit columns given as parameters besides ``key_id``.
_SET_LIMITS = update(api_keys).where(api_keys.c.id == bindparam("key_id"))
_NOTE_USE = (update(api_keys).where(api_keys.c.id == bindparam("key_id"))
             .values(last_used_at=bindparam("used_at")))


def check_limits(limits: QuotaLimits) -> QuotaLimits:
    """``limits`` if none is negative, else ``BadArgs`` naming the one that is."""
    for name in ("rpm", "concurrent", "daily_usd"):
        value = getattr(limits, name)
        if value is not None and value < 0:
            raise BadArgs(f"--{name.replace('_', '-')} must be 0 (unlimited) or more, not {value}")
    return limits


#: A key's name says who or what uses it, in ``keys list`` and the audit: a plain label.
_NAME_SHAPE = re.compile(r"[^\W_][\w .@+:/'()-]{0,63}")
NAME_RULE = ("use 1-64 letters, digits, spaces or . _ - @ + : / ' ( ), starting with a letter or digit "
             "(who or what uses the key)")


def _refuse_secret(option: str, value: str, secrets: SecretSource) -> None:
    """``BadArgs`` (never echoing ``value``) when ``value`` holds one of ``secrets`` or a known key
    shape: the check the context store makes of its keys, since names are listed and audited."""
    if redact(value, secrets) != value:
        raise BadArgs(f"{option} looks like a secret (an API key or token, or the value of a configured "
                      "provider key), and names are shown in `keys list` and the audit: name it after who "
                      "or what uses the key")


def check_name(name: str, secrets: SecretSource = ()) -> str:
    """``name`` without surrounding spaces when it is a usable key name, else ``BadArgs`` saying what is
    (a name holding one of ``secrets`` or a known key shape is not, and is not echoed)."""
    name = name.strip()
    if not name:
        raise BadArgs("a key needs a --name (who or what will use it)")
    _refuse_secret("--name", name, secrets)
    if not _NAME_SHAPE.fullmatch(name):
        shown = name if len(name) <= 40 else f"{name[:40]}… ({len(name)} characters)"
        raise BadArgs(f"{NAME_RULE}; not {shown!r}")
    return name


def key_tenant(name: str, tenant: str | None, secrets: SecretSource = ()) -> str:
    """The tenant a new key joins: ``tenant`` when given, else one made from the key's name (one
    holding one of ``secrets`` or a known key shape is refused)."""
    if tenant is not None and not tenant.strip():
        raise BadArgs("--tenant is empty: give a tenant name, or leave --tenant out to make one from --name")
    if tenant is not None:
        _refuse_secret("--tenant", tenant.strip(), secrets)
    chosen = tenant.strip() if tenant is not None else tenant_from_name(name)
    if not chosen:
        raise BadArgs(f"no tenant can be made from the name {name!r}; give one with --tenant")
    if chosen in (ALL_TENANTS, SHARED_TENANT):
        raise BadArgs(f"tenant {chosen!r} is reserved (for every tenant / team-wide items); choose another")
    return validate_tenant(chosen)


class KeyStore:
    """The API key table, in its own SQLite file (``settings.keys_db``) or PostgreSQL: the ``ApiKeyStore``."""

    def __init__(self, location: str | os.PathLike[str] | Database, *,
                 engines: Engines | None = None, secrets: SecretSource = ()) -> None:
        self.db = open_database(location, "keys", engines=engines)
        #: Values no key or tenant name may hold (the configured provider keys).
        self._secrets = secret_list(secrets)
        #: Whether :meth:`verify` may wait on the network (PostgreSQL) rather than read a local file.
        self.blocking = self.db.dialect != "sqlite"
        self._lock = threading.Lock()
        #: What the verified keys below were read under (SQLite only): the connection, its
        #: ``data_version`` and its ``total_changes`` (any commit to the file changes one of them).
        self._read_under: _Stamp | None = None
        #: Active keys verified under ``_read_under``, by hash.
        self._known: dict[str, ApiKey] = {}
        #: Last use of each key since the last flush (UTC, ISO 8601), by id.
        self._used: dict[int, str] = {}

    def create(self, name: str, scope: str, tenant: str | None = None,
               limits: QuotaLimits | None = None) -> tuple[ApiKey, str]:
        """Store a new key; returns its record and the plain key (shown to the user once).

        ``scope`` is ``read``, ``ask`` or ``admin`` (``write`` reads as ``ask``); ``tenant`` defaults
        to one made from ``name`` (``Alice Smith`` → ``alice-smith``); each of ``limits`` left
        ``None`` follows the setting's default. ``name`` must pass :func:`check_name` and be unused by
        the tenant's active keys (``BadArgs`` otherwise, and nothing is created).
        """
        name = check_name(name, self._secrets)
        granted: Scope = parse_scope(scope)
        owner = key_tenant(name, tenant, self._secrets)
        limits = check_limits(limits or QuotaLimits())
        key = generate_key()
        with self.db.write() as conn:
            taken = conn.execute(_NAME_TAKEN, {"tenant": owner, "name": name}).first()
            if taken is not None:
                raise BadArgs(f"tenant {owner!r} already has an active key named {taken.name!r} "
                              f"(id {taken.id}): give this one another --name, or revoke it first")
            row = conn.execute(_CREATE, {
                "name": name, "scope": granted, "tenant": owner,
                "prefix": key[: len(KEY_PREFIX) + DISPLAY_CHARS], "key_hash": hash_key(key),
                "created_at": _now(), "rpm": limits.rpm, "concurrent": limits.concurrent,
                "daily_usd": limits.daily_usd}).mappings().one()
        return _row(row), key

    def list_keys(self, *, include_revoked: bool = True) -> list[ApiKey]:
        """Every key, oldest first (revoked ones too unless ``include_revoked`` is False)."""
        query = _LISTED if include_revoked else _LISTED_ACTIVE
        with self.db.read() as conn:
            rows = conn.execute(query).mappings().all()
        return [_row(row) for row in rows]

    def get(self, key_id: int | str) -> ApiKey | None:
        """One key by id or by display prefix; None when there is no such key."""
        with self.db.read() as conn:
            row = self._find(conn, key_id)
        return None if row is None else _row(row)

    @staticmethod
    def _find(conn: Connection, key_id: int | str) -> RowMapping | None:
        text = str(key_id).strip()
        if text.isdigit():
            return conn.execute(_BY_ID, {"id": int(text)}).mappings().first()
        rows = conn.execute(_BY_PREFIX, {"prefix": text}).mappings().all()
        if len(rows) > 1:
            raise BadArgs(f"{text!r} matches {len(rows)} keys; use the key's id instead")
        return rows[0] if rows else None

    def revoke(self, key_id: int | str) -> ApiKey:
        """Revoke a key by id (or display prefix); revoking twice keeps the first timestamp."""
        with self.db.write() as conn:
            row = self._find(conn, key_id)
            if row is None:
                raise BadArgs(f"no API key with id {key_id!r}; see `ask-fable keys list`")
            row = conn.execute(_REVOKE, {"key_id": row["id"], "now": _now()}).mappings().one()
        return _row(row)

    def set_limits(self, key_id: int | str, limits: QuotaLimits, *, clear: frozenset[str] = frozenset()
                   ) -> ApiKey:
        """Change a key's own limits: each one given in ``limits`` is set, each named in ``clear``
        goes back to the setting's default, the others stay as they are."""
        check_limits(limits)
        with self.db.write() as conn:
            row = self._find(conn, key_id)
            if row is None:
                raise BadArgs(f"no API key with id {key_id!r}; see `ask-fable keys list`")
            changes = {name: getattr(limits, name) for name in ("rpm", "concurrent", "daily_usd")
                       if name in clear or getattr(limits, name) is not None}
            if changes:
                conn.execute(_SET_LIMITS, {"key_id": row["id"], **changes})
            row = conn.execute(_BY_ID, {"id": row["id"]}).mappings().one()
        return _row(row)

    def verify(self, presented: str, *, touch: bool = True) -> ApiKey | None:
        """The active key matching ``presented``, or None (unknown, malformed or revoked).

        The stored and computed hashes are compared in constant time. On SQLite a key verified
        before is reused while the file is unchanged (see the module docstring); ``touch`` notes
        its use, written by :meth:`flush_usage`.
        """
        if not looks_like_key(presented):
            return None
        digest = hash_key(presented)
        with self.db.read() as conn:
            stamp = self._stamp(conn)
            record = self._reuse(stamp, digest)
            if record is None:
                row = run(conn, _BY_HASH, {"digest": digest}).mapping()
                if row is None or row["revoked_at"] is not None:
                    return None
                if not hmac.compare_digest(row["key_hash"], digest):
                    return None
                record = _row(row)
                self._remember(stamp, digest, record)
        if touch:
            with self._lock:
                self._used[record.id] = _now()
        return record

    @staticmethod
    def _stamp(conn: Connection) -> _Stamp | None:
        """What tells whether the file changed since, or None where nothing cheap does (PostgreSQL)."""
        raw = conn.connection.dbapi_connection
        if not isinstance(raw, sqlite3.Connection):
            return None
        return raw, int(raw.execute("PRAGMA data_version").fetchone()[0]), raw.total_changes

    def _reuse(self, stamp: _Stamp | None, digest: str) -> ApiKey | None:
        if stamp is None:
            return None
        with self._lock:
            if self._read_under != stamp:
                self._read_under, self._known = stamp, {}
            return self._known.get(digest)

    def _remember(self, stamp: _Stamp | None, digest: str, record: ApiKey) -> None:
        with self._lock:
            if stamp is not None and self._read_under == stamp and len(self._known) < MAX_KNOWN_KEYS:
                self._known[digest] = record

    def flush_usage(self) -> None:
        """Write the last use noted for each key since the previous flush.

        Bookkeeping only: when the database cannot be written the times are kept for the next
        flush, and nothing is raised.
        """
        with self._lock:
            used, self._used = self._used, {}
        if not used:
            return
        # In id order: replicas flushing the same keys at once then lock their rows in one order.
        rows = [{"used_at": used[key_id], "key_id": key_id} for key_id in sorted(used)]
        try:
            self.db.run_write(lambda conn: conn.execute(_NOTE_USE, rows))
        except Exception:  # never the caller's failure: the times wait for the next flush
            with self._lock:
                self._used = {**used, **self._used}


def key_store_for(settings: Settings, *, engines: Engines | None = None) -> KeyStore:
    """The API key store configured by ``settings`` (on the App's engines when given)."""
    return KeyStore(database_for(settings, "keys", settings.keys_db, engines=engines), secrets=settings)
