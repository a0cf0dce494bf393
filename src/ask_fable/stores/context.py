"""The context bus: named chunks of context shared by the agents and server processes of a tenant.

Every entry belongs to a tenant and every query names one: a key of one tenant is invisible to
every other (no read, list, overwrite, delete, suggestion or ``context_ref`` hit). Only a listing
accepts ``ALL_TENANTS``. Values are redacted before they are stored, so a key pasted by accident
never reaches disk (or a model through ``context_ref``). A secret used as a key *name* is refused
outright: names are listed, and a redacted name could not be told from another.

A tenant may keep at most ``max_tenant_bytes`` of values in at most ``max_tenant_entries`` entries
(0: unlimited): a write that would go over is ``BadArgs`` and changes nothing, checked inside the
write's transaction so concurrent writers cannot pass the cap together.
"""

from __future__ import annotations

import builtins
import difflib
import os
import time
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, delete, func, select

from ask_fable.access import ALL_TENANTS, one_tenant
from ask_fable.errors import BadArgs
from ask_fable.redact import SecretSource, redact, secret_list
from ask_fable.stores.db import Database, database_for, open_database, per_dialect, upsert
from ask_fable.stores.driver import run
from ask_fable.stores.engines import Engines
from ask_fable.stores.tables import context, context_tenants
from ask_fable.stores.views import ContextEntry, ContextListed, ContextMeta, ResolvedContext

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.sql import Executable

    from ask_fable.config import Settings

MAX_KEY_CHARS = 200
#: Keys a store remembers having found usable (each checked against its secrets once).
USABLE_KEYS_KEPT = 4096

_META = (context.c.tenant, context.c.key, context.c.description, context.c.size_chars,
         context.c.created_at, context.c.updated_at)
_ONE = (context.c.tenant == bindparam("tenant")) & (context.c.key == bindparam("key"))
# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_META_OF = select(*_META).where(_ONE)
_ENTRY_OF = select(context.c.value, *_META).where(_ONE)
_KEYS_OF = select(context.c.key).where(context.c.tenant == bindparam("tenant")).order_by(context.c.key)
_DELETE = delete(context).where(_ONE)
_OTHERS = (select(func.count(), func.coalesce(func.sum(context.c.size_bytes), 0))
           .where(context.c.tenant == bindparam("tenant"), context.c.key != bindparam("key")))
_LISTED = select(*_META).order_by(context.c.updated_at.desc(), context.c.tenant, context.c.key)
_RESOLVE = select(context.c.key, context.c.value).where(
    context.c.tenant == bindparam("tenant"), context.c.key.in_(bindparam("keys", expanding=True)))


@per_dialect
def _PUT(dialect: str) -> Executable:
    insert = upsert(dialect, context)
    changed = ("value", "description", "size_chars", "size_bytes", "updated_at")
    return insert.on_conflict_do_update(index_elements=["tenant", "key"],
                                        set_={name: insert.excluded[name] for name in changed})


