"""One table of tools: each declared once with its family, schemas, annotations and handler.

The MCP server, the human CLI, the docs inventory and the drift tests all read this table.
Tool modules under :mod:`ask_fable.surface.tools` each export ``TOOLS: list[ToolSpec]``; they
import nothing heavy at module level, so building the table is cheap.
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from ask_fable.access import Effect, Scope, required_scope

if TYPE_CHECKING:  # the contract's models load with the tool modules, not at server start
    from ask_fable.config import Settings
    from ask_fable.contract import ToolResult

#: Tool families, in the order they are listed. Toolsets are built from them.
FAMILIES: dict[str, str] = {
    "core": "the four reasoning modes with Fable, plus help",
    "single": "one named model (see family_about for the backends that have one)",
    "councils": "provider-only councils (Ollama, Atlas, OpenRouter)",
    "catalogs": "model catalogs and persisted council / tracing choices",
    "context": "the shared context bus",
    "observability": "traces, stats and backend diagnosis",
    "hub": "the cross-instance session hub",
}

#: A tool's handler: ``(validated args model, ToolContext) -> result``.
Handler = Callable[[Any, Any], Awaitable["ToolResult"]]

TOOL_MODULES: tuple[str, ...] = (
    "ask_fable.surface.tools.help",
    "ask_fable.surface.tools.claude_tools",
    "ask_fable.surface.tools.modes",
    "ask_fable.surface.tools.http_models",
    "ask_fable.surface.tools.context",
    "ask_fable.surface.tools.observability",
    "ask_fable.surface.tools.quotas",
    "ask_fable.surface.tools.hub",
    "ask_fable.surface.tools.diagnose",
    # Last: a backend's tool (a plugin's) never displaces a tool declared above.
    "ask_fable.surface.tools.backend_tools",
)


@dataclass(frozen=True)
class ToolSpec:
    """A tool's whole declaration.

    ``handler(args, ctx)`` receives the validated ``args`` model and a
    :class:`ask_fable.surface.context.ToolContext`; it returns its ``result`` model (or raises an
    :class:`~ask_fable.errors.AskFableError`). A tool that asks one ``backend`` may name that
    backend's facts in its ``description`` (``{label}``, ``{model}``, ``{binary}``, ``{login_fix}``,
    ``{key_vars}``, ``{enable}``); :meth:`describe` fills them in from the current settings.

    ``effects`` says what the tool can do (:class:`~ask_fable.access.Effect`); the scope an HTTP key
    needs to call it and the MCP annotations ``readOnlyHint`` and ``openWorldHint`` are derived from
    it. ``destructive`` (it may delete or replace data) and ``idempotent`` (repeating it changes
    nothing more) describe how a writing tool writes.
    """

    name: str
    family: str
    description: str
    args: type[BaseModel]
    result: type[ToolResult]
    handler: Handler
    effects: frozenset[Effect]
    destructive: bool = False
    idempotent: bool = False
    title: str | None = None
    backend: str | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"tool {self.name!r} has unknown family {self.family!r}")
        if not self.effects:
            raise ValueError(f"tool {self.name!r} declares no effects")
        if self.destructive and self.read_only:
            raise ValueError(f"tool {self.name!r} is destructive but declares no write")

    @property
    def scope(self) -> Scope:
        """The weakest key scope allowed to call this tool."""
        return required_scope(self.effects)

    @property
    def read_only(self) -> bool:
        """True when the tool changes no stored data and no setting (it may still spend)."""
        return not self.effects & {Effect.WRITE, Effect.ADMINISTER}

    @property
    def open_world(self) -> bool:
        """True when the tool reaches beyond this server: a model, a CLI or a provider's catalog."""
        return Effect.SPEND in self.effects

    def describe(self, settings: Settings | None = None) -> str:
        """The description as served: the backend's facts filled in from ``settings`` (loaded when
        not given), so a changed model setting shows."""
        if self.backend is None:
            return self.description
        from ask_fable.backends.registry import get_backend
        from ask_fable.config import load_settings

        return self.description.format(**get_backend(self.backend).facts(settings or load_settings()))


def family_about(family: str) -> str:
    """What a tool family holds, in a few words; the ``single`` family names the backends whose
    one-model tools it holds, read from the registry (a plugin's included)."""
    if family != "single":
        return FAMILIES[family]
    served = {spec.backend for spec in all_tools() if spec.family == "single" and spec.backend}
    from ask_fable.backends.registry import registered

    return "one named model: " + ", ".join(b.label for b in registered() if b.name in served)


