"""The Agent SDK seam: the one module that touches ``claude_agent_sdk``.

Everything else (the single-shot route in :mod:`.claude_sdk`, the warm sessions in
:mod:`.claude_sessions`) goes through what is here:

- :func:`build_options`: no tools for the model, no user settings, one turn per prompt, a
  private working directory, and no session persistence: Claude Code writes no transcript of our
  calls under ``~/.claude/projects`` (conversations are kept in ask-fable's own store);
- the transport: the Claude Code CLI started by the subprocess runner
  (:func:`~ask_fable.backends.subprocess_runner.open_session_process`), in its own process
  session with the allow-listed environment, its whole group ended on close (so nothing the
  CLI spawned outlives it). Closed mid-turn (a deadline, a cancelled call) the group is killed at
  once; closed between turns the CLI first gets :data:`GRACEFUL_CLOSE_S` seconds to exit on its
  own;
- :class:`WarmClaudeCli` (a warm client) and :func:`run_query` (one prompt on a fresh CLI);
- :class:`TurnCollector`, which folds one turn's messages into a :class:`Reply`, and
  :func:`map_sdk_error`, which translates the SDK's exceptions into :mod:`ask_fable.errors`.

The SDK itself is imported inside the functions (it takes about a second to import). The CLI's
stderr goes to a redacted in-memory tail, never to our stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ask_fable.backends.base import EventSink, Reply
from ask_fable.backends.claude_common import (
    PROVIDER,
    SdkStartError,
    StderrTail,
    classify_failure,
    claude_cli_env,
    redact_text,
    usage_from,
    with_stderr,
    workdir,
)
from ask_fable.errors import AskFableError, BinaryMissing, UpstreamError

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, Message, ResultMessage

    from ask_fable.config import Settings

#: Seconds a CLI closed between turns may take to exit on its own before its group is ended.
GRACEFUL_CLOSE_S = 5.0
#: Bytes one message line from the CLI may hold, unless the options set another bound.
MAX_MESSAGE_BYTES = 1024 * 1024


def bundled_cli() -> Path | None:
    """The Claude Code CLI inside the installed claude-agent-sdk wheel (found without importing it)."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "_bundled" / "claude"
    return path if path.is_file() else None


def build_options(
    settings: Settings,
    *,
    model: str,
    system: str,
    cli_path: str,
    stderr: StderrTail,
) -> ClaudeAgentOptions:
    """Agent SDK options for one conversation: no tools, no user settings, one turn per prompt, no
    transcript left on disk."""
    try:
        from claude_agent_sdk import ClaudeAgentOptions
    except ImportError as exc:  # pragma: no cover - claude-agent-sdk is a dependency
        raise SdkStartError(f"claude-agent-sdk is not importable: {exc}") from exc

    return ClaudeAgentOptions(
        tools=[],
        setting_sources=[],
        max_turns=1,
        system_prompt=system,
        model=model,
        cwd=str(workdir(settings)),
        cli_path=cli_path,
        stderr=stderr,
        include_partial_messages=settings.stream_reasoning,
        # Claude Code would otherwise keep an unredacted transcript of every call in the user's
        # ~/.claude/projects; a conversation's truth is ask-fable's own store.
        extra_args={"no-session-persistence": None},
    )


# --- the transport ------------------------------------------------------------------------------


def _process_env(cwd: str | None) -> dict[str, str]:
    """The CLI's environment: the allow-list and traffic flags, plus what the SDK tells its CLI."""
    from claude_agent_sdk import __version__

    env = claude_cli_env()
    env.update({
        "CLAUDE_CODE_ENTRYPOINT": "sdk-py",
        "CLAUDE_AGENT_SDK_VERSION": __version__,
        # The SDK reads these frames to tell when a run is over.
        "CLAUDE_CODE_SDK_READS_SESSION_STATE": "1",
    })
    if cwd:
        env["PWD"] = cwd
    return env


