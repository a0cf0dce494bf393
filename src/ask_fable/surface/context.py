"""What a tool handler receives besides its arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from ask_fable.access import LOCAL_TENANT, Caller, store_tenant
from ask_fable.config_sources import SettingProblem
from ask_fable.contract import AnswerResult
from ask_fable.core.app import App
from ask_fable.core.modes.base import ModeContext, ModeOutcome
from ask_fable.core.pipeline import Call, ModeRunner, Pipeline
from ask_fable.core.quotas import key_quota
from ask_fable.surface.http_common import request_key

if TYPE_CHECKING:
    from mcp.server.elicitation import ElicitationResult
    from mcp.server.mcpserver import Context

    from ask_fable.config import Settings
    from ask_fable.stores.records import ApiKey

_Form = TypeVar("_Form", bound=BaseModel)

#: The client name the ``ask-fable`` tool commands introduce themselves with.
COMMAND_LINE_CLIENT = "ask-fable"


@dataclass
class ToolContext:
    """The shared services plus this request's MCP context (None when called outside MCP)."""

    app: App
    mcp: Context[Any, Any] | None = None
    #: The tool families this server serves (None: outside a server, where every tool counts).
    served: list[str] | None = None
    #: Problems with the toolsets setting the server fell back from.
    serving_problems: list[SettingProblem] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        """Current settings."""
        return self.app.settings

    @property
    def on_command_line(self) -> bool:
        """Whether an ``ask-fable`` command is calling (a process of its own: a fix is to run it again,
        not to restart a server)."""
        return self.app.client_name == COMMAND_LINE_CLIENT

    async def progress(self, done: float, total: float | None, message: str) -> None:
        """Send an MCP progress notification when the client asked for progress."""
        if self.mcp is None:
            return
        try:
            await self.mcp.report_progress(done, total, message)
        except Exception:  # a client that went away must not fail the call
            return

    @cached_property
    def api_key(self) -> ApiKey | None:
        """The HTTP API key record this request authenticated with (None over stdio); a request keeps
        the one it was admitted with, so it is looked up once."""
        try:
            request = self.mcp.request_context.request  # type: ignore[union-attr]
        except Exception:
            return None
        return request_key(request)

    @property
    def caller(self) -> Caller:
        """Who is calling: the HTTP key's tenant and scope, or the local operator (tenant ``local``,
        admin scope) over stdio and on the command line."""
        key = self.api_key
        if key is None:
            return Caller()
        return Caller(tenant=key.tenant, scope=key.scope, key_name=key.name)

    @property
    def tenant(self) -> str:
        """The caller's tenant: every item it stores belongs to it."""
        return self.caller.tenant

    @property
    def context_tenant(self) -> str:
        """Whose context entries this caller uses: its tenant's, or the team-wide bus when shared."""
        return store_tenant(self.tenant, self.settings.shared_context)

    def session_space(self, namespace: str) -> str:
        """The tenant's part of a conversation namespace: two tenants using one session label never
        share a conversation (the local tenant keeps the bare namespace)."""
        tenant = self.tenant
        return namespace if tenant == LOCAL_TENANT else f"{namespace}@{tenant}"

    async def run(self, call: Call, runner: ModeRunner) -> AnswerResult:
        """Run ``call`` through the pipeline, as this caller's tenant and against its key's quota, with
        this request's progress reporting."""
        caller = self.caller
        call.tenant = caller.tenant
        call.agent_id = call.agent_id or caller.agent_id
        # The quota and the pipeline read the same settings (the pipeline holds what is held here).
        with self.app.holding_settings() as settings:
            call.quota = key_quota(self.api_key, caller.tenant, settings)
            return await Pipeline(self.app).run(call, runner, progress=self.progress)

    async def elicit(self, message: str, schema: type[_Form]) -> ElicitationResult[_Form] | None:
        """Ask the user through MCP form elicitation; None when the client cannot."""
        if self.mcp is None:
            return None
        caps = getattr(self.mcp, "client_capabilities", None)
        if caps is None or getattr(caps, "elicitation", None) is None:
            return None
        try:
            return await self.mcp.elicit(message=message, schema=schema)
        except Exception:
            return None


__all__ = ["Call", "ModeContext", "ModeOutcome", "ToolContext"]
