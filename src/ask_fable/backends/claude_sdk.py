"""The Claude Agent SDK route: options, CLI choice, a killable transport and message collection.

Every start offers the model no tools, reads no user Claude settings, allows one turn, runs in a
private directory and turns non-essential CLI traffic off. The CLI's stderr goes to a redacted
in-memory tail (stdout is the MCP channel; nothing of the CLI may reach it).

Cancellation: the SDK closes its CLI inside a shielded scope that waits up to 5 s for a graceful
exit. The transport here kills the CLI first whenever it is closed mid-turn (a deadline, a
cancelled call), so a timeout returns on time and no process is left behind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ask_fable.backends.base import EventSink, OracleRequest, Reply, Usage
from ask_fable.backends.claude_common import (
    StderrTail,
    classify_failure,
    parse_version,
    redact_text,
    sdk_env,
    with_stderr,
    workdir,
)
from ask_fable.errors import AskFableError, BinaryMissing, UpstreamError

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

    from ask_fable.config import Settings

PROVIDER = "anthropic"
_VERSION_TIMEOUT = 10.0
_cli_choice: dict[tuple[str | None, str | None], str] = {}
_cli_lock = threading.Lock()


class SdkStartError(UpstreamError):
    """The Agent SDK could not start a CLI conversation at all (the ``claude -p`` bridge may still)."""


# --- which CLI binary ----------------------------------------------------------------------------


def bundled_cli() -> Path | None:
    """The Claude Code CLI inside the installed claude-agent-sdk wheel (found without importing it)."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "_bundled" / "claude"
    return path if path.is_file() else None


def cli_version(path: str) -> tuple[int, int, int] | None:
    """Run ``<path> --version`` once and parse it; ``None`` when it fails or prints no version."""
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=_VERSION_TIMEOUT,
            stdin=subprocess.DEVNULL, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(done.stdout) or parse_version(done.stderr)


def _bundled_version(path: Path) -> tuple[int, int, int] | None:
    # The wheel records the version beside the binary; reading it spares a ~400 MB binary start.
    recorded = path.with_name("claude.version")
    with contextlib.suppress(OSError):
        found = parse_version(recorded.read_text(encoding="utf-8"))
        if found:
            return found
    return cli_version(str(path))


def _missing() -> BinaryMissing:
    return BinaryMissing(
        "no Claude Code CLI: claude-agent-sdk has no bundled one and `claude` is not on PATH "
        "(install Claude Code or set ASK_FABLE_CLAUDE_CLI)",
        binary="claude",
    )


def _pinned_cli(settings: Settings) -> str | None:
    if not settings.claude_cli:
        return None
    pinned = shutil.which(os.path.expanduser(settings.claude_cli))
    if pinned is None:
        raise BinaryMissing(
            f"ASK_FABLE_CLAUDE_CLI={settings.claude_cli} is not an executable file", binary="claude"
        )
    return pinned


def cli_exists(settings: Settings) -> None:
    """Raise :class:`BinaryMissing` unless some Claude Code CLI can run (file checks only)."""
    if _pinned_cli(settings) is None and bundled_cli() is None and shutil.which("claude") is None:
        raise _missing()


def choose_cli_path(settings: Settings) -> str:
    """The CLI to run: ``settings.claude_cli``; else the bundled one unless PATH's is strictly newer.

    The comparison runs at most once per (bundled, PATH) pair per process. Raises
    :class:`BinaryMissing` when no CLI exists.
    """
    pinned = _pinned_cli(settings)
    if pinned is not None:
        return pinned
    bundled = bundled_cli()
    on_path = shutil.which("claude")
    key = (str(bundled) if bundled else None, on_path)
    with _cli_lock:
        if key in _cli_choice:
            return _cli_choice[key]
        if bundled is None and on_path is None:
            raise _missing()
        chosen = str(bundled) if bundled else str(on_path)
        if bundled and on_path and os.path.realpath(on_path) != os.path.realpath(bundled):
            theirs, ours = cli_version(on_path), _bundled_version(bundled)
            if theirs and ours and theirs > ours:
                chosen = on_path
        _cli_choice[key] = chosen
        return chosen


async def resolve_cli_path(settings: Settings) -> str:
    """:func:`choose_cli_path` off the event loop (it may start ``claude --version`` once)."""
    return await anyio.to_thread.run_sync(choose_cli_path, settings)


# --- options and transport ----------------------------------------------------------------------


