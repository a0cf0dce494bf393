"""Conversations with any model: a session's turns live in the transcript store, and each new turn
is sent with as many of them as the model's context window holds.

    ask(model=…, session=…) ─▶ namespace of the model (fable, opus5, deepseek, openrouter:<id>…)
      ─▶ holding the session (this process's lock, then the store's lease): stored turns ─▶ fitted
         into the window (oldest left out, with a note and their questions listed for the model)
         ─▶ the oracle gets them as history ─▶ the answered turn is stored ─▶ lease released

The store is the truth: a restarted server, or another process reading the same store, continues
the conversation; a warm Claude Code process is only a cache of it. A session belongs to a tenant
(``local`` until the server tells tenants apart), a model namespace and the caller's session key.
Sizes are estimated at :data:`BYTES_PER_TOKEN` UTF-8 bytes a token, a count that overestimates
code and prose, so a fitted request stays inside the real window.

Turns of one session run one at a time across processes (:func:`holding`): a turn takes the
session's lease in the transcript store (waiting, with a short jittered backoff, while another
process's turn holds it), renews it every third of ``ASK_FABLE_SESSION_LEASE_SECONDS`` while it
runs, and releases it when it ends, also when cancelled. A process killed mid-turn stops renewing,
so its lease expires and the session is free again within that many seconds.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ask_fable.backends.base import Exchange
from ask_fable.core.sidecar import parse_sidecar
from ask_fable.errors import OracleTimeout

if TYPE_CHECKING:
    from ask_fable.config import Settings
    from ask_fable.stores.interfaces import SessionTranscriptStore, StoreRunner
    from ask_fable.stores.records import StoredSessionTurn

#: UTF-8 bytes counted as one token when sizing a conversation (real tokens average more).
BYTES_PER_TOKEN = 3
#: The share of a context window a conversation may fill; the rest absorbs estimation error.
WINDOW_SHARE = 0.9
#: Bytes one exchange adds around its text (message framing, or the headings of a folded prompt).
EXCHANGE_OVERHEAD_BYTES = 96
#: Bytes kept for the list of questions of the turns left out.
DIGEST_BYTES = 2_000
#: Characters of each left-out question shown in that list.
DIGEST_QUESTION_CHARS = 160
#: First and longest pause between two tries at a session lease another turn holds.
LEASE_RETRY_FIRST_S = 0.05
LEASE_RETRY_MAX_S = 0.5

#: The two Claude tokens whose conversations keep the namespaces ``ask`` and ``ask_opus5`` had.
CLAUDE_NAMESPACES: dict[str, str] = {"fable": "fable", "opus": "opus5"}


def namespace_for(token: str) -> str:
    """The conversation space of a canonical model token: ``opus`` → ``opus5``, others as they are."""
    return CLAUDE_NAMESPACES.get(token, token)


def context_window(token: str, settings: Settings) -> int:
    """Tokens a conversation with ``token`` may fill: its backend's window, capped by
    ``ASK_FABLE_SESSION_CONTEXT_TOKENS`` when that is set."""
    from ask_fable.core.tokens import backend_for

    window = backend_for(token).context_tokens
    cap = settings.session_context_tokens
    return min(window, cap) if cap else window


@dataclass(frozen=True)
class SessionRef:
    """Which conversation: tenant, model namespace and the caller's session key."""

    tenant: str
    namespace: str
    key: str


class Conversations:
    """This process's per-session locks: one turn of a conversation at a time, sessions in parallel."""

    def __init__(self) -> None:
        # Weak values: a session's lock lives while a turn holds or waits for it.
        self._locks: weakref.WeakValueDictionary[SessionRef, anyio.Lock] = weakref.WeakValueDictionary()

    def lock(self, ref: SessionRef) -> anyio.Lock:
        """The lock that orders the turns of ``ref``."""
        found = self._locks.get(ref)
        if found is None:
            found = anyio.Lock()
            self._locks[ref] = found
        return found


@dataclass
class SessionState:
    """What the pipeline keeps of a session between its turns, replayed from the stored turns."""

    #: Answers in a row that asked for more context (:func:`advance_streak`).
    needs_context_streak: int = 0


