"""Toolsets: which tool families a server exposes, chosen at start.

A toolset is a registry family (``core``, ``single``, ``councils``, ``catalogs``, ``context``,
``observability``, ``hub``), an alias of one (``council`` → ``core``, ``models`` → ``single``), or
one of the two bundles ``default`` and ``all``. ``-name`` removes a toolset from what came before
it (``all,-hub``); a list of removals only starts from ``default`` (``-context`` is "default minus
context"). Unknown names, and a choice that leaves no tool at all, are refused with the fix.
A bad ``ASK_FABLE_TOOLSETS`` (or config-file ``toolsets``) falls back to ``default`` and is reported.

The default bundle is ``core``: the four reasoning modes, help and reset_session, with their
input and output schemas, in under 12 KB of tools/list. Everything else is one name away
(``default,context`` adds the context bus; ``all`` serves every tool).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ask_fable.config_sources import SettingProblem
from ask_fable.errors import BadArgs
from ask_fable.surface.registry import FAMILIES, ToolSpec, all_tools

if TYPE_CHECKING:
    from ask_fable.config import Settings

#: The default keeps every reasoning mode reachable at a small context cost.
DEFAULT_FAMILIES: tuple[str, ...] = ("core",)

#: Friendly names for families: what people type when they mean one of them.
ALIASES: dict[str, str] = {
    "modes": "core",
    "reasoning": "core",
    "council": "core",
    "chain": "core",
    "debate": "core",
    "models": "single",
    "single-models": "single",
    "providers": "single",
    "provider-councils": "councils",
    "catalog": "catalogs",
    "config": "catalogs",
    "configuration": "catalogs",
    "bus": "context",
    "context-bus": "context",
    "traces": "observability",
    "tracing": "observability",
    "stats": "observability",
    "diagnose": "observability",
    "sessions": "hub",
    "session-hub": "hub",
}

TOOLSETS: dict[str, tuple[str, ...]] = {
    "default": DEFAULT_FAMILIES,
    "all": tuple(FAMILIES),
    **{family: (family,) for family in FAMILIES},
}


def known_toolsets_text() -> str:
    """A one-line description of the accepted names, for error messages and ``--help``."""
    aliases = ", ".join(f"{alias}={family}" for alias, family in ALIASES.items())
    return f"known toolsets: {', '.join(TOOLSETS)} (aliases: {aliases}); prefix a name with '-' to drop it"


def split_names(value: str | Iterable[str] | None) -> list[str]:
    """Toolset names from a comma/space separated string or a list of such strings."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [part.strip() for item in items for part in str(item).replace(" ", ",").split(",") if part.strip()]


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _families_of(name: str) -> tuple[str, ...]:
    key = _key(name)
    key = ALIASES.get(key, key)
    if key not in TOOLSETS:
        raise BadArgs(f"unknown toolset {name!r}; {known_toolsets_text()}")
    return TOOLSETS[key]


def families_for(names: str | Iterable[str] | None) -> list[str]:
    """The families selected by toolset names (in registry order); unknown names raise ``BadArgs``."""
    chosen: list[str] = []
    given = split_names(names)
    parts = given or ["default"]
    if all(part.startswith("-") for part in parts):
        parts = ["default", *parts]
    for part in parts:
        if part.startswith("-"):
            dropped = _families_of(part[1:])
            chosen = [family for family in chosen if family not in dropped]
            continue
        chosen.extend(family for family in _families_of(part) if family not in chosen)
    if not chosen:
        why = (f" (a list of removals starts from 'default', which is {', '.join(DEFAULT_FAMILIES)})"
               if parts[0] == "default" and given[:1] != ["default"] else "")
        raise BadArgs(f"toolsets {','.join(given)!r} leave no tool to serve{why}; name what to serve, "
                      "e.g. 'default,context' or 'all,-hub'")
    order = list(FAMILIES)
    return sorted(chosen, key=order.index)


def configured_families(settings: Settings) -> tuple[list[str], list[SettingProblem]]:
    """The families the ``toolsets`` setting selects; a bad value falls back to ``default``, reported."""
    try:
        return families_for(settings.toolsets), []
    except BadArgs as exc:
        families = families_for(None)
        source = settings.origin("toolsets") or "ASK_FABLE_TOOLSETS"
        using = f"serving the default toolset ({', '.join(families)})"
        return families, [SettingProblem(source, exc.detail, using, setting="toolsets")]


def toolsets_adding(served: Iterable[str], family: str) -> str:
    """The ``--toolsets`` value that keeps what is served and adds ``family`` (``default,context``)."""
    served = list(served)
    parts = ["default"] if set(DEFAULT_FAMILIES) <= set(served) else []
    parts += [name for name in served if not (parts and name in DEFAULT_FAMILIES)]
    return ",".join([*parts, family])


def how_to_enable(served: Iterable[str], family: str) -> str:
    """The exact start option (flag and environment variable) that adds ``family``'s tools."""
    value = toolsets_adding(served, family)
    return (f"start ask-fable with --toolsets {value} (or set ASK_FABLE_TOOLSETS={value}); "
            "--toolsets all serves every tool")


def select_tools(names: str | Iterable[str] | None) -> list[ToolSpec]:
    """The tools a server started with these toolsets serves (registry order)."""
    families = set(families_for(names))
    return [spec for spec in all_tools() if spec.family in families]
