"""The one list of backends: :func:`register` adds one, everything else reads the list.

The built-in backends (:mod:`ask_fable.backends.builtin`) are registered through the same
:func:`register` on first use, then the backends installed packages declare under the entry point
group :data:`PLUGIN_GROUP` (docs/plugins.md), so importing this module stays cheap and a backend
added from outside (a plugin, a test) is served exactly like the built-in ones: it resolves as a
token, shows in ``doctor``, ``diagnose``, ``ask_fable_help`` and the docs, its settings are read and
its key redacted. A plugin that cannot be loaded is kept as a :class:`PluginProblem` for ``doctor``
and ``diagnose`` to report; it never stops the server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from ask_fable.backends.descriptor import Backend
from ask_fable.backends.model_ids import lab_of
from ask_fable.config import ProviderSettings, register_section, set_section_source, unregister_section

#: The entry point group through which an installed package registers backends.
PLUGIN_GROUP = "ask_fable.backends"

_lock = threading.RLock()
_backends: dict[str, Backend] = {}
_loaded = False


@dataclass(frozen=True)
class PluginProblem:
    """An installed plugin whose backends could not be registered, and why."""

    #: The entry point's name and what it points at (``module:attribute``).
    plugin: str
    target: str
    problem: str

    def message(self) -> str:
        """One line: which plugin, what is wrong."""
        return f"plugin {self.plugin!r} ({self.target}): {self.problem}; its backends are not available"


_plugin_problems: list[PluginProblem] = []
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
        _load_plugins()


def _load_plugins() -> None:
    """Register the backends of every installed plugin; keep a problem for each one that fails."""
    from importlib.metadata import entry_points

    from ask_fable.redact import redact

    for point in entry_points(group=PLUGIN_GROUP):
        added: list[str] = []
        try:
            for backend in plugin_backends(point.load()):
                register(backend)
                added.append(backend.name)
        except Exception as exc:  # a broken plugin is reported, never fatal
            for name in added:  # all of a plugin's backends, or none
                unregister(name)
            problem = redact(f"{type(exc).__name__}: {exc}")
            _plugin_problems.append(PluginProblem(point.name, point.value, problem))


def plugin_backends(declared: object) -> list[Backend]:
    """The backends an entry point declares: a :class:`Backend`, an iterable of them, or a function
    of no arguments returning either.

    Raises:
        TypeError: it declares something else.
    """
    if callable(declared) and not isinstance(declared, Backend):
        declared = declared()
    items = [declared] if isinstance(declared, Backend) else declared
    if not isinstance(items, Iterable) or isinstance(items, str | bytes):
        raise TypeError(f"declares a {type(declared).__name__}, not a Backend or a list of them")
    backends = list(items)
    for item in backends:
        if not isinstance(item, Backend):
            raise TypeError(f"declares a {type(item).__name__}, not a Backend")
    return backends


def report_problem(backend: str, problem: str) -> None:
    """Note that part of the registered backend ``backend`` cannot be served (reported as its
    plugin's problem by ``doctor`` and ``diagnose``)."""
    with _lock:
        _plugin_problems.append(PluginProblem(backend, f"backend {backend!r}", problem))


def plugin_problems() -> list[PluginProblem]:
    """The installed plugins that could not be loaded, in the order they were tried."""
    _ensure_builtins()
    with _lock:
        return list(_plugin_problems)


set_section_source(_ensure_builtins)


def register(backend: Backend) -> None:
    """Add ``backend`` to the list (after the ones already there).

    Raises:
        ValueError: its name, a token spelling or its prefix is already taken, a token contains
            ``:``, it has neither tokens nor a prefix, its name is not a lower-case identifier, or
            its settings are not a ``ProviderSettings`` model that can be read.
    """
    _ensure_builtins()
    global _token_index
    with _lock:
        if not backend.name.isidentifier() or backend.name != backend.name.lower():
            raise ValueError(f"backend name {backend.name!r} must be a lower-case identifier")
        if backend.name in _backends:
            raise ValueError(f"a backend named {backend.name!r} is already registered")
        if not callable(backend.build) or not callable(backend.probe):
            raise ValueError(f"backend {backend.name!r} needs a build function and a probe")
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
        if backend.settings_model is not None:
            model = backend.settings_model
            if not (isinstance(model, type) and issubclass(model, ProviderSettings)):
                raise ValueError(f"settings of {backend.name!r} must be a ProviderSettings model")
            register_section(backend.name, backend.settings_model)
        _backends[backend.name] = backend
        _token_index = None


def unregister(name: str) -> None:
    """Remove the backend called ``name`` (nothing happens when there is none)."""
    global _token_index
    with _lock:
        gone = _backends.pop(name, None)
        if gone is not None and gone.settings_model is not None:
            unregister_section(name)
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


def family_of(token: str) -> str:
    """The model lab behind a token or a bare provider model id (used to order anonymized experts),
    ``unknown`` if unclear."""
    named = find_token(token)
    if named is not None:
        return named[0].family
    head, sep, rest = token.partition(":")
    return lab_of(rest if sep and prefixed_backend(head) is not None else token)