@per_dialect
def _COUNT_WRITE(dialect: str) -> Executable:
    return upsert(dialect, context_tenants).values(writes=1).on_conflict_do_update(
        index_elements=["tenant"], set_={"writes": context_tenants.c.writes + 1})


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
    """Key → text store over a SQLite file or PostgreSQL: the ``ContextBus``."""

    def __init__(self, location: str | os.PathLike[str] | Database, *, secrets: SecretSource = (),
                 engines: Engines | None = None, max_tenant_bytes: int = 0,
                 max_tenant_entries: int = 0) -> None:
        self.db = open_database(location, "context", engines=engines)
        self._secrets = secret_list(secrets)
        self._usable: dict[str, None] = {}
        self.max_tenant_bytes = max_tenant_bytes
        self.max_tenant_entries = max_tenant_entries

    def write(self, tenant: str, key: str, value: str, description: str = "") -> ContextMeta:
        """Store ``value`` under the tenant's ``key`` (overwriting, keeping ``created_at``); returns its
        metadata."""
        one_tenant(tenant)
        self._valid(key)
        if not isinstance(value, str):
            raise BadArgs("context value must be a string")
        if not isinstance(description, str):
            raise BadArgs("context description must be a string")
        value = redact(value, self._secrets)
        description = redact(description, self._secrets)
        now = time.time()
        size = len(value.encode("utf-8", "surrogatepass"))
        with self.db.write() as conn:
            self._check_room(conn, tenant, key, size)
            run(conn, _PUT(conn), {"tenant": tenant, "key": key, "value": value, "description": description,
                                   "size_chars": len(value), "size_bytes": size, "created_at": now,
                                   "updated_at": now})
            row = run(conn, _META_OF, {"tenant": tenant, "key": key}).mapping()
        assert row is not None  # just written, in this transaction
        return ContextMeta(**row)

    def _valid(self, key: object) -> str:
        """``validate_key`` against this store's secrets; a key found usable once is remembered."""
        if type(key) is str and key in self._usable:
            return key
        usable = validate_key(key, self._secrets)
        if len(self._usable) >= USABLE_KEYS_KEPT:
            self._usable.clear()
        self._usable[usable] = None
        return usable

    def _check_room(self, conn: Connection, tenant: str, key: str, size: int) -> None:
        """``BadArgs`` when storing ``size`` bytes under ``key`` would put the tenant over a cap."""
        if not (self.max_tenant_bytes or self.max_tenant_entries):
            return
        # Held to the end of the transaction: the tenant's other writers wait here, then count
        # what this one stored (on SQLite the write transaction already serializes them).
        run(conn, _COUNT_WRITE(conn), {"tenant": tenant})
        others, stored = run(conn, _OTHERS, {"tenant": tenant, "key": key}).one()
        cap_entries, cap_bytes = self.max_tenant_entries, self.max_tenant_bytes
        hint = "delete entries you no longer need (context_list, context_delete), or ask the operator"
        if cap_entries and others + 1 > cap_entries:
            raise BadArgs(f"tenant {tenant!r} already keeps {others} context entries, the most it may keep "
                          f"({cap_entries}, ASK_FABLE_CONTEXT_MAX_TENANT_ENTRIES); {key!r} was not stored.",
                          hint=f"{hint} to raise ASK_FABLE_CONTEXT_MAX_TENANT_ENTRIES")
        if cap_bytes and stored + size > cap_bytes:
            raise BadArgs(f"storing {key!r} ({size} bytes) would put tenant {tenant!r} at {stored + size} "
                          f"bytes of context, over its cap of {cap_bytes} "
                          "(ASK_FABLE_CONTEXT_MAX_TENANT_BYTES); nothing was stored.",
                          hint=f"{hint} to raise ASK_FABLE_CONTEXT_MAX_TENANT_BYTES")

    def read(self, tenant: str, key: str) -> ContextEntry | None:
        """The value and metadata under the tenant's ``key`` (with ``age_s``), or ``None``."""
        one_tenant(tenant)
        self._valid(key)
        with self.db.read() as conn:
            row = run(conn, _ENTRY_OF, {"tenant": tenant, "key": key}).mapping()
        if row is None:
            return None
        return ContextEntry(**row, age_s=round(max(0.0, time.time() - row["updated_at"]), 3))

    def list(self, tenant: str) -> list[ContextListed]:
        """Metadata of the tenant's entries (every tenant's for ``ALL_TENANTS``), most recently
        updated first; never the values."""
        now = time.time()
        query = _LISTED if tenant == ALL_TENANTS else _LISTED.where(context.c.tenant == one_tenant(tenant))
        with self.db.read() as conn:
            rows = conn.execute(query).mappings().all()
        return [ContextListed(**row, age_s=round(max(0.0, now - row["updated_at"]), 3)) for row in rows]

    def keys(self, tenant: str) -> builtins.list[str]:
        """The tenant's stored keys."""
        with self.db.read() as conn:
            return list(conn.scalars(_KEYS_OF, {"tenant": one_tenant(tenant)}))

    def delete(self, tenant: str, key: str) -> bool:
        """Remove the tenant's ``key``; ``True`` if it existed."""
        one_tenant(tenant)
        self._valid(key)
        with self.db.write() as conn:
            deleted = conn.execute(_DELETE, {"tenant": tenant, "key": key})
            return deleted.rowcount > 0

    def resolve(self, tenant: str, keys: builtins.list[str]) -> ResolvedContext:
        """Join the values of the tenant's ``keys`` (each under a header) → ``(text, resolved, missing)``.

        Duplicate keys are used once; order is preserved.
        """
        one_tenant(tenant)
        wanted = list(dict.fromkeys(self._valid(k) for k in keys))
        if not wanted:
            return ResolvedContext("", [], [])
        with self.db.read() as conn:
            found: dict[str, str] = {
                key: value for key, value in conn.execute(_RESOLVE, {"tenant": tenant, "keys": wanted})}
        resolved = [k for k in wanted if k in found]
        missing = [k for k in wanted if k not in found]
        text = "\n\n".join(f"### context: {k}\n{found[k]}" for k in resolved)
        return ResolvedContext(text, resolved, missing)

    def suggest(self, tenant: str, missing: builtins.list[str], limit: int = 5) -> builtins.list[str]:
        """The tenant's stored keys that look like the ``missing`` ones (did-you-mean), best first."""
        stored = self.keys(tenant)
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


def context_store_for(settings: Settings, *, engines: Engines | None = None) -> ContextStore:
    """The context bus configured by ``settings`` (on the App's engines when given)."""
    database = database_for(settings, "context", settings.context_db, engines=engines)
    return ContextStore(database, secrets=settings, max_tenant_bytes=settings.context_max_tenant_bytes,
                        max_tenant_entries=settings.context_max_tenant_entries)