def build_options(
    settings: Settings,
    *,
    model: str,
    system: str,
    cli_path: str,
    stderr: StderrTail,
    persist: bool = False,
    resume: str | None = None,
    resume_at: str | None = None,
) -> ClaudeAgentOptions:
    """Agent SDK options for one conversation: no tools, no user settings, one turn per prompt."""
    from claude_agent_sdk import ClaudeAgentOptions

    return ClaudeAgentOptions(
        tools=[],
        setting_sources=[],
        max_turns=1,
        system_prompt=system,
        model=model,
        cwd=str(workdir(settings)),
        cli_path=cli_path,
        env=sdk_env(),
        stderr=stderr,
        include_partial_messages=settings.stream_reasoning,
        # Single shots leave no transcript behind; sessions keep one so they can resume.
        extra_args={} if persist else {"no-session-persistence": None},
        resume=resume,
        resume_session_at=resume_at if resume else None,
    )


@cache
def _guarded_transport_class() -> type[Any]:
    from claude_agent_sdk import Transport

    class GuardedTransport(Transport):
        """Delegates to the SDK's subprocess transport; kills the CLI when closed mid-turn."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner
            self.between_turns = False

        @property
        def pid(self) -> int | None:
            process = getattr(self._inner, "_process", None)
            return getattr(process, "pid", None)

        @property
        def alive(self) -> bool:
            """False once the CLI process is known to have exited."""
            process = getattr(self._inner, "_process", None)
            return process is not None and process.returncode is None

        def kill(self) -> None:
            process = getattr(self._inner, "_process", None)
            if process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError, OSError):
                    process.kill()

        async def connect(self) -> None:
            await self._inner.connect()

        async def write(self, data: str) -> None:
            with contextlib.suppress(ValueError):
                if json.loads(data).get("type") == "user":
                    self.between_turns = False
            await self._inner.write(data)

        def read_messages(self) -> AsyncIterator[dict[str, Any]]:
            return self._read()

        async def _read(self) -> AsyncIterator[dict[str, Any]]:
            source = self._inner.read_messages()
            try:
                async for message in source:
                    if message.get("type") == "result":
                        self.between_turns = True
                    yield message
            finally:
                await source.aclose()

        async def close(self) -> None:
            if not self.between_turns:
                self.kill()
            await self._inner.close()

        def is_ready(self) -> bool:
            return bool(self._inner.is_ready())

        async def end_input(self) -> None:
            await self._inner.end_input()

    return GuardedTransport


def make_transport(options: ClaudeAgentOptions) -> Any:
    """A subprocess transport for ``options`` that never outlives a cancelled turn."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    return _guarded_transport_class()(SubprocessCLITransport(prompt="", options=options))


# --- collecting one turn ------------------------------------------------------------------------


class TurnCollector:
    """Folds the SDK messages of one turn into a :class:`Reply`, forwarding reasoning to the sink."""

    def __init__(self, model: str, sink: EventSink, settings: Settings, tail: StderrTail) -> None:
        self.model = model
        self._sink = sink
        self._settings = settings
        self._tail = tail
        self._streaming = settings.stream_reasoning
        self.seen = 0
        self.texts: list[str] = []
        self.thinking: list[str] = []
        self.error: str | None = None
        self.error_text: str | None = None
        self.result: Any = None
        self.last_uuid: str | None = None
        self.answered_model: str | None = None

    async def feed(self, message: Any) -> bool:
        """Take one message; ``True`` once the turn's ``ResultMessage`` arrived."""
        from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent, TextBlock, ThinkingBlock

        self.seen += 1
        if isinstance(message, StreamEvent):
            delta = message.event.get("delta") or {}
            if message.parent_tool_use_id is None and delta.get("type") == "thinking_delta":
                await self._sink.reasoning(delta.get("thinking", ""))
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            if message.error:
                self.error = message.error
                self.error_text = " ".join(b.text for b in message.content if isinstance(b, TextBlock))
                return False
            for block in message.content:
                if isinstance(block, TextBlock):
                    self.texts.append(block.text)
                elif isinstance(block, ThinkingBlock) and block.thinking:
                    self.thinking.append(block.thinking)
                    if not self._streaming:
                        await self._sink.reasoning(block.thinking)
            self.last_uuid = message.uuid or self.last_uuid
            if message.model and not message.model.startswith("<"):
                self.answered_model = message.model
        elif isinstance(message, ResultMessage):
            self.result = message
            return True
        return False

    @property
    def session_id(self) -> str | None:
        """The CLI session the turn belongs to."""
        return getattr(self.result, "session_id", None)

    def reply(self) -> Reply:
        """The turn's reply; raises the mapped error when the turn failed or never finished."""
        result = self.result
        if result is None:
            raise UpstreamError(with_stderr(f"{self.model}: the CLI ended without a result", self._tail))
        if result.is_error:
            raise self._result_error(result)
        text = "".join(self.texts).strip() or (result.result or "").strip()
        if not text:
            raise UpstreamError(f"{self.model} returned an empty answer")
        return Reply(
            text=text,
            model=self.answered_model or self.model,
            provider=PROVIDER,
            thinking="\n\n".join(self.thinking) or None,
            usage=usage_from(result.usage, result.total_cost_usd),
            session_id=result.session_id,
        )

    def _result_error(self, result: Any) -> AskFableError:
        status = result.api_error_status
        message = result.result or "; ".join(result.errors or []) or self.error_text or result.subtype
        detail = redact_text(f"{self.model}: {message}", self._settings)
        known = classify_failure(
            detail, status=status, error_type=getattr(result, "api_error_type", None), message=message,
            assistant_error=self.error,
        )
        if known is not None:
            return known
        label = f"HTTP {status}" if status else (self.error or result.subtype)
        return UpstreamError(f"Claude Code reported an error ({label}): {detail}")


