"""Multi-turn Fable / Opus 5 conversations that keep their Claude Code process warm.

One open conversation (a warm Claude Code CLI, :class:`~ask_fable.backends.agent_sdk.Conversation`)
per ``(namespace, key)``: a follow-up turn is written to the running
CLI (tens of milliseconds) instead of starting a new one (about half a second). Namespaces keep
tools apart (``fable`` for ``ask``, ``opus5`` for ``ask_opus5``). Turns of one session run one at a
time; different sessions run in parallel.

Lifecycle of a session's client::

    first turn ─▶ connect (model ladder) ─▶ turn ─▶ … ─▶ idle past session_idle_seconds ─▶ closed
    failed turn ─▶ closed                      next turn ─▶ reconnect with --resume at the last good
                                                            answer (the conversation continues)
    CLI died between turns ─▶ noticed by the next turn, which resumes on a new CLI and answers

The conversation itself (transcript, CLI session id, the counter the pipeline keeps) outlives
its client until :meth:`ClaudeSessions.reset` or :meth:`ClaudeSessions.aclose`. With
``ASK_FABLE_USE_CLI`` every turn is a ``claude -p --resume <session>`` process instead.

Cost: Claude Code reports a conversation's running total with every turn (also after a resume), so
each reply's ``usage.cost_usd`` is turned into that turn's own cost here, and the conversation's
total is kept beside it (:meth:`ClaudeSessions.cost`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.backends.claude_common import ModelPlan, StderrTail, model_plan, run_ladder
from ask_fable.errors import OracleTimeout

if TYPE_CHECKING:
    from ask_fable.backends.agent_sdk import Conversation
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

SessionKey = tuple[str, str]


@dataclass
class _Session:
    namespace: str
    key: str
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    turns: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=lambda: {"needs_context_streak": 0})
    model: str | None = None
    session_id: str | None = None
    last_uuid: str | None = None
    client: Conversation | None = None
    tail: StderrTail | None = None
    #: The ``stream_reasoning`` the open client was started with.
    streaming: bool = False
    last_used: float = field(default_factory=time.monotonic)
    generation: int = 0
    #: The running total Claude Code last reported for this conversation, and our own sum of turns.
    reported_cost: float = 0.0
    cost_usd: float | None = None

    def forget(self) -> None:
        self.turns = []
        # Cleared in place: a caller may hold this dict for the turn under way.
        self.state.clear()
        self.state["needs_context_streak"] = 0
        self.model = self.session_id = self.last_uuid = None
        self.reported_cost, self.cost_usd = 0.0, None

    def charge(self, reply: Reply) -> Reply:
        """``reply`` with ``usage.cost_usd`` cut down from the conversation's total to this turn's cost."""
        usage = reply.usage
        if usage is None or usage.cost_usd is None:
            return reply
        total = usage.cost_usd
        # A total below the last one means the CLI started counting afresh: all of it is this turn's.
        turn = total - self.reported_cost if total >= self.reported_cost else total
        turn = round(turn, 10)
        self.reported_cost = total
        self.cost_usd = round((self.cost_usd or 0.0) + turn, 10)
        return reply.model_copy(update={"usage": usage.model_copy(update={"cost_usd": turn})})


class ClaudeSessions:
    """The open multi-turn Claude conversations of one server process.

    ``settings`` is a :class:`Settings` or a zero-argument callable returning the current one; it
    is read at each turn, so runtime changes (``use_cli``, ``fable_model``, ``stream_reasoning``)
    apply from the next turn on. ``resources`` are the App's (gates, chosen CLI); without them the
    sessions keep their own.
    """

    def __init__(
        self, settings: Settings | Callable[[], Settings], resources: Resources | None = None
    ) -> None:
        from ask_fable.backends.resources import Resources

        self._settings_source = settings
        self.resources = resources or Resources.standalone()
        self._sessions: dict[SessionKey, _Session] = {}
        self._timers: dict[SessionKey, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def settings(self) -> Settings:
        """The current settings."""
        source = self._settings_source
        return source() if callable(source) else source

    # --- public API -----------------------------------------------------------------------------

    async def ask(
        self,
        namespace: str,
        key: str,
        request: OracleRequest,
        sink: EventSink,
        model_token: str,
        reset: bool = False,
        *,
        question: str | None = None,
    ) -> Reply:
        """Run one turn of session ``key`` in ``namespace`` (``reset`` starts it over first).

        ``question`` is what the transcript records (default: the composed prompt). Raises the
        :mod:`ask_fable.errors` tree; a failed turn leaves the transcript as it was.
        """
        settings = self.settings
        plan = model_plan(settings, model_token)
        await self.close_idle()
        session = self._session(namespace, key)
        try:
            with anyio.fail_after(request.timeout):
                while True:
                    async with session.lock:
                        if self._sessions.get((namespace, key)) is not session:
                            # A reset dropped this session while we waited: use the current one.
                            session = self._session(namespace, key)
                            continue
                        if reset:
                            self._cancel_timer((namespace, key))
                            await self._close_client(session)
                            session.forget()
                        reply = await self._turn(session, plan, request, sink, settings)
                        session.turns.append({
                            "question": request.prompt if question is None else question,
                            "answer": reply.text,
                            "thinking": reply.thinking,
                            "model": reply.model,
                            "ts": datetime.now(UTC).isoformat(timespec="seconds"),
                        })
                        self._touch(session)
                        break
        except TimeoutError as exc:
            model = session.model or plan.first
            raise OracleTimeout(f"{model} did not answer within {request.timeout:g}s") from exc
        return reply

    async def reset(self, namespace: str, key: str) -> list[dict[str, Any]]:
        """Close and forget session ``key``; returns its transcript turns (empty when unknown)."""
        session = self._sessions.get((namespace, key))
        if session is None:
            return []
        async with session.lock:
            await self._close_client(session)
            turns = session.turns
            session.forget()
            self._sessions.pop((namespace, key), None)
            self._cancel_timer((namespace, key))
        return turns

    def transcript(self, namespace: str, key: str) -> list[dict[str, Any]]:
        """A copy of the session's turns ``{question, answer, thinking, model, ts}``, oldest first."""
        session = self._sessions.get((namespace, key))
        return [dict(turn) for turn in session.turns] if session else []

    def cost(self, namespace: str, key: str) -> float | None:
        """The conversation's total cost in dollars so far (``None`` when no turn reported one)."""
        session = self._sessions.get((namespace, key))
        return session.cost_usd if session else None

    def exists(self, namespace: str, key: str) -> bool:
        """Whether the session has at least one answered turn."""
        session = self._sessions.get((namespace, key))
        return bool(session and session.turns)

    def session_state(self, namespace: str, key: str) -> dict[str, Any]:
        """The session's mutable state for the pipeline (``needs_context_streak``); reset clears it."""
        return self._session(namespace, key).state

    def oracle(
        self, namespace: str, key: str, model_token: str, *, reset: bool = False, question: str | None = None
    ) -> Oracle:
        """The session's next turn as an :class:`Oracle`, so a mode can call it like any other."""
        return SessionOracle(self, namespace, key, model_token, reset=reset, question=question)

    def client_pid(self, namespace: str, key: str) -> int | None:
        """The pid of the session's open Claude Code process, if one is open."""
        session = self._sessions.get((namespace, key))
        return session.client.pid if session and session.client is not None else None

    def list_sessions(self) -> list[dict[str, Any]]:
        """One summary per known session: namespace, key, turns, model, whether a client is open."""
        return [
            {"namespace": s.namespace, "key": s.key, "turns": len(s.turns), "model": s.model,
             "open": s.client is not None}
            for s in self._sessions.values()
        ]

    async def close_idle(self) -> int:
        """Close clients idle longer than ``session_idle_seconds`` (their conversations stay)."""
        cutoff = time.monotonic() - self.settings.session_idle_seconds
        closed = 0
        for session in list(self._sessions.values()):
            if session.client is not None and session.last_used <= cutoff and not session.lock.locked():
                async with session.lock:
                    await self._close_client(session)
                closed += 1
        return closed

    async def aclose(self) -> None:
        """Close every client and stop the idle timers (the server's lifespan calls this)."""
        for key in list(self._timers):
            self._cancel_timer(key)
        for task in list(self._tasks):
            task.cancel()
        for session in list(self._sessions.values()):
            await self._close_client(session)
        self._sessions.clear()

    # --- turns ----------------------------------------------------------------------------------

    def _session(self, namespace: str, key: str) -> _Session:
        found = self._sessions.get((namespace, key))
        if found is None:
            found = self._sessions[(namespace, key)] = _Session(namespace, key)
        return found

    async def _turn(
        self, session: _Session, plan: ModelPlan, request: OracleRequest, sink: EventSink, settings: Settings
    ) -> Reply:
        # A conversation stays on the model that answered its first turn.
        if session.model:
            plan = ModelPlan(plan.token, (session.model,), plan.pinned_by or "the conversation")

        async def attempt(model: str) -> Reply:
            if settings.use_cli:
                await self._close_client(session)  # switched to the bridge: no warm SDK client stays
                reply = await self._cli_turn(session, model, request, settings)
            else:
                from ask_fable.backends.claude_sdk import SdkStartError

                try:
                    reply = await self._sdk_turn(session, model, request, sink, settings)
                except SdkStartError as exc:
                    first_line = exc.detail.splitlines()[0]
                    await sink.note(f"Agent SDK could not start ({first_line}); using the claude CLI")
                    reply = await self._cli_turn(session, model, request, settings)
            session.model = model
            return session.charge(reply)

        return await run_ladder(plan, attempt, sink)

    async def _sdk_turn(
        self, session: _Session, model: str, request: OracleRequest, sink: EventSink, settings: Settings
    ) -> Reply:
        if session.client is not None and session.streaming != settings.stream_reasoning:
            await self._close_client(session)  # reopened below with the current streaming option
        # One slot of the per-binary "claude" gate per turn, as the bridge takes; queueing counts
        # against the turn's deadline.
        async with self.resources.gates.slot("claude", settings.cli_max_parallel):
            return await self._exchange(session, model, request, sink, settings)

    async def _exchange(
        self, session: _Session, model: str, request: OracleRequest, sink: EventSink, settings: Settings
    ) -> Reply:
        """Send the turn on the session's client, opening (or resuming) one when none is open.

        A warm client whose CLI has died (killed, crashed, out of memory) is noticed, closed and
        resumed on a new CLI at the last good answer, once, within this same call.
        """
        from ask_fable.backends.agent_sdk import TurnCollector, map_sdk_error

        if session.client is not None and not session.client.alive:
            await self._close_client(session)
            await sink.note("the session's Claude Code process had ended; resuming the conversation")
        retried = False
        while True:
            warm = session.client is not None
            if not warm:
                await self._open(session, model, request.system, settings)
            assert session.client is not None and session.tail is not None
            collector = TurnCollector(model, sink, settings, session.tail)
            try:
                async for message in session.client.turn(request.prompt):
                    await collector.feed(message)
                reply = collector.reply()
            except BaseException as exc:
                await self._close_client(session)
                if not isinstance(exc, Exception):
                    raise
                if warm and not retried and collector.seen == 0:
                    # Nothing came back from a process that served the last turn: it died in between.
                    retried = True
                    await sink.note("the session's Claude Code process had ended; resuming the conversation")
                    continue
                raise map_sdk_error(exc, model, session.tail, started=True) from exc
            session.session_id = collector.session_id or session.session_id
            session.last_uuid = collector.last_uuid or session.last_uuid
            return reply

    async def _open(self, session: _Session, model: str, system: str, settings: Settings) -> None:
        from ask_fable.backends.agent_sdk import Conversation, build_options, map_sdk_error
        from ask_fable.backends.claude_sdk import resolve_cli_path

        cli = await resolve_cli_path(settings, self.resources)
        tail = StderrTail(settings)
        options = build_options(
            settings, model=model, system=system, cli_path=cli, stderr=tail, persist=True,
            resume=session.session_id, resume_at=session.last_uuid,
        )
        try:
            client = await Conversation.open(options)
        except Exception as exc:
            raise map_sdk_error(exc, model, tail, started=False) from exc
        session.client, session.tail = client, tail
        session.streaming = settings.stream_reasoning

    async def _cli_turn(
        self, session: _Session, model: str, request: OracleRequest, settings: Settings
    ) -> Reply:
        from ask_fable.backends.claude_cli import cli_ask

        reply = await cli_ask(settings, model, request, resources=self.resources, resume=session.session_id,
                              persist=True)
        session.session_id = reply.session_id or session.session_id
        return reply

    async def _close_client(self, session: _Session) -> None:
        client, session.client = session.client, None
        if client is not None:
            await client.close()

    # --- idle timers ----------------------------------------------------------------------------

    def _touch(self, session: _Session) -> None:
        session.last_used = time.monotonic()
        session.generation += 1
        key = (session.namespace, session.key)
        self._cancel_timer(key)
        if session.client is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - not on asyncio: close_idle() on later calls does it
            return
        self._timers[key] = loop.call_later(
            self.settings.session_idle_seconds, self._expire_later, key, session.generation
        )

    def _cancel_timer(self, key: SessionKey) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _expire_later(self, key: SessionKey, generation: int) -> None:
        self._timers.pop(key, None)
        task = asyncio.get_running_loop().create_task(self._expire(key, generation))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _expire(self, key: SessionKey, generation: int) -> None:
        session = self._sessions.get(key)
        if session is None or session.generation != generation or session.lock.locked():
            return
        async with session.lock:
            if session.generation == generation:
                await self._close_client(session)


class SessionOracle(Oracle):
    """One turn of a kept conversation behind the ordinary oracle interface."""

    provider = "anthropic"
    family = "anthropic"

    def __init__(
        self,
        sessions: ClaudeSessions,
        namespace: str,
        key: str,
        model_token: str,
        *,
        reset: bool = False,
        question: str | None = None,
    ) -> None:
        plan = model_plan(sessions.settings, model_token)
        current = sessions._sessions.get((namespace, key))
        self._sessions, self._namespace, self._key = sessions, namespace, key
        self._reset, self._question = reset, question
        self.token = plan.token
        self.model = current.model if current and current.model and not reset else plan.first

    def ensure_available(self) -> None:
        """Raise ``BinaryMissing`` when no Claude Code CLI exists (a file check)."""
        from ask_fable.backends.claude_sdk import cli_exists

        cli_exists(self._sessions.settings)

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Run the turn on the session (see :meth:`ClaudeSessions.ask`)."""
        return await self._sessions.ask(
            self._namespace, self._key, request, sink, self.token, self._reset, question=self._question
        )
