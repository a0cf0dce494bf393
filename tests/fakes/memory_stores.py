"""Stand-in stores for tests that hand the App its stores: an in-memory context bus, and a wrapper
that makes one method of a real store fail."""

from __future__ import annotations

import time
from typing import Any

from ask_fable.stores.context import validate_key
from ask_fable.stores.views import ContextEntry, ContextListed, ContextMeta, ResolvedContext


class MemoryContextBus:
    """A ``ContextBus`` kept in a dict: nothing touches the disk, every call is counted."""

    def __init__(self) -> None:
        self.entries: dict[str, ContextEntry] = {}
        self.calls: list[str] = []

    def write(self, key: str, value: str, description: str = "") -> ContextMeta:
        """Store ``value`` under ``key``, keeping ``created_at`` on overwrite."""
        self.calls.append("write")
        validate_key(key)
        now = time.time()
        created = self.entries[key]["created_at"] if key in self.entries else now
        self.entries[key] = ContextEntry(key=key, value=value, description=description, size_chars=len(value),
                                         created_at=created, updated_at=now, age_s=0.0)
        return ContextMeta(key=key, description=description, size_chars=len(value), created_at=created,
                           updated_at=now)

    def read(self, key: str) -> ContextEntry | None:
        """The entry under ``key``, or ``None``."""
        self.calls.append("read")
        validate_key(key)
        return self.entries.get(key)

    def list(self) -> list[ContextListed]:
        """Every entry without its value, most recently updated first."""
        self.calls.append("list")
        rows = sorted(self.entries.values(), key=lambda e: -e["updated_at"])
        return [ContextListed(key=e["key"], description=e["description"], size_chars=e["size_chars"],
                              created_at=e["created_at"], updated_at=e["updated_at"], age_s=0.0)
                for e in rows]

    def delete(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        self.calls.append("delete")
        return self.entries.pop(validate_key(key), None) is not None

    def resolve(self, keys: list[str]) -> ResolvedContext:
        """The found values under headers, and which keys were found or missing."""
        self.calls.append("resolve")
        wanted = list(dict.fromkeys(keys))
        found = [k for k in wanted if k in self.entries]
        text = "\n\n".join(f"### context: {k}\n{self.entries[k]['value']}" for k in found)
        return ResolvedContext(text, found, [k for k in wanted if k not in self.entries])

    def suggest(self, missing: list[str], limit: int = 5) -> list[str]:
        """Stored keys sharing a prefix with a missing one."""
        self.calls.append("suggest")
        return [k for k in self.entries if any(k[:3] == m[:3] for m in missing)][:limit]


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
