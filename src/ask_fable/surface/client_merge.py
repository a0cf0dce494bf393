"""Merge our server entry into the one a client config already holds, keeping what the user added.

ask-fable owns only what starts or reaches the server: the transport (``type``), the program
(``command`` and the arguments that name ask-fable, such as ``-m ask_fable``), the ``url`` (or
``serverUrl``), the ``Authorization`` header and Codex's ``bearer_token_env_var``. Everything else
in the entry stays as the user left it: ``env`` and its keys, other headers, timeouts, ``disabled``,
and the server options after the program (``--toolsets all``). ``env`` and opencode's ``enabled``
are written only on a new entry. Moving an entry from stdio to HTTP (or back) removes the other
transport's program or address and keeps the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ask_fable.surface.client_files import ConfigFileError

Status = Literal["added", "updated", "unchanged"]

_STDIO_KEYS = ("command", "args")
_HTTP_KEYS = ("url", "serverUrl", "bearer_token_env_var")
_AUTH = "Authorization"
_NEW_ENTRY_ONLY = ("env", "enabled")
_PROGRAM_NAMES = frozenset({"ask-fable", "ask_fable"})


@dataclass(frozen=True)
class EntryMerge:
    """The merged entry and what the merge did to the previous one."""

    entry: dict[str, Any]
    status: Status
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    kept_options: tuple[str, ...] = ()


def split_program(tail: list[str]) -> tuple[list[str], list[str]]:
    """``tail`` (the arguments after the command) as (the part naming ask-fable, the server options).

    ``python -m ask_fable --toolsets all`` splits after ``ask_fable``; ``ask-fable --toolsets all``
    has no program part, so every argument is a server option.
    """
    for index in range(len(tail) - 1, -1, -1):
        if tail[index].rsplit("/", 1)[-1] in _PROGRAM_NAMES:
            return tail[: index + 1], tail[index + 1:]
    return [], tail


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigFileError(f"the existing entry's {what} is not a list of strings; fix it first")
    return value


def _argv(entry: dict[str, Any]) -> list[str] | None:
    """The program and arguments of a stdio entry in either shape (``command`` + ``args``, or one list)."""
    command = entry.get("command")
    if command is None:
        return None
    if isinstance(command, list):
        return _strings(command, "command")
    if not isinstance(command, str):
        raise ConfigFileError("the existing entry's command is not a string; fix it first")
    return [command, *_strings(entry.get("args", []), "args")]


def _merge_argv(old: list[str] | None, new: list[str]) -> tuple[list[str], list[str]]:
    """Our program with the user's server options; options given in ``new`` replace the old ones."""
    if old is None or split_program(new[1:])[1]:
        return new, []
    options = split_program(old[1:])[1]
    return new + options, options


def _merge_headers(old: Any, new: dict[str, str]) -> dict[str, Any]:
    """The user's headers with ours (``Authorization``) set, or removed when ``new`` lacks it."""
    if old is None:
        return dict(new)
    if not isinstance(old, dict):
        raise ConfigFileError("the existing entry's headers is not an object; fix it first")
    merged = {k: v for k, v in old.items() if k != _AUTH or _AUTH in new}
    merged.update(new)
    return merged


def merge_entry(old: Any, new: dict[str, Any]) -> EntryMerge:
    """``new`` (our entry) merged into ``old`` (the entry already in the file, or ``None``)."""
    if old is None:
        return EntryMerge(dict(new), "added", tuple(new))
    if not isinstance(old, dict):
        raise ConfigFileError("the existing entry is not an object; fix it first")
    merged = dict(old)
    for key in _HTTP_KEYS if "command" in new else _STDIO_KEYS:
        merged.pop(key, None)
    options: list[str] = []
    for key, value in new.items():
        if key in _NEW_ENTRY_ONLY:
            merged.setdefault(key, value)
        elif key == "command":
            argv, options = _merge_argv(_argv(old), _argv(new) or [])
            if isinstance(value, list):
                merged["command"] = argv
            else:
                merged["command"], merged["args"] = argv[0], argv[1:]
        elif key == "headers":
            merged["headers"] = _merge_headers(old.get("headers"), value)
        elif key != "args":
            merged[key] = value
    if "command" in new and any(key in old for key in _HTTP_KEYS):  # leaving HTTP: our header goes
        headers = _merge_headers(old.get("headers"), {})
        if headers:
            merged["headers"] = headers
        else:
            merged.pop("headers", None)
    if merged == old:
        return EntryMerge(merged, "unchanged")
    changed = tuple(k for k in merged if merged[k] != old.get(k))
    removed = tuple(k for k in old if k not in merged)
    kept = [k for k in merged if k in old and (k not in new or k in _NEW_ENTRY_ONLY)]
    if "headers" not in kept and isinstance(old.get("headers"), dict) and set(old["headers"]) - {_AUTH}:
        kept.append("headers")
    return EntryMerge(merged, "updated", changed, removed, tuple(kept), tuple(options))
