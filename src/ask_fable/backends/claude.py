"""Fable and Opus 5 as oracles: the Agent SDK first, the ``claude -p`` bridge as the fallback.

Tokens: ``fable`` (newest-first ladder ``claude-fable-5-1`` → ``claude-fable-5``, or the exact id in
``ASK_FABLE_FABLE_MODEL``, which never falls back), ``fable51`` (``claude-fable-5-1`` only) and
``opus`` (``ASK_FABLE_OPUS_MODEL``, default ``claude-opus-5``). A single call's whole ladder runs
within ``request.timeout``; conversations keep a warm process in :mod:`.claude_sessions`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.backends.claude_common import (
    CLAUDE_REPLY_TOKENS,
    ModelPlan,
    model_plan,
    run_ladder,
    unavailable_models,
)
from ask_fable.backends.claude_sessions import ClaudeSessions
from ask_fable.errors import OracleTimeout

if TYPE_CHECKING:
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

__all__ = ["ClaudeOracle", "ClaudeSessions", "make_claude_oracle"]


class ClaudeOracle(Oracle):
    """A Claude model reached through Claude Code (Agent SDK, or the CLI bridge)."""

    provider = "anthropic"
    family = "anthropic"

    def __init__(self, settings: Settings, token: str, *, resources: Resources | None = None) -> None:
        from ask_fable.backends.resources import Resources

        self.settings = settings
        #: The App's gates and chosen CLI (standalone when built outside an App).
        self.resources = resources or Resources.standalone()
        self.plan: ModelPlan = model_plan(settings, token, unavailable_models(self.resources))
        self.token = self.plan.token
        self.model = self.plan.first

    def ensure_available(self) -> None:
        """Raise ``BinaryMissing`` when no Claude Code CLI exists (a file check; nothing is started)."""
        from ask_fable.backends.claude_sdk import cli_exists

        cli_exists(self.settings)

    def reply_tokens(self, request: OracleRequest) -> int:
        """Claude Code's own room for the answer."""
        return CLAUDE_REPLY_TOKENS

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Answer one prompt, walking the model ladder within ``request.timeout``."""
        deadline = time.monotonic() + request.timeout
        try:
            with anyio.fail_after(request.timeout):
                return await run_ladder(
                    self.plan, lambda model: self._ask_model(model, request, sink, deadline), sink,
                    unavailable_models(self.resources),
                )
        except TimeoutError as exc:
            raise OracleTimeout(f"{self.model} did not answer within {request.timeout:g}s") from exc

    async def _ask_model(self, model: str, request: OracleRequest, sink: EventSink, deadline: float) -> Reply:
        from ask_fable.backends.claude_cli import cli_ask
        from ask_fable.backends.claude_sdk import SdkStartError, sdk_ask

        if not self.settings.use_cli:
            try:
                return await sdk_ask(self.settings, model, request, sink, self.resources)
            except SdkStartError as exc:
                first_line = exc.detail.splitlines()[0]
                await sink.note(f"Agent SDK could not start ({first_line}); using the claude CLI")
        # A little past our own deadline, so the enclosing fail_after reports the timeout.
        remaining = max(deadline - time.monotonic(), 0.01) + 1.0
        return await cli_ask(self.settings, model, request, resources=self.resources, timeout=remaining)


def make_claude_oracle(settings: Settings, token: str, *, resources: Resources | None = None) -> ClaudeOracle:
    """The oracle behind ``fable``, ``fable51`` or ``opus`` (aliases ``opus5``, ``opus-5``)."""
    return ClaudeOracle(settings, token, resources=resources)