@dataclass
class StoredConversation:
    """A conversation whose truth is its stored transcript, as one call's turn uses it: where its turns
    are kept, how much of them fits, what to reset (a warm model process is only a cache of it).

    ``state`` is the pipeline's per-session state (the needs-more-context streak), filled from the
    stored turns when the turn runs; ``forget_warm`` closes a warm model process on reset.
    """

    store: SessionTranscriptStore
    ref: SessionRef
    lock: anyio.Lock
    window_tokens: int
    label: str
    #: How the turn calls ``store`` from the event loop (``App.run_store``).
    run_store: StoreRunner
    #: Seconds the session's lease lasts unless renewed (``ASK_FABLE_SESSION_LEASE_SECONDS``).
    lease_seconds: float = 10.0
    reset: bool = False
    state: SessionState = field(default_factory=SessionState)
    forget_warm: Callable[[], Awaitable[object]] | None = None

    def hold(self, wait_s: float, on_wait: Callable[[], Awaitable[None]] | None = None
             ) -> AbstractAsyncContextManager[None]:
        """Hold this session for one turn (see :func:`holding`)."""
        return holding(self.store, self.ref, self.lock, self.run_store, lease_s=self.lease_seconds,
                       wait_s=wait_s, on_wait=on_wait)


@asynccontextmanager
async def holding(store: SessionTranscriptStore, ref: SessionRef, lock: anyio.Lock, run_store: StoreRunner,
                  *, lease_s: float, wait_s: float,
                  on_wait: Callable[[], Awaitable[None]] | None = None) -> AsyncIterator[None]:
    """Run the body as the session's only turn on every process sharing ``store``.

    Takes this process's ``lock``, then the session's lease in the store, retrying with a jittered
    backoff while another process holds it; ``on_wait`` is awaited once when a wait begins. Past
    ``wait_s`` seconds of waiting, ``OracleTimeout``. The lease is renewed while the body runs and
    released after it, also when it is cancelled. A store that cannot be reached does not stop the
    turn: it runs unleased (its reads and writes then fail on their own terms).
    """
    async with lock:
        holder = uuid.uuid4().hex
        leased = await _take_lease(store, ref, run_store, holder, lease_s, wait_s, on_wait)
        if not leased:
            yield
            return
        failure: Exception | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_keep_lease, store, ref, run_store, holder, lease_s)
                try:
                    yield
                except Exception as exc:  # raised below as it is, not in the task group's exception group
                    failure = exc
                finally:
                    group.cancel_scope.cancel()
            if failure is not None:
                raise failure
        finally:
            with anyio.CancelScope(shield=True):
                # A release that fails leaves the lease to lapse on its own.
                with contextlib.suppress(Exception):
                    await run_store(store.release, ref.tenant, ref.namespace, ref.key, holder)


async def _take_lease(store: SessionTranscriptStore, ref: SessionRef, run_store: StoreRunner, holder: str,
                      lease_s: float, wait_s: float,
                      on_wait: Callable[[], Awaitable[None]] | None) -> bool:
    """Take the lease, waiting for another holder; whether it was taken (``False``: the store failed)."""
    deadline = time.monotonic() + wait_s
    pause = LEASE_RETRY_FIRST_S
    waited = False
    while True:
        try:
            if await run_store(store.lease, ref.tenant, ref.namespace, ref.key, holder, lease_s):
                return True
        except Exception:  # see holding(): the turn goes on unleased
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            raise OracleTimeout(f"an earlier turn of session {ref.key!r} was still running after "
                                f"{wait_s:g}s; try again when it has answered")
        if not waited and on_wait is not None:
            waited = True
            await on_wait()
        await anyio.sleep(min(left, random.uniform(pause / 2, pause)))
        pause = min(pause * 2, LEASE_RETRY_MAX_S)


async def _keep_lease(store: SessionTranscriptStore, ref: SessionRef, run_store: StoreRunner, holder: str,
                      lease_s: float) -> None:
    """Renew the lease every third of its length until cancelled; a failed renewal is tried again
    at the next one (the lease lasts until then)."""
    while True:
        await anyio.sleep(lease_s / 3)
        try:
            await run_store(store.renew, ref.tenant, ref.namespace, ref.key, holder, lease_s)
        except Exception:
            continue