def _argv(options: ClaudeAgentOptions) -> list[str]:
    """The CLI command line the SDK builds for ``options`` (the same flags as its own transport)."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    return SubprocessCLITransport(prompt="", options=options)._build_command()


def _parse_line(line: bytes) -> dict[str, Any] | None:
    """One NDJSON line of the CLI's stdout; ``None`` for blank or non-JSON lines (debug output)."""
    from claude_agent_sdk import CLIJSONDecodeError

    text = line.decode("utf-8", "replace").strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIJSONDecodeError(text, exc) from exc
    return data if isinstance(data, dict) else None


@functools.cache
def _transport_class() -> type[Any]:
    from anyio.streams.buffered import BufferedByteReceiveStream
    from claude_agent_sdk import CLIConnectionError, CLIJSONDecodeError, ProcessError, Transport

    from ask_fable.backends.subprocess_runner import SessionProcess, open_session_process

    class CliTransport(Transport):
        """The Claude Code CLI as the SDK's transport, started and ended by the subprocess runner."""

        def __init__(self, options: ClaudeAgentOptions) -> None:
            self._options = options
            self._cwd = str(options.cwd) if options.cwd else None
            self._max_bytes = options.max_buffer_size or MAX_MESSAGE_BYTES
            self._process: SessionProcess | None = None
            self._ready = False
            self._write_lock = anyio.Lock()
            self._tasks: list[asyncio.Task[None]] = []
            #: True once the current turn's result arrived and no new prompt was sent.
            self.between_turns = False

        @property
        def pid(self) -> int | None:
            return self._process.pid if self._process is not None else None

        @property
        def alive(self) -> bool:
            """False once the CLI process is known to have exited."""
            return self._process is not None and self._process.returncode is None

        async def connect(self) -> None:
            if self._process is not None:
                return
            try:
                self._process = await open_session_process(_argv(self._options), env=_process_env(self._cwd),
                                                           cwd=self._cwd)
            except BinaryMissing:
                raise
            except UpstreamError as exc:
                raise CLIConnectionError(f"Failed to start Claude Code: {exc.detail}") from exc
            loop = asyncio.get_running_loop()
            # A CLI that exits leaves no descendant holding stdout, or the reader would wait forever.
            self._tasks.append(loop.create_task(self._process.clear_group_on_exit()))
            if self._process.process.stderr is not None:
                self._tasks.append(loop.create_task(self._pump_stderr(self._process.process.stderr)))
            self._ready = True

        async def _pump_stderr(self, stream: Any) -> None:
            # Always drained, so a chatty CLI never blocks on a full pipe; lines go to the tail.
            callback = self._options.stderr
            pending = b""
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                while True:
                    pending += await stream.receive(65536)
                    *lines, pending = pending.split(b"\n")
                    if callback is not None:
                        for line in lines:
                            callback(line.decode("utf-8", "replace"))
                    pending = pending[-self._max_bytes:]
            if callback is not None and pending:
                callback(pending.decode("utf-8", "replace"))

        async def write(self, data: str) -> None:
            async with self._write_lock:
                process = self._process
                if not self._ready or process is None or process.process.stdin is None:
                    raise CLIConnectionError("ProcessTransport is not ready for writing")
                if process.returncode is not None:
                    raise CLIConnectionError(
                        f"Cannot write to terminated process (exit code: {process.returncode})")
                with contextlib.suppress(ValueError):
                    if json.loads(data).get("type") == "user":
                        self.between_turns = False
                try:
                    await process.process.stdin.send(data.encode("utf-8"))
                except Exception as exc:
                    self._ready = False
                    raise CLIConnectionError(f"Failed to write to process stdin: {exc}") from exc

        def read_messages(self) -> AsyncIterator[dict[str, Any]]:
            return self._read()

        async def _read(self) -> AsyncIterator[dict[str, Any]]:
            process = self._process
            if process is None or process.process.stdout is None:
                raise CLIConnectionError("Not connected")
            stream = BufferedByteReceiveStream(process.process.stdout)
            while True:
                try:
                    line = await stream.receive_until(b"\n", self._max_bytes)
                except anyio.IncompleteRead:
                    # End of output; a tail without a newline is yielded if it is a whole message.
                    with contextlib.suppress(CLIJSONDecodeError):
                        tail = _parse_line(stream.buffer)
                        if tail is not None:
                            yield tail
                    break
                except anyio.DelimiterNotFound as exc:
                    raise CLIJSONDecodeError(
                        f"JSON message exceeded maximum buffer size of {self._max_bytes} bytes", exc
                    ) from exc
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                data = _parse_line(line)
                if data is not None:
                    if data.get("type") == "result":
                        self.between_turns = True
                    yield data
            code = await process.wait()
            if code != 0:
                raise ProcessError(f"Command failed with exit code {code}", exit_code=code,
                                   stderr="Check stderr output for details")

        async def close(self) -> None:
            process, self._process = self._process, None
            tasks, self._tasks = self._tasks, []
            self._ready = False
            if process is not None:
                if self.between_turns:
                    await process.end(graceful=GRACEFUL_CLOSE_S)
                else:
                    await process.end(kill_grace=0.0)
            for task in tasks:
                task.cancel()
            if tasks:
                # The process and its pipes are gone; let the helpers finish so none outlives us.
                with anyio.CancelScope(shield=True):
                    await asyncio.wait(set(tasks), timeout=1.0)

        def is_ready(self) -> bool:
            return self._ready

        async def end_input(self) -> None:
            async with self._write_lock:
                process = self._process
                if process is not None and process.process.stdin is not None:
                    with contextlib.suppress(Exception):
                        await process.process.stdin.aclose()

    return CliTransport


