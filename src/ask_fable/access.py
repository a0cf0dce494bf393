"""Who may do what: the effects a tool declares, the scopes keys carry, and the tenants data belongs to.

A tool declares what it can do, once, as a set of effects; the scope a key needs to call it and
the MCP annotations are both derived from that set:

    effect       what the tool can do                                           scope it needs
    READ         look up the caller's own data (no model, CLI, network or write)   read
    SPEND        call a model, a CLI or a provider's catalog                       ask
    WRITE        change the caller's own data (context entries, sessions)          ask
    ADMINISTER   change the server's settings                                      admin

Scopes are ordered ``read < ask < admin``: a key may do what its own scope and every lower one
allow. Keys of earlier versions may carry ``write``, which reads as ``ask``.

Every stored item belongs to a tenant: an HTTP key's own, or :data:`LOCAL_TENANT` over stdio and
on the command line (where the caller is the machine's operator, with admin scope). A caller sees
only its own tenant's items; an admin may name another tenant, or :data:`ALL_TENANTS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from ask_fable.errors import BadArgs, Forbidden

Scope = Literal["read", "ask", "admin"]
#: Every scope, weakest first.
SCOPES: tuple[Scope, ...] = ("read", "ask", "admin")
#: Scopes of earlier versions and the scope they now read as.
LEGACY_SCOPES: dict[str, Scope] = {"write": "ask"}
#: What a key of each scope may do (with what the scopes below it may), in the words refusals use.
SCOPE_MEANS: dict[Scope, str] = {
    "read": "look up its own tenant's context entries, traces, stats and hub sessions",
    "ask": "call models, CLIs and provider catalogs (spending credit) and write its own tenant's "
    "context entries and sessions",
    "admin": "change the server's settings (configure_*) and read or clean up every tenant's data",
}

LOCAL_TENANT = "local"
#: The tenant argument an admin passes to see every tenant's items.
ALL_TENANTS = "*"
#: Where team-wide items live when sharing is switched on (``ASK_FABLE_SHARED_CONTEXT`` /
#: ``ASK_FABLE_SHARED_CACHE``); no key may belong to it.
SHARED_TENANT = "shared"
_TENANT_SHAPE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


class Effect(StrEnum):
    """One thing a tool can do; a tool declares the set of its effects."""

    READ = "read"
    SPEND = "spend"
    WRITE = "write"
    ADMINISTER = "administer"


#: The effect sets tools declare.
READS: frozenset[Effect] = frozenset({Effect.READ})
#: Reads the caller's context entries (``context_ref``) and asks models.
ASKS: frozenset[Effect] = frozenset({Effect.READ, Effect.SPEND})
#: Reaches a provider's catalog or runs a CLI without asking a model.
FETCHES: frozenset[Effect] = frozenset({Effect.SPEND})
WRITES: frozenset[Effect] = frozenset({Effect.WRITE})
ADMINISTERS: frozenset[Effect] = frozenset({Effect.ADMINISTER})


def required_scope(effects: Iterable[Effect]) -> Scope:
    """The weakest scope allowed to cause every one of ``effects``."""
    found = set(effects)
    if Effect.ADMINISTER in found:
        return "admin"
    if found & {Effect.SPEND, Effect.WRITE}:
        return "ask"
    return "read"


def scope_allows(held: Scope, needed: Scope) -> bool:
    """Whether a key with scope ``held`` may do what ``needed`` allows."""
    return SCOPES.index(held) >= SCOPES.index(needed)


def stronger(first: Scope, second: Scope) -> Scope:
    """The stronger of two scopes."""
    return first if SCOPES.index(first) >= SCOPES.index(second) else second


def parse_scope(text: str) -> Scope:
    """A scope from its name (``write`` reads as ``ask``); ``BadArgs`` naming the scopes otherwise."""
    name = text.strip().lower()
    if name in LEGACY_SCOPES:
        return LEGACY_SCOPES[name]
    for scope in SCOPES:
        if scope == name:
            return scope
    raise BadArgs(f"unknown scope {text!r}; use read, ask or admin", allowed=list(SCOPES))


def validate_tenant(name: str) -> str:
    """``name`` if it is a usable tenant name (lowercase letters, digits, ``.``, ``_``, ``-``; at most
    64 characters), else ``BadArgs``."""
    if not _TENANT_SHAPE.fullmatch(name):
        raise BadArgs(f"tenant {name!r} is not a tenant name: use 1-64 lowercase letters, digits, "
                      "'.', '_' or '-', starting with a letter or digit")
    return name


def tenant_from_name(name: str) -> str:
    """The tenant a key named ``name`` gets by default: the name in lowercase, other characters as ``-``."""
    return re.sub(r"[^a-z0-9._-]+", "-", name.strip().lower()).strip("-._")[:64]


def one_tenant(tenant: str) -> str:
    """``tenant`` when it names one tenant. A write, a delete, a cache hit or a ``context_ref``
    always does: ``ValueError`` for :data:`ALL_TENANTS` or an empty name."""
    if not tenant or tenant == ALL_TENANTS:
        raise ValueError(f"this store operation needs one tenant, not {tenant!r}")
    return tenant


def store_tenant(tenant: str, shared: bool) -> str:
    """The tenant a store is asked for: the team-wide one when that store is shared."""
    return SHARED_TENANT if shared else tenant


@dataclass(frozen=True)
class Caller:
    """Who is calling: the tenant their items belong to, their scope, and the key's name if any.

    The default is the local operator (stdio, the command line): tenant ``local``, admin scope.
    """

    tenant: str = LOCAL_TENANT
    scope: Scope = "admin"
    key_name: str | None = None

    @property
    def agent_id(self) -> str | None:
        """How the caller is named in traces, audit and the hub: its key's name, if it has one."""
        return f"key:{self.key_name}" if self.key_name is not None else None

    def may(self, needed: Scope) -> bool:
        """Whether this caller's scope allows ``needed``."""
        return scope_allows(self.scope, needed)

    def view(self, requested: str | None, *, every: bool = True) -> str:
        """The tenant a read or clean-up should cover: the caller's own unless another is named.

        Naming another tenant, or :data:`ALL_TENANTS` (only where ``every`` allows it), needs admin
        scope; anyone else gets :class:`Forbidden`.
        """
        if requested is None or requested.strip() in ("", self.tenant):
            return self.tenant
        wanted = requested.strip()
        if wanted == ALL_TENANTS and not every:
            raise BadArgs('tenant="*" cannot name one item; name the tenant that holds it')
        if not self.may("admin"):
            raise Forbidden(
                f"this key has {self.scope} scope in tenant {self.tenant!r}: reading or changing "
                f"another tenant's data ({wanted!r}) needs admin scope",
                hint="leave tenant out to use your own tenant's data", required_scope="admin",
            )
        return wanted if wanted == ALL_TENANTS else validate_tenant(wanted)
