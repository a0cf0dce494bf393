"""Toolsets: which tool families a server exposes, chosen at start.

A toolset is a registry family (``core``, ``single``, ``councils``, ``catalogs``, ``context``,
``observability``, ``hub``), an alias of one (``council`` → ``core``, ``models`` → ``single``), or
one of the two bundles ``default`` and ``all``. ``-name`` removes a toolset from what came before
it (``all,-hub``). Unknown names are refused with the list of known ones.

The default bundle is the lean profile: its listing leaves out output schemas, which would
otherwise be close to half of its size, so every reasoning mode and the context bus fit in 12 KB.
Any explicit selection (``all``, ``core``, ``single`` …) lists output schemas, and naming the
pseudo-toolset ``output-schemas`` adds them to the default too. Results carry
``structuredContent`` (and the same JSON as text) either way.
"""

from __future__ import annotations

from collections.abc import Iterable

from ask_fable.errors import BadArgs
from ask_fable.surface.registry import FAMILIES, ToolSpec, all_tools

#: The default keeps every reasoning mode and the context bus reachable at a small context cost.
DEFAULT_FAMILIES: tuple[str, ...] = ("core", "context")

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

#: Not a family: naming it makes tools/list include each tool's output schema.
OUTPUT_SCHEMAS = "output-schemas"

TOOLSETS: dict[str, tuple[str, ...]] = {
    "default": DEFAULT_FAMILIES,
    "all": tuple(FAMILIES),
    **{family: (family,) for family in FAMILIES},
}


def known_toolsets() -> list[str]:
    """Every accepted toolset name: bundles, families, then aliases."""
    return [*TOOLSETS, *ALIASES]


def known_toolsets_text() -> str:
    """A one-line description of the accepted names, for error messages and ``--help``."""
    aliases = ", ".join(f"{alias}={family}" for alias, family in ALIASES.items())
    return (f"known toolsets: {', '.join(TOOLSETS)} (aliases: {aliases}); prefix a name with '-' to drop it; "
            f"add {OUTPUT_SCHEMAS} to list output schemas")


def split_names(value: str | Iterable[str] | None) -> list[str]:
    """Toolset names from a comma/space separated string or a list of such strings."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [part.strip() for item in items for part in str(item).replace(" ", ",").split(",") if part.strip()]


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def wants_output_schemas(names: str | Iterable[str] | None) -> bool:
    """Whether tools/list should carry output schemas: yes unless the selection is the lean default
    (nothing chosen, or only ``default`` with removals); ``output-schemas`` forces them on."""
    parts = [_key(part) for part in split_names(names)]
    if OUTPUT_SCHEMAS in parts:
        return True
    chosen = [part for part in parts if not part.startswith("-")]
    return any(part != "default" for part in chosen)


def _families_of(name: str) -> tuple[str, ...]:
    key = _key(name)
    key = ALIASES.get(key, key)
    if key not in TOOLSETS:
        raise BadArgs(f"unknown toolset {name!r}; {known_toolsets_text()}")
    return TOOLSETS[key]


def families_for(names: str | Iterable[str] | None) -> list[str]:
    """The families selected by toolset names (in registry order); unknown names raise ``BadArgs``."""
    chosen: list[str] = []
    parts = [part for part in split_names(names) if _key(part) != OUTPUT_SCHEMAS]
    if parts and all(part.startswith("-") for part in parts):
        parts = ["default", *parts]
    for part in parts or ["default"]:
        if part.startswith("-"):
            dropped = _families_of(part[1:])
            chosen = [family for family in chosen if family not in dropped]
            continue
        chosen.extend(family for family in _families_of(part) if family not in chosen)
    order = list(FAMILIES)
    return sorted(chosen, key=order.index)


def select_tools(names: str | Iterable[str] | None) -> list[ToolSpec]:
    """The tools a server started with these toolsets serves (registry order)."""
    families = set(families_for(names))
    return [spec for spec in all_tools() if spec.family in families]
