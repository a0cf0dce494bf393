"""The one oracle interface every backend implements.

An oracle answers one prompt: ``await oracle.ask(request, sink) -> Reply``. A request may carry
the earlier exchanges of a conversation (``history``): a backend that speaks in messages sends them
as messages (:meth:`OracleRequest.chat_messages`), one that takes a single text gets them folded
into it (:meth:`OracleRequest.folded_prompt`). Backends translate their own failures into
:mod:`ask_fable.errors` at their boundary, so callers only ever see ``AskFableError`` subclasses.
Capabilities are plain attributes; nothing here does I/O.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable
from typing import Literal, TypeGuard, get_args

from pydantic import BaseModel, ConfigDict, Field

from ask_fable.values import Usage

Effort = Literal["quick", "standard", "deep"]


def is_effort(value: object) -> TypeGuard[Effort]:
    """Whether ``value`` is one of the reasoning effort presets."""
    return value in get_args(Effort)


#: Opens the earlier exchanges folded into a single-text prompt (see ``OracleRequest.folded_prompt``).
HISTORY_HEADING = "## Earlier in this conversation"


class Exchange(BaseModel):
    """One earlier exchange of a conversation: the user prompt as it was sent, the answer, and the
    model that answered it (when known)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str
    answer: str
    model: str | None = None


class OracleRequest(BaseModel):
    """What a mode asks an oracle: a system prompt, the composed user prompt, earlier exchanges and limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str
    prompt: str
    timeout: float = Field(gt=0, description="seconds this call may take, queueing included")
    effort: Effort | None = None
    max_tokens: int | None = None
    #: The conversation so far, oldest first (empty for a single question).
    history: tuple[Exchange, ...] = ()

    def chat_messages(self) -> list[dict[str, str]]:
        """The user and assistant messages of the conversation, ending with this prompt (no system)."""
        messages: list[dict[str, str]] = []
        for exchange in self.history:
            messages.append({"role": "user", "content": exchange.prompt})
            messages.append({"role": "assistant", "content": exchange.answer})
        messages.append({"role": "user", "content": self.prompt})
        return messages

    def folded_prompt(self) -> str:
        """This prompt with the earlier exchanges written before it, for a route that takes one text."""
        if not self.history:
            return self.prompt
        parts = [HISTORY_HEADING, "<conversation>"]
        for number, exchange in enumerate(self.history, start=1):
            parts += [f"### Turn {number}: you were asked", exchange.prompt.strip(),
                      f"### Turn {number}: you answered", exchange.answer.strip()]
        parts += ["</conversation>", "", "## This turn", self.prompt]
        return "\n".join(parts)


class Reply(BaseModel):
    """One oracle's answer, before normalization (sidecar parsing, refusal detection)."""

    model_config = ConfigDict(extra="forbid")

    text: str
    model: str
    provider: str
    thinking: str | None = None
    usage: Usage | None = None
    session_id: str | None = None
    effort: str | None = None
    #: Set when the call was served by another route than the one asked (e.g. grok CLI for xai/*).
    routed_via: str | None = None
    #: Something the caller should know about how the answer came (e.g. a warm session closed for room).
    note: str | None = None


#: Told of a retry: the attempt that failed (1-based), its cause as metadata (``HTTP 503``,
#: ``connection failed``; never a reply body) and the seconds waited before the next attempt.
RetryFn = Callable[[int, str, float], None]


class EventSink:
    """Where a backend reports live progress: reasoning deltas, notes and retries. Default: discard."""

    def __init__(
        self,
        on_reasoning: Callable[[str], Awaitable[None] | None] | None = None,
        on_note: Callable[[str], Awaitable[None] | None] | None = None,
        on_retry: RetryFn | None = None,
    ) -> None:
        self._on_reasoning = on_reasoning
        self._on_note = on_note
        self._on_retry = on_retry

    async def reasoning(self, text: str) -> None:
        """Forward a chunk of model reasoning as it arrives."""
        await _maybe_await(self._on_reasoning, text)

    async def note(self, text: str) -> None:
        """Forward a short human-readable progress note (retry, fallback, queueing)."""
        await _maybe_await(self._on_note, text)

    def retry(self, attempt: int, cause: str, delay_s: float) -> None:
        """Report that attempt ``attempt`` failed with ``cause`` and the next comes in ``delay_s``."""
        if self._on_retry is not None:
            self._on_retry(attempt, cause, delay_s)


async def _maybe_await(fn: Callable[[str], Awaitable[None] | None] | None, text: str) -> None:
    if fn is None:
        return
    result = fn(text)
    if result is not None:
        await result


class Oracle(abc.ABC):
    """A model reachable through one route. Subclasses implement :meth:`ask` only.

    Attributes:
        token: the council token that names this oracle (``fable``, ``glm``, ``ollama:qwen3``…).
        provider: the backend family used for stats and breaker keys (``anthropic``, ``glm``…).
        model: the model id the oracle will ask for.
        family: the model lab, used to order anonymized experts (a synthesizer's own family late).
        prompt_limit_bytes: the transport's bound on one composed prompt, or ``None``.
    """

    token: str
    provider: str
    model: str
    family: str
    #: The most bytes one composed prompt may take on this route (an argv value), when bounded.
    prompt_limit_bytes: int | None = None

    def reply_tokens(self, request: OracleRequest) -> int:
        """Tokens a conversation leaves free for the answer when it is fitted into the context window."""
        return request.max_tokens or 8192

    def ensure_available(self) -> None:  # noqa: B027 - optional hook, most oracles are always available
        """Raise ``NotConfigured`` / ``BinaryMissing`` when this oracle cannot run; no network."""

    @property
    def breaker_key(self) -> str:
        """The key the circuit breaker tracks this oracle under."""
        return f"{self.provider}:{self.model}"

    @abc.abstractmethod
    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Answer one prompt or raise an :class:`ask_fable.errors.AskFableError`."""