def usage_from(raw: dict[str, Any] | None, cost: float | None) -> Usage | None:
    """Our :class:`Usage` from the CLI's usage dict and total cost (numbers validated)."""
    from ask_fable.backends.http_client import usage_from as validated_usage

    raw = raw if isinstance(raw, dict) else {}
    details = raw.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return validated_usage(raw.get("input_tokens"), raw.get("output_tokens"), thinking or None, cost)


def map_sdk_error(exc: BaseException, model: str, tail: StderrTail, *, started: bool) -> AskFableError:
    """Translate an Agent SDK exception; ``started`` tells whether the CLI produced any message."""
    from claude_agent_sdk import (
        ClaudeSDKError,
        CLIConnectionError,
        CLINotFoundError,
        ProcessError,
        ResultError,
    )

    if isinstance(exc, AskFableError):
        return exc
    if isinstance(exc, CLINotFoundError):
        return BinaryMissing(f"Claude Code CLI not found: {exc}", binary="claude")
    if isinstance(exc, ResultError):
        data = exc.data or {}
        text = redact_text(f"{model}: {exc.result or '; '.join(exc.errors) or exc.subtype}", None)
        known = classify_failure(
            text, status=exc.api_error_status, error_type=data.get("api_error_type"), message=text
        )
        if known is not None:
            return known
        return UpstreamError(f"Claude Code reported an error: {text}")
    if isinstance(exc, ProcessError):
        detail = with_stderr(f"Claude Code exited with code {exc.exit_code}", tail)
        return UpstreamError(detail) if started else SdkStartError(detail)
    if isinstance(exc, CLIConnectionError):
        detail = with_stderr(f"could not talk to Claude Code: {redact_text(str(exc))}", tail)
        return UpstreamError(detail) if started else SdkStartError(detail)
    if isinstance(exc, ClaudeSDKError):
        return UpstreamError(with_stderr(f"Agent SDK error: {redact_text(str(exc))}", tail))
    detail = f"Agent SDK failure: {type(exc).__name__}: {redact_text(str(exc))}"
    return UpstreamError(with_stderr(detail, tail))


# --- one single-shot call -----------------------------------------------------------------------


async def sdk_ask(settings: Settings, model: str, request: OracleRequest, sink: EventSink) -> Reply:
    """One prompt through ``query()`` on a fresh CLI; no transcript is kept."""
    try:
        from claude_agent_sdk import query
    except ImportError as exc:  # pragma: no cover - claude-agent-sdk is a dependency
        raise SdkStartError(f"claude-agent-sdk is not importable: {exc}") from exc

    cli_path = await resolve_cli_path(settings)
    tail = StderrTail(settings)
    options = build_options(settings, model=model, system=request.system, cli_path=cli_path, stderr=tail)
    collector = TurnCollector(model, sink, settings, tail)
    # Read to the natural end of the stream: the SDK's nested generators only close their CLI
    # when they finish (an early ``break`` would leave the process to the garbage collector).
    from ask_fable.backends.subprocess_runner import gate_slot

    try:
        # One slot of the per-binary "claude" gate, as the bridge takes; the caller's deadline
        # encloses this, so time spent queued counts against the timeout.
        async with gate_slot("claude", settings.cli_max_parallel):
            transport = make_transport(options)
            async for message in query(prompt=request.prompt, options=options, transport=transport):
                await collector.feed(message)
    except Exception as exc:
        # After an error result the CLI exits non-zero on purpose; the result says why.
        if collector.result is None:
            raise map_sdk_error(exc, model, tail, started=collector.seen > 0) from exc
    return collector.reply()
