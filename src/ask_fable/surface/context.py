"""What a tool handler receives besides its arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ask_fable.config_sources import SettingProblem
from ask_fable.core.app import App
from ask_fable.core.modes.base import ModeContext, ModeOutcome
from ask_fable.core.pipeline import Call, ModeRunner, Pipeline


@dataclass
class ToolContext:
    """The shared services plus this request's MCP context (None when called outside MCP)."""

    app: App
    mcp: Any | None = None
    #: The tool families this server serves (None: outside a server, where every tool counts).
    served: list[str] | None = None
    #: Problems with the toolsets setting the server fell back from.
    serving_problems: list[SettingProblem] = field(default_factory=list)

    @property
    def settings(self) -> Any:
        """Current settings."""
        return self.app.settings

    async def progress(self, done: float, total: float | None, message: str) -> None:
        """Send an MCP progress notification when the client asked for progress."""
        if self.mcp is None:
            return
        try:
            await self.mcp.report_progress(done, total, message)
        except Exception:  # a client that went away must not fail the call
            return

    @property
    def api_key(self) -> Any | None:
        """The HTTP API key record this request authenticated with (None over stdio)."""
        try:
            request = self.mcp.request_context.request  # type: ignore[union-attr]
        except Exception:
            return None
        scope = getattr(request, "scope", None)
        return scope.get("ask_fable.api_key") if isinstance(scope, dict) else None

    @property
    def tenant(self) -> str:
        """Whose stored items a call reads and writes: the API key's tenant over HTTP, else ``local``."""
        return str(getattr(self.api_key, "tenant", None) or "local")

    def caller_scoped(self, label: str) -> str:
        """``label`` made private to this caller: HTTP keys never share conversations."""
        key = self.api_key
        return f"key{key.id}:{label}" if key is not None else label

    async def run(self, call: Call, runner: ModeRunner) -> dict[str, Any]:
        """Run ``call`` through the pipeline with this request's progress reporting."""
        key = self.api_key
        if call.agent_id is None and key is not None:
            call.agent_id = f"key:{key.name}"
        return await Pipeline(self.app).run(call, runner, progress=self.progress)

    async def elicit(self, message: str, schema: type) -> Any | None:
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
