"""What the HTTP surface, its web view and the MCP server share: the web view's path, where the
verified key sits in a request's ASGI scope, and how Host and Origin headers are matched."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ask_fable.stores.records import ApiKey

#: Where the web view of traces and stats lives (``surface/ui`` builds its links from it).
UI_PATH = "/ui"
#: Where the guard puts the verified key's record in the ASGI scope it hands the MCP app.
API_KEY_SCOPE = "ask_fable.api_key"


def request_key(request: object) -> ApiKey | None:
    """The API key record the HTTP surface verified for ``request`` (``http_app.py`` puts it in the
    ASGI scope); None without one (stdio, in memory)."""
    scope = getattr(request, "scope", None)
    return cast("ApiKey | None", scope.get(API_KEY_SCOPE)) if isinstance(scope, dict) else None


def _split_host(value: str) -> tuple[str, str | None]:
    """``name``/``port`` of a Host header or allow-list entry (IPv6 literals keep their brackets)."""
    text = value.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end == -1:
            return text, None
        rest = text[end + 1 :]
        return text[: end + 1], rest[1:] if rest.startswith(":") else None
    name, sep, port = text.rpartition(":")
    if sep and ":" not in name and (port.isdigit() or port == "*"):
        return name, port
    return text, None


def host_allowed(host: str | None, allowed: list[str]) -> bool:
    """Whether a Host header matches an entry (``name`` or ``name:*`` = any port, ``name:port``, ``*``)."""
    if not host:
        return False
    name, port = _split_host(host)
    for entry in allowed:
        if entry.strip() == "*":
            return True
        entry_name, entry_port = _split_host(entry)
        if entry_name == name and (entry_port in (None, "*") or entry_port == port):
            return True
    return False


def origin_allowed(origin: str | None, allowed: list[str]) -> bool:
    """Absent Origin (not a browser) passes; otherwise exact, ``scheme://host:*`` or ``*`` match."""
    if not origin:
        return True
    origin = origin.strip().lower().rstrip("/")
    for entry in allowed:
        entry = entry.strip().lower().rstrip("/")
        if entry == "*" or entry == origin:
            return True
        if entry.endswith(":*"):
            base = entry[:-2]
            if origin == base or (origin.startswith(base + ":") and origin[len(base) + 1 :].isdigit()):
                return True
    return False
