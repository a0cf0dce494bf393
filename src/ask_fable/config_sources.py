"""Where each setting's raw value comes from, and how a value that cannot be used is reported.

:func:`ask_fable.config.load_settings` layers the settings saved to a shared database (when there
is one) over the config file over the environment over the defaults. This module reads the outer
layers key by key, remembering for each value the
place it came from (an environment variable, or the config file's path), so that a bad value
can be dropped, replaced by the next layer, and described as a :class:`SettingProblem` instead
of stopping the program. Nothing here raises for what a user wrote.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import AliasChoices
from pydantic.fields import FieldInfo

#: How much of a bad value a report quotes.
_QUOTE_CHARS = 60


@dataclass(frozen=True)
class SettingProblem:
    """One setting, config file or key that could not be used as written, and what is used instead."""

    #: Where it was written: an environment variable name, or ``config file <path>``.
    source: str
    #: What is wrong with it.
    problem: str
    #: What ask-fable does instead.
    using: str
    #: The setting whose value could not be used (a field name); None for a file or an unknown key.
    setting: str | None = None
    #: The setting an unknown key was probably meant to be (its did-you-mean).
    meant: str | None = None
    #: The unknown key as written (lower case), for a key a backend registered later accepts.
    key: str | None = None

    @property
    def concerns(self) -> str | None:
        """The setting a call must read for this problem to matter to it; None: every call."""
        return self.setting or self.meant

    def message(self) -> str:
        """One line: which setting, from where, what is wrong, what is used instead."""
        where = f"{self.setting} from {self.source}" if self.setting else self.source
        return f"{where}: {self.problem}; {self.using}"


@dataclass
class Layer:
    """The raw values one source supplies, by field name, each with where it was written."""

    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    problems: list[SettingProblem] = field(default_factory=list)


#: Settings a backend declared as credentials (``SecretStr``), beyond the key-named ones.
SECRET_SETTINGS: set[str] = set()


def is_secret(name: str) -> bool:
    """Whether a setting holds a credential whose value is never quoted (a key, or a database URL
    that may carry a password)."""
    return name.endswith("_api_key") or name == "database_url" or name in SECRET_SETTINGS


def _alias_names(info: FieldInfo) -> list[str]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return [choice for choice in alias.choices if isinstance(choice, str)]
    return [alias] if isinstance(alias, str) else []


def env_names(name: str, info: FieldInfo, prefix: str) -> list[str]:
    """The environment variables that set field ``name``: its own first, then the other accepted ones."""
    own = f"{prefix}{name.upper()}"
    return [own, *(alias for alias in _alias_names(info) if alias.isupper() and alias != own)]


def accepted_names(fields: dict[str, FieldInfo], prefix: str) -> dict[str, str]:
    """Every name a setting is accepted under (lower-cased; config-file keys too) and its field."""
    keys: dict[str, str] = {}
    for name, info in fields.items():
        for key in (name, f"{prefix}{name}", *_alias_names(info)):
            keys.setdefault(key.lower(), name)
    return keys


def read_env_layer(fields: dict[str, FieldInfo], prefix: str,
                   source: Mapping[str, str] | None = None) -> Layer:
    """The settings the environment (``source``, default ``os.environ``) supplies (variable names are
    matched case-insensitively)."""
    given = os.environ if source is None else source
    environ = {key.upper(): (key, value) for key, value in given.items()}
    layer = Layer()
    for name, info in fields.items():
        for candidate in env_names(name, info, prefix):
            found = environ.get(candidate.upper())
            if found is not None:
                layer.values[name], layer.origins[name] = found[1], found[0]
                break
    return layer


def read_file_layer(path: Path, fields: dict[str, FieldInfo], prefix: str) -> Layer:
    """The settings the config file supplies, with a problem for a broken file and each unknown key.

    A missing file supplies nothing and is not a problem (the configure_* tools create it).
    """
    source = f"config file {path}"
    layer = Layer()
    ignored = "none of its settings apply; using environment variables and defaults"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return layer
    except UnicodeDecodeError as exc:
        problem = f"is not UTF-8 text (invalid byte at offset {exc.start})"
        layer.problems.append(SettingProblem(source, problem, ignored))
        return layer
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        layer.problems.append(SettingProblem(source, f"cannot be read ({reason})", ignored))
        return layer
    if not text.strip():
        return layer
    try:
        data = json.loads(text)
    except ValueError as exc:
        layer.problems.append(SettingProblem(source, f"is not valid JSON ({exc})", ignored))
        return layer
    if not isinstance(data, dict):
        found = type(data).__name__
        layer.problems.append(SettingProblem(source, f"must hold a JSON object, not a {found}", ignored))
        return layer
    return mapping_layer(data, source, fields, prefix, layer)


def mapping_layer(data: Mapping[str, Any], source: str, fields: dict[str, FieldInfo], prefix: str,
                  layer: Layer | None = None) -> Layer:
    """The settings a mapping written at ``source`` supplies (keys by any accepted name; ``None``
    values skipped), with a problem for each unknown key."""
    layer = layer if layer is not None else Layer()
    keys = accepted_names(fields, prefix)
    for key, value in data.items():
        name = keys.get(str(key).lower())
        if name is None:
            layer.problems.append(_unknown_key(source, str(key), fields, prefix))
        elif value is not None:
            layer.values[name], layer.origins[name] = value, source
    return layer


def _unknown_key(source: str, key: str, fields: dict[str, FieldInfo], prefix: str) -> SettingProblem:
    """An unknown key, with the closest known setting in the spelling style the key used."""
    from ask_fable.redact import redact

    written = key.lower()
    key = redact(key[:_QUOTE_CHARS])
    bare = key.lower().removeprefix(prefix.lower())
    match = difflib.get_close_matches(bare, list(fields), n=1, cutoff=0.75)
    if not match:
        return SettingProblem(source, f"unknown setting {key!r}", "it is ignored (docs/configuration.md "
                              "lists the known names)", key=written)
    known = match[0]
    spelled = f"{prefix}{known.upper()}" if key.lower().startswith(prefix.lower()) else known
    return SettingProblem(source, f"unknown setting {key!r} (did you mean {spelled!r}?)", "it is ignored",
                          meant=known, key=written)


def quote(name: str, value: Any) -> str:
    """A bad value as a report may show it: secrets are described, never printed."""
    if is_secret(name):
        return "the value given (not shown)"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > _QUOTE_CHARS:
        text = text[: _QUOTE_CHARS - 1] + "…"
    from ask_fable.redact import redact

    return repr(redact(text))


def shown(name: str, value: Any) -> str:
    """A value in force, as a report may show it."""
    if value is None:
        return "unset"
    if is_secret(name):
        return "set, not shown"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, list):
        value = ", ".join(str(item) for item in value) or "empty"
    text = str(value)
    return text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1] + "…"
