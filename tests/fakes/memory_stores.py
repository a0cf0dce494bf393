"""Stand-in stores for tests that hand the App its stores: an in-memory context bus, and a wrapper
that makes one method of a real store fail."""

from __future__ import annotations

import time
from typing import Any

from ask_fable.access import ALL_TENANTS
from ask_fable.stores.context import validate_key
from ask_fable.stores.views import ContextEntry, ContextListed, ContextMeta, ResolvedContext


class MemoryContextBus:
    """A ``ContextBus`` kept in a dict by ``(tenant, key)``: nothing touches the disk, every call is
    counted."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], ContextEntry] = {}
        self.calls: list[str] = []

    def write(self, tenant: str, key: str, value: str, description: str = "") -> ContextMeta:
        """Store ``value`` under the tenant's ``key``, keeping ``created_at`` on overwrite."""
        self.calls.append("write")
        validate_key(key)
        now = time.time()
        found = self.entries.get((tenant, key))
        created = found.created_at if found else now
        self.entries[(tenant, key)] = ContextEntry(
            tenant=tenant, key=key, value=value, description=description, size_chars=len(value),
            created_at=created, updated_at=now, age_s=0.0,
        )
        return ContextMeta(tenant=tenant, key=key, description=description, size_chars=len(value),
                           created_at=created, updated_at=now)

    def read(self, tenant: str, key: str) -> ContextEntry | None:
        """The tenant's entry under ``key``, or ``None``."""
        self.calls.append("read")
        validate_key(key)
        return self.entries.get((tenant, key))

    def list(self, tenant: str) -> list[ContextListed]:
        """The tenant's entries (everyone's for ``"*"``) without their values, newest first."""
        self.calls.append("list")
        rows = sorted((e for (t, _), e in self.entries.items() if tenant in (ALL_TENANTS, t)),
                      key=lambda e: -e.updated_at)
        return [ContextListed(**e.model_dump(exclude={"value", "age_s"}), age_s=0.0) for e in rows]

    def delete(self, tenant: str, key: str) -> bool:
        """Remove the tenant's ``key``; whether it existed."""
        self.calls.append("delete")
        return self.entries.pop((tenant, validate_key(key)), None) is not None

    def resolve(self, tenant: str, keys: list[str]) -> ResolvedContext:
        """The tenant's found values under headers, and which keys were found or missing."""
        self.calls.append("resolve")
        wanted = list(dict.fromkeys(keys))
        found = [k for k in wanted if (tenant, k) in self.entries]
        text = "\n\n".join(f"### context: {k}\n{self.entries[(tenant, k)].value}" for k in found)
        return ResolvedContext(text, found, [k for k in wanted if k not in found])

    def suggest(self, tenant: str, missing: list[str], limit: int = 5) -> list[str]:
        """The tenant's stored keys sharing a prefix with a missing one."""
        self.calls.append("suggest")
        mine = [k for t, k in self.entries if t == tenant]
        return [k for k in mine if any(k[:3] == m[:3] for m in missing)][:limit]


class Failing:
    """A real store whose ``methods`` raise ``error``; everything else reaches the real store."""

    def __init__(self, inner: Any, error: Exception, *methods: str) -> None:
        self._inner = inner
        self._error = error
        self._methods = methods

    def __getattr__(self, name: str) -> Any:
        if name in self._methods:
            def fail(*args: Any, **kwargs: Any) -> Any:
                raise self._error

            return fail
        return getattr(self._inner, name)