def estimate_tokens(text: str) -> int:
    """The tokens ``text`` is counted as (see :data:`BYTES_PER_TOKEN`)."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


@dataclass(frozen=True)
class FittedHistory:
    """The earlier exchanges a turn is sent with, and what was left out for space."""

    history: tuple[Exchange, ...]
    omitted: int
    #: Appended to the system prompt when turns were left out: their questions, for the model.
    digest: str = ""

    def note(self, label: str, window_tokens: int) -> str | None:
        """What the caller is told when turns were left out (``None`` when all were sent)."""
        if not self.omitted:
            return None
        turns = "turn" if self.omitted == 1 else f"{self.omitted} turns"
        return (f"This session's oldest {turns} no longer fit {label}'s context window (about "
                f"{window_tokens:,} tokens) and were left out of this request; the model was given their "
                "questions only. The stored transcript keeps every turn; reset_session starts afresh.")


def fit_history(
    turns: Sequence[StoredSessionTurn],
    *,
    system: str,
    prompt: str,
    window_tokens: int,
    reply_tokens: int,
    limit_bytes: int | None = None,
) -> FittedHistory:
    """The most recent stored turns that fit beside ``system``, ``prompt`` and the answer's room.

    Two bounds apply: the context window (less the room kept for the answer, at most half of it)
    and, for a route that carries the whole prompt in one argument, ``limit_bytes``. Turns are
    kept newest first and without gaps; when some are left out, room is kept for a list of their
    questions (:attr:`FittedHistory.digest`).
    """
    exchanges = [Exchange(prompt=turn.prompt, answer=turn.answer, model=turn.model)
                 for turn in turns]
    fixed_bytes = len(system.encode("utf-8")) + len(prompt.encode("utf-8"))
    token_room = (int(window_tokens * WINDOW_SHARE) - min(reply_tokens, window_tokens // 2)
                  - math.ceil(fixed_bytes / BYTES_PER_TOKEN))
    byte_room = limit_bytes - fixed_bytes if limit_bytes is not None else None

    def keep(reserve: int) -> int:
        tokens, size, kept = 0, 0, 0
        for exchange in reversed(exchanges):
            cost = len(exchange.prompt.encode("utf-8")) + len(exchange.answer.encode("utf-8"))
            cost += EXCHANGE_OVERHEAD_BYTES
            tokens += math.ceil(cost / BYTES_PER_TOKEN)
            size += cost
            if tokens + math.ceil(reserve / BYTES_PER_TOKEN) > token_room:
                break
            if byte_room is not None and size + reserve > byte_room:
                break
            kept += 1
        return kept

    kept = keep(0)
    if kept == len(exchanges):
        return FittedHistory(tuple(exchanges), 0)
    kept = keep(DIGEST_BYTES)
    omitted = len(exchanges) - kept
    return FittedHistory(tuple(exchanges[omitted:]), omitted, _digest(turns[:omitted]))


def _digest(left_out: Sequence[StoredSessionTurn]) -> str:
    """The questions of the turns left out, newest kept when they do not all fit in :data:`DIGEST_BYTES`."""
    head = (f"\n\nThis conversation began earlier than what you are given here: its {len(left_out)} oldest "
            "turn(s) are left out for space. Their questions, oldest first:")
    lines: list[str] = []
    size = len(head.encode("utf-8"))
    for turn in reversed(left_out):
        question = " ".join(turn.question.split())
        if len(question) > DIGEST_QUESTION_CHARS:
            question = question[: DIGEST_QUESTION_CHARS - 1] + "…"
        line = f"\n- {question}"
        size += len(line.encode("utf-8"))
        if size > DIGEST_BYTES - 40:
            lines.append(f"\n- (and {len(left_out) - len(lines)} earlier)")
            break
        lines.append(line)
    return head + "".join(reversed(lines))


def advance_streak(streak: int, asked_more: bool, limit: int) -> tuple[int, bool]:
    """The needs-more-context streak after one answer, and whether it ran past ``limit`` (the turn is
    then ``context_exhausted`` and the streak starts over)."""
    if not asked_more:
        return 0, False
    streak += 1
    return (0, True) if streak > limit else (streak, False)


def streak_of(turns: Sequence[StoredSessionTurn], limit: int) -> int:
    """The streak a session's stored answers leave behind, replayed with :func:`advance_streak`."""
    streak = 0
    for turn in turns:
        _, sidecar = parse_sidecar(turn.answer)
        asked_more = sidecar is not None and sidecar.recommendation == "needs_more_context"
        streak, _ = advance_streak(streak, asked_more, limit)
    return streak
