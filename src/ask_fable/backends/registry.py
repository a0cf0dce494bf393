"""The one list of backends: :func:`register` adds one, everything else reads the list.

The built-in backends (:mod:`ask_fable.backends.builtin`) are registered through the same
:func:`register` on first use, so importing this module stays cheap and a backend added from
outside (a test, a plugin) is served exactly like the built-in ones: it resolves as a token, shows
in ``doctor``, ``diagnose``, ``ask_fable_help`` and the docs.
"""

from __future__ import annotations

import threading

from ask_fable.backends.descriptor import Backend

_lock = threading.RLock()
_backends: dict[str, Backend] = {}
_loaded = False
#: Every token spelling (lower case, single spaces) → (backend, canonical token); rebuilt on change.
_token_index: dict[str, tuple[Backend, str]] | None = None


def spelling(text: str) -> str:
    """How a token spelling is compared: trimmed, lower case, inner whitespace as one space."""
    return " ".join(str(text).lower().split())


def _ensure_builtins() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        _loaded = True
        from ask_fable.backends.builtin import BUILTIN

        for backend in BUILTIN:
            register(backend)


def register(backend: Backend) -> None:
    """Add ``backend`` to the list (after the ones already there).

    Raises:
        ValueError: its name, a token spelling or its prefix is already taken, a token contains
            ``:``, or it has neither tokens nor a prefix.
    """
    _ensure_builtins()
    global _token_index
    with _lock:
        if backend.name in _backends:
            raise ValueError(f"a backend named {backend.name!r} is already registered")
        if not backend.tokens and not backend.prefix:
            raise ValueError(f"backend {backend.name!r} needs tokens or a prefix")
        taken = _index()
        for text in _spellings(backend):
            if ":" in text:
                raise ValueError(f"token {text!r} of {backend.name!r} may not contain ':'")
            if text in taken:
                raise ValueError(f"token {text!r} of {backend.name!r} is already {taken[text][0].name!r}'s")
        if backend.prefix and prefixed_backend(backend.prefix) is not None:
            raise ValueError(f"prefix {backend.prefix!r} of {backend.name!r} is already taken")
        _backends[backend.name] = backend
        _token_index = None


def unregister(name: str) -> None:
    """Remove the backend called ``name`` (nothing happens when there is none)."""
    global _token_index
    with _lock:
        _backends.pop(name, None)
        _token_index = None


def registered() -> tuple[Backend, ...]:
    """Every backend, in registration order (the order ``doctor`` reports them in)."""
    _ensure_builtins()
    with _lock:
        return tuple(_backends.values())


def backend_names() -> list[str]:
    """The names of every backend, in registration order."""
    return [backend.name for backend in registered()]


def get_backend(name: str) -> Backend:
    """The backend called ``name``; ``KeyError`` when there is none."""
    _ensure_builtins()
    with _lock:
        return _backends[name]


def _spellings(backend: Backend) -> list[str]:
    return [spelling(text) for token in backend.tokens for text in (token.name, *token.aliases)]


def _index() -> dict[str, tuple[Backend, str]]:
    global _token_index
    with _lock:
        if _token_index is None:
            index: dict[str, tuple[Backend, str]] = {}
            for backend in _backends.values():
                for token in backend.tokens:
                    for text in (token.name, *token.aliases):
                        index[spelling(text)] = (backend, token.name)
            _token_index = index
        return _token_index


def find_token(text: str) -> tuple[Backend, str] | None:
    """The backend and canonical token a token spelling names (``M3`` → minimax), else ``None``."""
    _ensure_builtins()
    return _index().get(spelling(text))


def token_spellings() -> dict[str, str]:
    """Every token spelling → its canonical token, canonical names first in registration order."""
    _ensure_builtins()
    names = {token.name: token.name for backend in registered() for token in backend.tokens}
    return names | {spelling(text): canonical for text, (_, canonical) in _index().items()}


def prefixed_backend(prefix: str) -> Backend | None:
    """The backend that answers to ``<prefix>:<model id>`` (case-insensitive), else ``None``."""
    head = prefix.strip().lower()
    return next((backend for backend in registered() if backend.prefix == head), None)


def prefixes() -> list[str]:
    """Every registered prefix, in registration order."""
    return [backend.prefix for backend in registered() if backend.prefix]
