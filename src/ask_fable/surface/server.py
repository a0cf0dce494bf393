"""The MCP server: serves the registry's tools over stdio or Streamable HTTP.

Tool listing and calling go through the registry rather than per-function introspection, so
each tool's input schema, output schema and annotations come from its one declaration, and
every failure — unknown tool, wrong argument types, a bug — comes back as a structured result.

Every result carries a ``trace_id``: reasoning tools get theirs from the pipeline; for every
other result (help, data tools, bad arguments, unknown tools) the server records a minimal
trace (tool, status, kind; no content). Settings problems reach the user at start (a line per
problem on stderr, a section of the instructions) and in the ``warnings`` of each call that
read an affected setting.

Every result passes through redaction on its way out, so no echo of the caller's input (a key
name, a session label, a filter) returns a secret verbatim; a read-scoped HTTP key also gets the
server's file paths relative to its directories (``surface/server_paths.py``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, JsonValue, ValidationError

from ask_fable import __version__
from ask_fable.access import FETCHES, SCOPES, scope_allows
from ask_fable.access import Scope as KeyScope
from ask_fable.config import problem_lines, tracking_reads
from ask_fable.config_sources import SettingProblem
from ask_fable.core.app import App
from ask_fable.core.tracing import TraceRecorder
from ask_fable.errors import AskFableError, BadArgs, ErrorResult
from ask_fable.redact import redact, redact_obj_dumped
from ask_fable.stores.trace_ids import new_trace_id
from ask_fable.surface.http_common import request_key
from ask_fable.surface.registry import ToolSpec, all_tools, input_schema, output_schema
from ask_fable.surface.toolsets import configured_families, families_for, how_to_enable

if TYPE_CHECKING:  # loaded with the first call, so the server answers initialize sooner
    from ask_fable.access import Caller
    from ask_fable.config import Settings
    from ask_fable.contract import ServerErrorResult, ToolResult
    from ask_fable.surface.context import ToolContext

@dataclass(frozen=True)
class Advice:
    """One point of the standing instructions, shown only to a caller it applies to."""

    text: str
    #: The toolset of the tools it names (``None``: it names none).
    family: str | None = None
    #: The tools it names: shown only to a key whose scope may call every one of them.
    tools: tuple[str, ...] = ()
    #: The weakest key scope it is of use to (advice on answers needs a key that may ask).
    scope: KeyScope = "read"
    #: Shown where its toolset is not served too: its text names the toolset that brings it.
    offered: bool = False


GUIDANCE: tuple[Advice, ...] = (
    Advice("ask-fable is a second opinion for the hard 5% of engineering work."),
    Advice("Answer trivial things yourself.", scope="ask"),
    Advice("- Stuck on the same bug twice, or facing a real design trade-off: call `ask` (Claude Fable, or\n"
           "  one other model with `model`; reuse `session` for follow-ups) with the real code and the "
           "exact error.", "core", ("ask",)),
    Advice("- Contentious or hard-to-reverse decision (architecture, concurrency, data model, public API,\n"
           "  migration): one `ask_council` call (parallel panel + synthesis; check `quorum` and "
           "`consensus`).", "core", ("ask_council",)),
    Advice("- Ordered refinement (cheap draft, strong finish): `ask_chain`. Stress-test one decision: "
           "`ask_debate`.", "core", ("ask_chain", "ask_debate")),
    Advice("- Big context you will reuse: `context_write` it once (the `context` toolset), then pass\n"
           "  `context_ref` instead of pasting it again.", "context", ("context_write",), offered=True),
    Advice("- Act on `sidecar.recommendation`. If a `followup` arrives, paste what it names (check\n"
           "  `likely_already_pasted`) and re-ask on the same session.", scope="ask"),
    Advice("- A `refused` result carries `how_to_reframe`.", scope="ask"),
    Advice("- Errors carry `kind` and `detail`, and a `hint` when there is a fix."),
    Advice("- `ask_fable_help` explains every tool, model token and setting at no cost.", "core",
           ("ask_fable_help",)),
)


def guidance_text(families: Collection[str] | None = None, scope_of: Callable[[str], KeyScope] | None = None,
                  held: KeyScope | None = None) -> str:
    """The standing instructions for a server serving ``families`` (all when ``None``) and a caller
    holding a key of scope ``held`` (``None``: no key, everything served may be called), where
    ``scope_of`` gives the scope a tool needs."""
    lines: list[str] = []
    for advice in GUIDANCE:
        if advice.family is not None and families is not None and advice.family not in families \
                and not advice.offered:
            continue
        if held is not None and scope_of is not None and not (scope_allows(held, advice.scope) and all(
                scope_allows(held, scope_of(tool)) for tool in advice.tools)):
            continue
        if lines and not advice.text.startswith("-"):
            lines[-1] += " " + advice.text
        else:
            lines.append(advice.text)
    return "\n".join(lines) + "\n"


#: The standing instructions of a server serving every tool to a caller without a key.
INSTRUCTIONS = guidance_text()
#: The requests whose result depends on the caller's key.
_KEYED_METHODS = frozenset({"initialize", "server/discover", "tools/list"})


def key_scope_line(held: KeyScope, served: dict[str, KeyScope]) -> str | None:
    """What a key of scope ``held`` may call of the ``served`` tools (name → scope needed), when its
    scope leaves some out, and the scope that brings the rest; ``None`` when it may call them all."""
    allowed = [name for name, needed in served.items() if scope_allows(held, needed)]
    if len(allowed) == len(served):
        return None
    missing = [needed for needed in served.values() if not scope_allows(held, needed)]
    nearest = min(missing, key=SCOPES.index)
    left_out = [name for name in served if name not in allowed]
    named = f"you may call {', '.join(allowed)}" if len(allowed) <= len(left_out) \
        else f"it leaves out {', '.join(left_out)}"
    return (f"- Your key's scope ({held}) lets you call {len(allowed)} of the {len(served)} tools served "
            f"here: {named}. The others need a key made with `ask-fable keys create --scope {nearest}`.")


#: How many settings problems the instructions list before pointing at ``ask-fable doctor``.
_INSTRUCTED_PROBLEMS = 4
#: Garbage collection thresholds of a process serving calls (Python's defaults: 700, 10, 10): the
#: young generation is collected every 50,000 allocations instead of every 700. Only reference
#: cycles wait for a collection (anything else is freed with its last reference), so they are
#: found later; under the HTTP benchmark's load the server's peak memory stayed at 101 MB.
SERVING_GC_THRESHOLDS = (50_000, 10, 10)


def instructions_for(problems: Sequence[SettingProblem], guidance: str = INSTRUCTIONS) -> str:
    """The standing instructions (``guidance``), plus the settings problems this server started with."""
    if not problems:
        return guidance
    lines = [f"- {p.message()[:300]}" for p in problems[:_INSTRUCTED_PROBLEMS]]
    if len(problems) > _INSTRUCTED_PROBLEMS:
        lines.append(f"- … {len(problems) - _INSTRUCTED_PROBLEMS} more: run `ask-fable doctor`")
    heading = "Settings problems (each falls back as stated; tell the user):"
    return "\n".join([guidance + heading, *lines]) + "\n"


def _client_name(mcp_ctx: Context[Any, Any] | None) -> str | None:
    try:
        params = mcp_ctx.request_context.session.client_params  # type: ignore[union-attr]
        return params.client_info.name if params is not None else None
    except Exception:
        return None


def _result(payload: dict[str, JsonValue], text: str | None = None) -> CallToolResult:
    """The wire form of a result as structured content plus the same JSON as text (``text``, when
    the caller has dumped it already); ``isError`` mirrors ``status: error``."""
    if text is None:
        text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=payload.get("status") == "error",
    )


def _as_result(spec: ToolSpec, outcome: BaseModel | ErrorResult) -> ToolResult | ServerErrorResult:
    """A handler's ``outcome`` as ``spec``'s result model: a model of it as it is, another model or an
    error's ``to_result()`` (errors sit below the contract) validated against it, an error keeping only
    its contract fields (context an error carried for logs is not the caller's); a result outside the
    schema becomes an ``internal`` error."""
    from ask_fable.contract import ServerErrorResult

    if isinstance(outcome, spec.result):
        return outcome
    payload: Mapping[str, object] = (
        outcome.model_dump(mode="json", exclude_unset=True) if isinstance(outcome, BaseModel) else outcome)
    if payload.get("status") == "error":
        payload = {k: v for k, v in payload.items() if k in spec.result.model_fields}
    try:
        return spec.result.model_validate(payload)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in err["loc"]) for err in exc.errors()})
        trace_id = payload.get("trace_id")
        return ServerErrorResult(
            kind="internal", detail=f"{spec.name} produced a result outside its schema ({', '.join(fields)})",
            trace_id=trace_id if isinstance(trace_id, str) else None,
        )


def _with_problems(result: ToolResult | ServerErrorResult, problems: Sequence[SettingProblem]
                   ) -> ToolResult | ServerErrorResult:
    """``result`` (a copy, when anything is added) warning of the settings ``problems`` the call read,
    its ``detail`` naming those that may have caused its failure."""
    update: dict[str, object] = {}
    warnings = list(dict.fromkeys([*(result.warnings or ()), *(p.message() for p in problems)]))
    if warnings != (result.warnings or []):
        update["warnings"] = warnings
    causes = [p for p in problems if _may_explain(p, result.kind)]
    if causes and result.status == "error" and isinstance(result.detail, str):
        # A failure that may be the bad setting's doing names it in its detail (once, beside
        # ``warnings``); an unrelated one (a login failure next to a bad timeout) does not.
        named = "; ".join(p.message() for p in causes)
        update["detail"] = f"{result.detail} (settings problem: {named})"
    return result.model_copy(update=update) if update else result


def _bad_args_detail(spec: ToolSpec, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:6]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    return f"{spec.name} got invalid arguments — " + "; ".join(problems)


#: Words in the name of a setting that only tunes time: it can explain a timeout, never a missing setup.
_TIMING_WORDS = ("timeout", "straggler", "deadline", "retry", "retries")


def _may_explain(problem: SettingProblem, kind: object) -> bool:
    """Whether a failure of ``kind`` may be ``problem``'s doing: a timeout a timing setting's, a
    missing setup (``not_configured``, ``binary_missing``) any other setting's, or a config file's
    or an unknown key's (``concerns`` None), which may hold the missing value."""
    setting = problem.concerns
    timing = setting is not None and any(word in setting for word in _TIMING_WORDS)
    if kind == "timeout":
        return timing
    if kind in ("not_configured", "binary_missing"):
        return not timing
    return False

class AskFableServer(MCPServer[Any]):
    """An MCPServer whose tools come from the registry."""

    def __init__(
        self, app: App, families: list[str], *, problems: Sequence[SettingProblem] = (), remote: bool = False,
        settle_heap: bool = False, **kwargs: Any
    ) -> None:
        @asynccontextmanager
        async def lifespan(_: MCPServer[Any]) -> AsyncIterator[App]:
            # Wherever calls are served (stdio, HTTP, the command line's in-process server), the
            # leases of the ones in flight are renewed while this server lives.
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(app.quota_batcher.keep_alive)
                    try:
                        yield app
                    finally:
                        group.cancel_scope.cancel()
            finally:
                await app.aclose()

        #: Problems found while choosing what to serve (a bad toolsets setting).
        self.serving_problems = list(problems)
        self.app = app
        self.families = families
        self._remote = remote
        #: The standing instructions by the caller's key scope (``None``: no key), built when first read.
        self._instructions: dict[KeyScope | None, str] = {}
        super().__init__(
            name="ask_fable",
            title="ask-fable",
            version=__version__,
            instructions=self.instructions_for_key(None),
            lifespan=lifespan,
            # stderr carries our own progress trace; library request logs would only bury it.
            log_level="WARNING",
            # The SDK's public per-request hook (documented as provisional for 2.x): tests/e2e/
            # test_key_scopes.py fails if a key stops seeing its own instructions and tool list.
            middleware=[self._key_view],
            **kwargs,
        )
        self._specs: dict[str, ToolSpec] | None = None
        self._listing: list[MCPTool] | None = None
        self._listed_for: object = None
        #: The ``tools/list`` answer a key of each scope got, by protocol version, with the settings it
        #: was made under (see :meth:`_key_view`).
        self._key_listings: dict[tuple[str, KeyScope], tuple[Settings, HandlerResult]] = {}
        #: The server's directories a result may name, for the settings they were found in.
        self._roots: tuple[Settings, list[tuple[str, str]]] | None = None
        #: Tools whose first call has settled the heap (see :meth:`_settle_heap`); ``None``: never.
        self._settled: set[str] | None = set() if settle_heap else None

    @property
    def specs(self) -> dict[str, ToolSpec]:
        """The served tools by name, loaded on first use so start-up stays fast."""
        if self._specs is None:
            self._specs = {spec.name: spec for spec in all_tools() if spec.family in self.families}
        return self._specs

    @staticmethod
    def _mcp_tool(spec: ToolSpec, settings: Settings) -> MCPTool:
        return MCPTool(
            name=spec.name,
            title=spec.title,
            description=spec.describe(settings),
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
        """The served tools, straight from the registry (built on the first listing, and again when
        the settings their descriptions name were reloaded)."""
        settings = self.app.settings
        if self._listing is None or self._listed_for is not settings:
            self._listing = [self._mcp_tool(spec, settings) for spec in self.specs.values()]
            self._listed_for = settings
        return list(self._listing)

    def instructions_for_key(self, scope: KeyScope | None) -> str:
        """The standing instructions for a caller whose key has ``scope`` (``None``: no key, as over
        stdio): the advice that names only tools this server serves and the key may call, what its
        scope leaves out, and the settings problems the server started with."""
        shown = self._instructions.get(scope)
        if shown is not None:
            return shown
        if scope is None:  # families only: the tools' modules wait for the first call
            guidance = guidance_text(self.families)
        else:
            scopes = {spec.name: spec.scope for spec in all_tools()}
            guidance = guidance_text(self.families, scopes.__getitem__, scope)
            line = key_scope_line(scope, {name: scopes[name] for name in self.specs})
            guidance += "" if line is None else line + "\n"
        shown = instructions_for([*self.app.settings.problems, *self.serving_problems], guidance)
        if self._remote:  # every key holder reads them: name the server's files relative to its directories
            from ask_fable.surface.server_paths import hide_server_paths, server_roots

            shown = hide_server_paths(shown, server_roots(self.app.settings))
        self._instructions[scope] = shown
        return shown

    async def _key_view(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """What an HTTP key is shown of the server: the instructions (``initialize``,
        ``server/discover``) and the tools (``tools/list``) its scope may call, each tool's scope coming
        from its declared effects. Without a key (stdio, in memory) the results pass unchanged.

        Params that do not fit their method are answered naming the fields at fault (the SDK's own
        answer says only ``Invalid request parameters``); the values are the caller's and not echoed.

        Every MCP host lists the tools when it connects, and the list is the same for every key of
        one scope until the settings change: the answer is made once per scope and protocol version
        (listing, checking and shaping it costs a few milliseconds) and given again while the
        settings are unchanged. A request with params (a cursor) always goes the whole way."""
        listed_key = request_key(ctx.request) if ctx.method == "tools/list" and not ctx.params else None
        try:
            if listed_key is not None:
                return await self._key_listing(ctx, call_next, listed_key.scope)
            result = await call_next(ctx)
        except ValidationError as exc:
            fields = sorted({".".join(str(p) for p in err["loc"]) or "params" for err in exc.errors()})
            raise MCPError(INVALID_PARAMS, f"invalid params for {ctx.method[:60]}: "
                                           f"{', '.join(fields[:8])} (see the MCP schema of the method)",
                           {"fields": fields[:8]}) from None
        if ctx.method not in _KEYED_METHODS or not isinstance(result, dict):
            return result
        key = request_key(ctx.request)
        if key is None:
            return result
        if ctx.method == "tools/list":
            self._scope_tools(result, key.scope)
        elif "instructions" in result:
            result["instructions"] = self.instructions_for_key(key.scope)
        return result

    async def _key_listing(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext,
                           scope: KeyScope) -> HandlerResult:
        """The ``tools/list`` answer for a key of ``scope``: the one made before under the current
        settings, else a new one (the tools its scope may call), kept for the next."""
        settings = self.app.settings
        slot = (ctx.protocol_version, scope)
        known = self._key_listings.get(slot)
        if known is not None and known[0] is settings:
            cached = known[1]
            # A copy of the envelope: the SDK and the transport own what they are handed.
            return dict(cached) if isinstance(cached, dict) else cached
        result = await call_next(ctx)
        if isinstance(result, dict):
            self._scope_tools(result, scope)
            self._key_listings[slot] = (settings, dict(result))
        return result

    def _scope_tools(self, listing: dict[str, Any], scope: KeyScope) -> None:
        """Keep in a ``tools/list`` answer only the tools a key of ``scope`` may call."""
        tools = listing.get("tools")
        if isinstance(tools, list):
            listing["tools"] = [tool for tool in tools if isinstance(tool, dict) and tool.get("name") in
                                self.specs and scope_allows(scope, self.specs[tool["name"]].scope)]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self.specs.get(name)
        return None if spec is None else input_schema(spec)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        """Validate arguments against the tool's model, run its handler, return a structured result.

        The result carries a ``trace_id`` and, when a setting it read could not be used as
        written, ``warnings`` naming each problem and its fallback (an error's ``detail`` names them
        too).
        """
        from ask_fable.surface.context import ToolContext

        trace = TraceRecorder(new_trace_id(), self.app.clock)
        spec = self.specs.get(name)
        ctx = ToolContext(self.app, context, served=self.families, serving_problems=self.serving_problems)
        result: ToolResult | ServerErrorResult
        with tracking_reads() as reads:
            if spec is None:
                result = self._unknown_tool(name)
            else:
                result = await self._run(spec, arguments, ctx)
        settings = self.app.settings  # as the tool left them (a configure_* tool may have changed them)
        problems = settings.problems_for(reads)
        if spec is None:
            problems += self.serving_problems
        result = _with_problems(result, problems)
        if not result.trace_id:
            result = result.model_copy(update={"trace_id": trace.trace_id})
            await self._record_trace(trace, spec.name if spec else name, result, ctx.caller)
        tool = spec.name if spec else "unknown"
        if trace.root is not None:
            _annotate_root(trace, tool, result, ctx.caller)
        metrics = self.app.metrics
        if metrics is not None:
            metrics.tool_call(tool, result.status, result.kind, self.app.clock.monotonic() - trace.started)
        if spec is not None:
            self._settle_heap(spec.name)
        return _result(*self._for_caller(result, ctx, settings))

    def _settle_heap(self, tool: str) -> None:
        """After a tool's first call, freeze what the process holds then (``gc.freeze``), and
        collect the young generation less often (:data:`SERVING_GC_THRESHOLDS`).

        A long-running server keeps what it imported and built for its whole life (modules, the
        tool table, models, compiled patterns; a tool's backend is imported on its first call).
        Left in the collected generations, every full collection walks all of it again, a large
        share of each call's CPU; frozen, collections walk only what calls create. Frozen objects
        are still freed when no longer referenced; only a cycle among them would be kept.

        What calls create is mostly freed by reference counting as each call ends; with the
        default thresholds a young collection runs every 700 allocations, while many calls are in
        flight, so it keeps walking (and promoting) the objects of calls still running.
        """
        if self._settled is None or tool in self._settled:
            return
        import gc

        self._settled.add(tool)
        gc.freeze()
        gc.set_threshold(*SERVING_GC_THRESHOLDS)

    def _for_caller(self, result: ToolResult | ServerErrorResult, ctx: ToolContext, settings: Settings
                    ) -> tuple[dict[str, JsonValue], str | None]:
        """The wire form of ``result`` as the caller may see it: secrets redacted (the one place every
        result is, whatever made it), and for an HTTP key without the admin scope, the server's paths
        relative to its directories. With it, its JSON text when the dump that showed nothing to
        redact (nearly always) is that text, else ``None``."""
        shown, dumped = redact_obj_dumped(result.wire(), settings)
        if ctx.api_key is not None and ctx.caller.scope != "admin":
            from ask_fable.surface.server_paths import hide_server_paths, names_no_root, server_roots

            if self._roots is None or self._roots[0] is not settings:
                self._roots = (settings, server_roots(settings))
            roots = self._roots[1]
            if dumped is None or not names_no_root(dumped, roots):
                shown, dumped = hide_server_paths(shown, roots), None
        return shown, dumped

    def _unknown_tool(self, name: str) -> ServerErrorResult:
        """``unknown_tool``, naming the toolset that has the tool, or the closest served names."""
        import difflib

        from ask_fable.contract import ServerErrorResult

        shown = redact(name[:80])
        family = next((spec.family for spec in all_tools() if spec.name == name), None)
        if family is not None:
            return ServerErrorResult(
                kind="unknown_tool",
                detail=f"{name} is in the {family!r} toolset, which this server does not serve "
                f"(it serves {', '.join(self.families)})",
                hint=how_to_enable(self.families, family),
            )
        close = difflib.get_close_matches(name, list(self.specs), n=3, cutoff=0.6)
        guess = f"; did you mean {', '.join(close)}?" if close else ""
        return ServerErrorResult(
            kind="unknown_tool",
            detail=f"no tool named {shown!r}{guess} This server serves: {', '.join(self.specs)}",
            hint='ask_fable_help(topic="tools") lists what is served and the toolset of every other tool',
        )

    async def _run(self, spec: ToolSpec, arguments: dict[str, Any], ctx: ToolContext
                   ) -> ToolResult | ServerErrorResult:
        """Validate ``arguments`` (the caller's JSON) against the tool's model and run its handler; its
        outcome, or the error it raised, as its result model."""
        outcome: BaseModel | ErrorResult
        try:
            args = spec.args.model_validate(arguments or {})
        except ValidationError as exc:
            return _as_result(spec, BadArgs(_bad_args_detail(spec, exc)).to_result())
        if self.app.client_name is None and not self._remote:
            # Over HTTP a caller is named by its key, and a request holds no session that names it.
            self.app.client_name = _client_name(ctx.mcp)
        try:
            if spec.effects == FETCHES:
                outcome = await self._metered(spec, args, ctx)
            else:
                outcome = await spec.handler(args, ctx)
        except AskFableError as exc:
            outcome = exc.to_result()
        except Exception as exc:  # a bug must not become a stack trace for the caller
            import traceback

            print(redact(traceback.format_exc(), self.app.settings), file=sys.stderr, flush=True)
            failure = f"{spec.name} failed with an internal error ({type(exc).__name__})."
            outcome = AskFableError(failure).to_result()
        return _as_result(spec, outcome)

    async def _metered(self, spec: ToolSpec, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Run a tool that reaches a provider or a CLI without asking a model (a catalog, a probe)
        as one of the key's calls: counted against its calls per minute and in flight, at no cost."""
        from ask_fable.core.quotas import admit, key_quota

        hold = await admit(self.app, key_quota(ctx.api_key, ctx.caller.tenant, ctx.settings), reserve=0.0)
        try:
            return await spec.handler(args, ctx)
        finally:
            if hold is not None:
                await hold.settle(0.0)

    async def _record_trace(self, trace: TraceRecorder, tool: str, result: ToolResult | ServerErrorResult,
                            caller: Caller) -> None:
        """Store a minimal trace (tool, status, kind; no content) under the caller's tenant, so
        trace_get finds the result's id."""
        app = self.app
        status, kind = result.status, result.kind
        trace.event("request", tool=tool[:80], otel_trace_id=trace.otel_trace_id)
        trace.event("response", status=status, kind=kind)
        try:
            from ask_fable.stores.records import TraceRecord

            agent = caller.agent_id or app.agent_id
            record = TraceRecord(
                trace_id=trace.trace_id, tenant=caller.tenant, ts=trace.wall_start, tool=tool[:80],
                status=status, kind=kind, project=app.project_id, agent_id=agent,
                elapsed_ms=trace.elapsed_ms(), events=trace.events,
            )
            traces = app.traces
            await app.record_writer.run(lambda: traces.record(record))
        except Exception:  # a trace is best effort: the caller still gets the result
            app.console.line(trace.trace_id, f"could not record the trace of {tool[:80]}")


def _annotate_root(trace: TraceRecorder, tool: str, result: ToolResult | ServerErrorResult, caller: Caller
                   ) -> None:
    """The call's identity and outcome on the MCP server span (spans on): our trace id, the tenant, the
    status, and an error result as the span's error status typed by its kind."""
    from opentelemetry.trace import StatusCode

    status, kind = result.status, result.kind
    trace.annotate(**{"ask_fable.trace_id": result.trace_id, "ask_fable.tool": tool,
                      "ask_fable.tenant": caller.tenant, "ask_fable.status": status})
    if status == "error" and trace.root is not None:
        error = str(kind or "error")
        trace.root.set_attribute("error.type", error)
        trace.root.set_status(StatusCode.ERROR, error)


def build_server(app: App | None = None, toolsets: list[str] | None = None, **kwargs: Any) -> AskFableServer:
    """A server for ``toolsets`` (default: settings.toolsets) sharing ``app``'s services.

    Explicit ``toolsets`` that are unknown or leave no tool raise ``BadArgs`` (an error at start);
    a bad toolsets setting falls back to ``default``. Settings problems are printed on stderr,
    one line each. ``remote=True`` (the HTTP server) keeps the server's absolute paths out of the
    standing instructions.
    """
    app = app or App()
    problems: list[SettingProblem] = []
    if toolsets is not None:
        families = families_for(toolsets)
    else:
        families, problems = configured_families(app.settings)
    for line in problem_lines([*app.settings.problems, *problems]):
        print(line, file=sys.stderr, flush=True)
    return AskFableServer(app, families, problems=problems, **kwargs)