def all_tools() -> list[ToolSpec]:
    """Every declared tool, in family order then declaration order."""
    return list(_declared_tools())


@functools.cache
def _declared_tools() -> tuple[ToolSpec, ...]:
    # The declarations are module constants: collected once, on first use.
    specs: list[ToolSpec] = []
    for module_name in TOOL_MODULES:
        specs.extend(importlib.import_module(module_name).TOOLS)
    order = list(FAMILIES)
    names: set[str] = set()
    kept: list[ToolSpec] = []
    for spec in specs:
        if spec.name in names and spec.backend is not None and spec.family == "single":
            from ask_fable.backends.registry import report_problem

            report_problem(spec.backend, f"its tool {spec.name!r} has the name of another tool; not served")
            continue
        if spec.name in names:
            raise ValueError(f"tool {spec.name!r} is declared twice")
        names.add(spec.name)
        kept.append(spec)
    return tuple(sorted(kept, key=lambda s: order.index(s.family)))


_SIMPLE_KEYS = {"type", "items", "enum"}


def _merge_simple_any_of(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf`` of plain-typed arms (string, array of strings, null…) becomes one ``type`` list."""
    arms = node.get("anyOf")
    if not isinstance(arms, list) or not all(isinstance(a, dict) and set(a) <= _SIMPLE_KEYS for a in arms):
        return node
    types: list[str] = []
    merged: dict[str, Any] = {}
    for arm in arms:
        kind = arm.get("type")
        if not isinstance(kind, str) or kind in types or ("items" in arm and "items" in merged):
            return node
        if "enum" in arm:
            if "enum" in merged:
                return node
            merged["enum"] = list(arm["enum"])
        if "items" in arm:
            merged["items"] = arm["items"]
        types.append(kind)
    if "enum" in merged and "null" in types:
        merged["enum"].append(None)
    out = {k: v for k, v in node.items() if k != "anyOf"}
    return {**merged, "type": types if len(types) > 1 else types[0], **out}


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop titles and null defaults, merge simple ``anyOf`` arms: same meaning, fewer bytes."""

    def walk(node: Any, *, in_properties: bool = False) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if in_properties:
            return {key: walk(value) for key, value in node.items()}
        out = {
            key: walk(value, in_properties=key in ("properties", "$defs"))
            for key, value in node.items()
            if key != "title" and not (key == "default" and value is None)
        }
        return _merge_simple_any_of(out)

    # A JSON object walks to a JSON object.
    return cast(dict[str, Any], walk(schema))


def _lean_type(prop: dict[str, Any], nullable: bool) -> dict[str, Any]:
    """One property of a lean output schema: its JSON type(s) and small enums, nothing nested."""
    arms = prop.get("anyOf", [prop])
    types: list[str] = []
    enum: list[Any] | None = None
    for arm in arms:
        kind = "object" if "$ref" in arm else arm.get("type", "object")
        for k in kind if isinstance(kind, list) else [kind]:
            if k == "null" and not nullable:
                continue
            if k not in types:
                types.append(k)
        if "enum" in arm and len(arms) <= 2:
            enum = [v for v in arm["enum"] if v is not None or nullable]
    lean: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
    if enum is not None and len(enum) <= 6:
        lean["enum"] = [*enum, None] if nullable and None not in enum else enum
    return lean


def lean_output_schema(model: type[ToolResult]) -> dict[str, Any]:
    """The top level of a result model: each field's type, nested shapes left to the server.

    Tool results are validated in full on the server (pydantic, unknown fields forbidden);
    the published schema stays small because every listed tool costs the client context, so the
    model's ``UNLISTED_FIELDS`` (occasional diagnostics) are left out of it.
    """
    return copy.deepcopy(_lean_output_schema(model))


@functools.cache
def _lean_output_schema(model: type[ToolResult]) -> dict[str, Any]:
    # Many tools share a result model, and its full JSON schema is costly to generate: once each.
    full = model.model_json_schema()
    properties = {
        name: _lean_type(prop, name in model.NULLABLE_FIELDS)
        for name, prop in full.get("properties", {}).items()
        if name not in model.UNLISTED_FIELDS
    }
    return {"type": "object", "properties": properties, "required": full.get("required", ["status"])}


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON schema of a tool's arguments (the model's docstring is not repeated: the tool has one)."""
    schema = compact_schema(spec.args.model_json_schema())
    schema.pop("description", None)
    return schema


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON schema of a tool's structured result."""
    return lean_output_schema(spec.result)
