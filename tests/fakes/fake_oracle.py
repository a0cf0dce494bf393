"""A scripted oracle for mode tests: queue replies, then inspect what it was asked and when.

    fable = FakeOracle("fable", family="anthropic")
    fable.enqueue("answer text", recommendation="apply", delay=0.05)
    fable.enqueue_error(NotConfigured("no key"))
    fable.enqueue_hang()
    resolver = FakeResolver([fable, FakeOracle("minimax")])

With an empty queue the oracle answers with its ``default`` text (a plain ``apply`` answer).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import anyio

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.config import load_settings
from ask_fable.core.modes.base import ModeContext
from ask_fable.core.tokens import family_of
from ask_fable.core.tracing import Console, TraceRecorder
from ask_fable.errors import AskFableError, NotConfigured


def sidecar_block(recommendation: str, confidence: str = "high") -> str:
    """A fenced sidecar block as a model would write it."""
    data = {"recommendation": recommendation, "confidence": confidence, "needs_context": []}
    return f"```sidecar\n{json.dumps(data)}\n```"


@dataclass
class Script:
    """One queued behaviour: a text reply, an error, or a hang."""

    text: str | None = None
    delay: float = 0.0
    error: AskFableError | None = None
    hang: bool = False


@dataclass
class Call:
    """One recorded request with its start and end times (``time.monotonic``)."""

    request: OracleRequest
    started: float
    ended: float | None = None

    @property
    def system(self) -> str:
        """The system prompt the oracle was given."""
        return self.request.system

    @property
    def prompt(self) -> str:
        """The user prompt the oracle was given."""
        return self.request.prompt


class FakeOracle(Oracle):
    """An oracle whose replies are scripted and whose requests are recorded."""

    def __init__(
        self,
        token: str,
        model: str | None = None,
        provider: str | None = None,
        family: str | None = None,
        *,
        default: str | None = None,
        unavailable: AskFableError | None = None,
    ) -> None:
        self.token = token
        self.model = model or f"{token}-model"
        self.provider = provider or token.partition(":")[0]
        self.family = family or family_of(token)
        self.default = default if default is not None else f"{token} says do it.\n\n{sidecar_block('apply')}"
        self.unavailable = unavailable
        self.queue: deque[Script] = deque()
        self.calls: list[Call] = []

    def enqueue(
        self, text: str, *, recommendation: str | None = None, confidence: str = "high", delay: float = 0.0
    ) -> FakeOracle:
        """Queue a reply; with ``recommendation`` a sidecar block is appended to ``text``."""
        if recommendation is not None:
            text = f"{text}\n\n{sidecar_block(recommendation, confidence)}"
        self.queue.append(Script(text=text, delay=delay))
        return self

    def enqueue_error(self, error: AskFableError, *, delay: float = 0.0) -> FakeOracle:
        """Queue a failure raised after ``delay`` seconds."""
        self.queue.append(Script(error=error, delay=delay))
        return self

    def enqueue_hang(self) -> FakeOracle:
        """Queue a call that never returns (until cancelled)."""
        self.queue.append(Script(hang=True))
        return self

    def ensure_available(self) -> None:
        """Raise the configured unavailability error, if any."""
        if self.unavailable is not None:
            raise self.unavailable

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Play the next scripted behaviour and record the call."""
        call = Call(request, time.monotonic())
        self.calls.append(call)
        script = self.queue.popleft() if self.queue else Script(text=self.default)
        try:
            if script.hang:
                await anyio.sleep_forever()
            if script.delay:
                await anyio.sleep(script.delay)
            if script.error is not None:
                raise script.error
            assert script.text is not None
            return Reply(text=script.text, model=self.model, provider=self.provider)
        finally:
            call.ended = time.monotonic()


class FakeResolver:
    """Maps canonical tokens to fakes; an unknown token resolves to ``NotConfigured``."""

    def __init__(self, oracles: Iterable[FakeOracle] = (), *, auto: bool = False) -> None:
        self.oracles: dict[str, FakeOracle] = {oracle.token: oracle for oracle in oracles}
        self.auto = auto
        self.resolved: list[str] = []

    def add(self, oracle: FakeOracle) -> FakeOracle:
        """Register one more fake."""
        self.oracles[oracle.token] = oracle
        return oracle

    def __getitem__(self, token: str) -> FakeOracle:
        return self.oracles[token]

    def __call__(self, token: str) -> Oracle:
        self.resolved.append(token)
        if token not in self.oracles:
            if not self.auto:
                raise NotConfigured(f"{token} is not configured in this test")
            self.oracles[token] = FakeOracle(token)
        return self.oracles[token]


class ProgressLog:
    """Collects ``(done, total, message)`` progress reports."""

    def __init__(self) -> None:
        self.events: list[tuple[float, float | None, str]] = []

    async def __call__(self, done: float, total: float | None, message: str) -> None:
        self.events.append((done, total, message))


def make_mctx(**overrides: object) -> tuple[ModeContext, ProgressLog]:
    """A quiet ModeContext over ``load_settings(**overrides)`` with a recording progress callback."""
    settings = load_settings(**overrides)
    progress = ProgressLog()
    mctx = ModeContext(settings, TraceRecorder("trace-test"), Console(quiet=True, show_reasoning=False),
                       progress=progress)
    return mctx, progress
