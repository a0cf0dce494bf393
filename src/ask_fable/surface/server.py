"""The MCP server: serves the registry's tools over stdio or Streamable HTTP.

Tool listing and calling go through the registry rather than per-function introspection, so
each tool's input schema, output schema and annotations come from its one declaration, and
every failure — unknown tool, wrong argument types, a bug — comes back as a structured result.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, ValidationError

from ask_fable import __version__
from ask_fable.core.app import App
from ask_fable.errors import AskFableError, BadArgs
from ask_fable.surface.registry import ToolSpec, all_tools, input_schema, output_schema
from ask_fable.surface.toolsets import families_for

if TYPE_CHECKING:  # loaded with the first call, so the server answers initialize sooner
    from ask_fable.contract import ToolResult

INSTRUCTIONS = """\
ask-fable is a second opinion for the hard 5% of engineering work. Answer trivial things yourself.
- Stuck on the same bug twice, or facing a real design trade-off: call `ask` (Claude Fable,
  multi-turn; reuse `session` for follow-ups) with the real code and the exact error.
- Contentious or hard-to-reverse decision (architecture, concurrency, data model, public API,
  migration): one `ask_council` call (parallel panel + synthesis; check `quorum` and `consensus`).
  Ordered refinement (cheap draft, strong finish): `ask_chain`. Stress-test one decision: `ask_debate`.
- Big context you will reuse: `context_write` it once (the `context` toolset), then pass
  `context_ref` instead of pasting it again.
- Act on `sidecar.recommendation`. If a `followup` arrives, paste what it names (check
  `likely_already_pasted`) and re-ask on the same session.
- A `refused` result carries `how_to_reframe`; errors carry `kind` and `detail`.
- `ask_fable_help` explains every tool, model token and setting at no cost.
"""


def _client_name(mcp_ctx: Context[Any, Any] | None) -> str | None:
    try:
        params = mcp_ctx.request_context.session.client_params  # type: ignore[union-attr]
        return params.client_info.name if params is not None else None
    except Exception:
        return None


def _result(spec: ToolSpec | None, payload: dict[str, Any]) -> CallToolResult:
    """The structured result plus the same JSON as text; ``isError`` mirrors ``status: error``."""
    if spec is not None:
        if payload.get("status") == "error":
            # An error keeps its contract fields; context an error carried for logs is not the caller's.
            payload = {k: v for k, v in payload.items() if k in spec.result.model_fields}
        try:
            model = spec.result.model_validate(payload)
            payload = dump_result(model)
        except ValidationError as exc:
            fields = sorted({".".join(str(p) for p in err["loc"]) for err in exc.errors()})
            payload = {
                "status": "error",
                "kind": "internal",
                "detail": f"{spec.name} produced a result outside its schema ({', '.join(fields)})",
                "trace_id": payload.get("trace_id"),
            }
            payload = {k: v for k, v in payload.items() if v is not None}
    text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=payload.get("status") == "error",
    )


def dump_result(model: ToolResult) -> dict[str, Any]:
    """The wire form of a result: ``None`` fields dropped unless the contract gives null a meaning."""
    return model.wire()


def _bad_args_detail(spec: ToolSpec, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:6]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    return f"{spec.name} got invalid arguments — " + "; ".join(problems)


class AskFableServer(MCPServer[Any]):
    """An MCPServer whose tools come from the registry."""

    def __init__(self, app: App, families: list[str], **kwargs: Any) -> None:
        @asynccontextmanager
        async def lifespan(_: MCPServer[Any]) -> AsyncIterator[App]:
            try:
                yield app
            finally:
                await app.aclose()

        super().__init__(
            name="ask_fable",
            title="ask-fable",
            version=__version__,
            instructions=INSTRUCTIONS,
            lifespan=lifespan,
            # stderr carries our own progress trace; library request logs would only bury it.
            log_level="WARNING",
            **kwargs,
        )
        self.app = app
        self.families = families
        self._specs: dict[str, ToolSpec] | None = None
        self._listing: list[MCPTool] | None = None

    @property
    def specs(self) -> dict[str, ToolSpec]:
        """The served tools by name, loaded on first use so start-up stays fast."""
        if self._specs is None:
            self._specs = {spec.name: spec for spec in all_tools() if spec.family in self.families}
        return self._specs

    @staticmethod
    def _mcp_tool(spec: ToolSpec) -> MCPTool:
        return MCPTool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=input_schema(spec),
            output_schema=output_schema(spec),
            annotations=ToolAnnotations(
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=spec.open_world,
            ),
        )

    async def list_tools(self) -> list[MCPTool]:
        """The served tools, straight from the registry (schemas built once, on the first listing)."""
        if self._listing is None:
            self._listing = [self._mcp_tool(spec) for spec in self.specs.values()]
        return list(self._listing)

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self.specs.get(name)
        return None if spec is None else input_schema(spec)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        """Validate arguments against the tool's model, run its handler, return a structured result."""
        spec = self.specs.get(name)
        if spec is None:
            return _result(
                None,
                {
                    "status": "error",
                    "kind": "unknown_tool",
                    "detail": f"no tool named {name!r}; this server serves: {', '.join(self.specs)}",
                },
            )
        try:
            args = spec.args.model_validate(arguments or {})
        except ValidationError as exc:
            return _result(spec, BadArgs(_bad_args_detail(spec, exc)).to_result())
        if self.app.client_name is None:
            self.app.client_name = _client_name(context)

        from ask_fable.surface.context import ToolContext

        ctx = ToolContext(self.app, context)
        try:
            outcome = await spec.handler(args, ctx)
        except AskFableError as exc:
            outcome = exc.to_result()
        except Exception as exc:  # a bug must not become a stack trace for the caller
            import sys
            import traceback

            from ask_fable.stores.redact import redact

            print(redact(traceback.format_exc(), self.app.settings), file=sys.stderr, flush=True)
            outcome = {
                "status": "error",
                "kind": "internal",
                "detail": f"{spec.name} failed with an internal error ({type(exc).__name__}).",
            }
        payload = (
            outcome.model_dump(mode="json", exclude_unset=True) if isinstance(outcome, BaseModel) else outcome
        )
        return _result(spec, payload)


def build_server(app: App | None = None, toolsets: list[str] | None = None, **kwargs: Any) -> AskFableServer:
    """A server for ``toolsets`` (default: settings.toolsets) sharing ``app``'s services."""
    app = app or App()
    families = families_for(toolsets if toolsets is not None else app.settings.toolsets)
    return AskFableServer(app, families, **kwargs)