def make_transport(options: ClaudeAgentOptions) -> Any:
    """A transport for ``options``: the CLI in its own process session, never outliving a close."""
    return _transport_class()(options)


# --- conversations ------------------------------------------------------------------------------


class OwnTransport(Protocol):
    """What a conversation reads of the transport :func:`make_transport` returns."""

    @property
    def pid(self) -> int | None:
        """The CLI's pid, None before it started."""
        ...

    @property
    def alive(self) -> bool:
        """False once the CLI process is known to have exited."""
        ...

    async def close(self) -> None:
        """End the CLI's process group."""
        ...


class WarmClaudeCli:
    """One warm Claude Code CLI, kept open between turns."""

    def __init__(self, client: ClaudeSDKClient, transport: OwnTransport) -> None:
        self._client = client
        self._transport = transport

    @classmethod
    async def open(cls, options: ClaudeAgentOptions) -> WarmClaudeCli:
        """Start a CLI for ``options`` and connect the SDK's client to it."""
        from claude_agent_sdk import ClaudeSDKClient

        transport = make_transport(options)
        client = ClaudeSDKClient(options, transport=transport)
        try:
            await client.connect()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await transport.close()
            raise
        return cls(client, transport)

    @property
    def pid(self) -> int | None:
        """The CLI's pid (its process group id)."""
        pid: int | None = self._transport.pid
        return pid

    @property
    def alive(self) -> bool:
        """False once the CLI is known to have exited."""
        return self._transport.alive

    async def turn(self, prompt: str) -> AsyncIterator[Message]:
        """Send ``prompt`` and yield the turn's messages up to its result."""
        await self._client.query(prompt)
        async for message in self._client.receive_response():
            yield message

    async def close(self) -> None:
        """Disconnect and end the CLI's process group (shielded, never raises)."""
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(Exception):
                await self._client.disconnect()
            with contextlib.suppress(Exception):
                await self._transport.close()


async def run_query(prompt: str, options: ClaudeAgentOptions,
                    feed: Callable[[Message], Awaitable[object]]) -> None:
    """One prompt on a fresh CLI through the SDK's ``query()``; each message goes to ``feed``.

    The stream is read to its natural end: the SDK's nested generators only close their CLI when
    they finish (an early ``break`` would leave the process to the garbage collector).
    """
    from claude_agent_sdk import query

    async for message in query(prompt=prompt, options=options, transport=make_transport(options)):
        await feed(message)


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
        self.result: ResultMessage | None = None
        self.last_uuid: str | None = None
        self.answered_model: str | None = None

    async def feed(self, message: Message) -> bool:
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
        return self.result.session_id if self.result is not None else None

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

    def _result_error(self, result: ResultMessage) -> AskFableError:
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
