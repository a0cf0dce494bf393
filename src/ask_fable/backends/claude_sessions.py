"""Warm Claude Code processes for Fable / Opus 5 conversations: a cache of the stored transcript.

A conversation's truth is its stored transcript (:mod:`ask_fable.stores.transcripts`); each turn
arrives with the exchanges the store holds as ``request.history``. What is kept here is one open
Claude Code CLI (:class:`~ask_fable.backends.agent_sdk.WarmClaudeCli`) per ``(namespace, key)``, so
a follow-up is written to the running CLI (tens of milliseconds) instead of starting a new one
(about half a second). Namespaces keep tools apart (``fable`` for ``ask``, ``opus5`` for
``ask_opus5`` and ``ask(model="opus5")``). Turns of one session run one at a time; different
sessions run in parallel.

Lifecycle of a session's CLI::

    first turn ─▶ connect (model ladder), seeded with the stored exchanges ─▶ turn ─▶ … ─▶ idle
    past session_idle_seconds, a failed turn, a dead CLI, a restart, or a history that no longer
    matches what the CLI holds ─▶ closed; the next turn opens a new CLI seeded from the store

A CLI is reused only while it holds exactly the exchanges the turn arrives with: the same system
prompt, and the same text turn for turn, checked by a digest of the exchanges as the store keeps
them, redacted (:func:`held_digest`). A turn or a reset made by another server process on the same
store (another replica, another client's stdio server) changes the stored transcript, so a warm
CLI here no longer matches it: a new one starts, its first prompt the earlier exchanges folded
before the question (:meth:`~ask_fable.backends.base.OracleRequest.folded_prompt`). No CLI keeps a
session file: every one runs with ``--no-session-persistence``. With ``ASK_FABLE_USE_CLI`` every turn is a
``claude -p`` process with the exchanges folded into its prompt.

Room: at most ``max_live_sessions`` sessions have a CLI open at once, and at most
``max_live_sessions_per_tenant`` of one tenant's. A turn that must open a CLI past either cap first
closes the least recently used open one that is not mid-turn (the tenant's own, for its cap); that
conversation stays stored and continues on a new CLI at its next turn. Both turns' results say so
in their ``note``. Sessions mid-turn are never closed, so with every open session busy the caps
are passed by the turns running at once.

Model: a conversation stays on the model that answered it, read from the model each stored exchange
names (:func:`pinned_model`), never from this process's memory: a replica that never saw the
session pins it the same way, and a reset made anywhere (an empty history) unpins it.

Cost: Claude Code reports a CLI's running total with every turn, so each reply's
``usage.cost_usd`` is turned into that turn's own cost here.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ask_fable.access import LOCAL_TENANT
from ask_fable.backends.base import EventSink, Exchange, Oracle, OracleRequest, Reply
from ask_fable.backends.claude_common import (
    CLAUDE_REPLY_TOKENS,
    ModelPlan,
    StderrTail,
    model_plan,
    run_ladder,
    unavailable_models,
)
from ask_fable.errors import OracleTimeout
from ask_fable.redact import redact

if TYPE_CHECKING:
    from ask_fable.backends.agent_sdk import WarmClaudeCli
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

SessionKey = tuple[str, str]

#: The note a turn gives when its conversation moves to a new Claude Code process.
RESEEDED = "the session's Claude Code process had ended; continuing the conversation from the stored turns"
#: The note of a turn that closed another session's process to make room for its own.
MADE_ROOM = ("to open this session, ask-fable closed the Claude Code process of {which} ({setting} is "
             "{limit}); that conversation is kept and continues from its stored turns at its next turn")
#: The note of the next turn of a session whose process was closed to make room.
WAS_CLOSED = ("this session's Claude Code process had been closed to make room for other sessions; the "
              "conversation continued from its stored turns")


def held_digest(exchanges: Iterable[Exchange]) -> str:
    """A digest of a conversation's exchanges: equal digests, equal conversations (each text is
    length-prefixed, so no two different sequences of texts run together into the same bytes)."""
    digest = hashlib.sha256()
    for exchange in exchanges:
        for text in (exchange.prompt, exchange.answer):
            data = text.encode("utf-8")
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
    return digest.hexdigest()


#: The digest of a conversation with no exchanges yet.
EMPTY = held_digest(())


def pinned_model(request: OracleRequest) -> str | None:
    """The model a conversation is pinned to: the one that answered its newest stored exchange
    (none for a conversation with no exchanges, or whose stored turn names no model)."""
    return request.history[-1].model if request.history else None


def tenant_of(namespace: str) -> str:
    """The tenant a session namespace belongs to (``fable@alice`` → ``alice``; a bare one is local)."""
    return namespace.partition("@")[2] or LOCAL_TENANT


@dataclass
class _Session:
    namespace: str
    key: str
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    client: WarmClaudeCli | None = None
    tail: StderrTail | None = None
    #: The ``stream_reasoning`` and system prompt the open client was started with.
    streaming: bool = False
    system: str | None = None
    #: :func:`held_digest` of the exchanges the open client's conversation holds.
    held: str = EMPTY
    last_used: float = field(default_factory=time.monotonic)
    generation: int = 0
    #: The running total Claude Code last reported on the open client.
    reported_cost: float = 0.0
    #: Its client was closed to make room for another session's (said at its next turn).
    evicted: bool = False

    def charge(self, reply: Reply) -> Reply:
        """``reply`` with ``usage.cost_usd`` cut down from the client's running total to this turn's cost."""
        usage = reply.usage
        if usage is None or usage.cost_usd is None:
            return reply
        total = usage.cost_usd
        # A total below the last one means the CLI started counting afresh: all of it is this turn's.
        turn = total - self.reported_cost if total >= self.reported_cost else total
        self.reported_cost = total
        return reply.model_copy(update={"usage": usage.model_copy(update={"cost_usd": round(turn, 10)})})

    def holds(self, request: OracleRequest) -> bool:
        """Whether the open client's conversation is exactly the one ``request`` continues."""
        return self.system == request.system and self.held == held_digest(request.history)


class ClaudeSessions:
    """The warm Claude Code processes of one server process's conversations.

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
        self, namespace: str, key: str, request: OracleRequest, sink: EventSink, model_token: str
    ) -> Reply:
        """Run one turn of session ``key`` in ``namespace``; ``request.history`` is the conversation so far.

        Raises the :mod:`ask_fable.errors` tree; a failed turn closes the session's CLI (the next
        turn starts a new one from the history it is given).
        """
        settings = self.settings
        plan = model_plan(settings, model_token, unavailable_models(self.resources))
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
                        reply = await self._turn(session, plan, request, sink, settings)
                        self._touch(session)
                        break
        except TimeoutError as exc:
            model = pinned_model(request) or plan.first
            raise OracleTimeout(f"{model} did not answer within {request.timeout:g}s") from exc
        return reply

    def live(self) -> int:
        """How many sessions have a warm CLI open now."""
        return sum(1 for session in list(self._sessions.values()) if session.client is not None)

    async def reset(self, namespace: str, key: str) -> bool:
        """Close and forget session ``key``'s process; whether there was one to forget."""
        session = self._sessions.get((namespace, key))
        if session is None:
            return False
        async with session.lock:
            await self._close_client(session)
            self._sessions.pop((namespace, key), None)
            self._cancel_timer((namespace, key))
        return True

    def oracle(self, namespace: str, key: str, model_token: str) -> Oracle:
        """The session's next turn as an :class:`Oracle`, so a mode can call it like any other."""
        return SessionOracle(self, namespace, key, model_token)

    def client_pid(self, namespace: str, key: str) -> int | None:
        """The pid of the session's open Claude Code process, if one is open."""
        session = self._sessions.get((namespace, key))
        return session.client.pid if session and session.client is not None else None

    async def close_idle(self) -> int:
        """Close clients idle longer than ``session_idle_seconds`` (their conversations stay stored)."""
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
        # A conversation stays on the model that answered it so far, as its stored turns say.
        pinned = pinned_model(request)
        if pinned:
            plan = ModelPlan(plan.token, (pinned,), plan.pinned_by or "the conversation")

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
            return session.charge(reply)

        return await run_ladder(plan, attempt, sink, unavailable_models(self.resources))

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
        """Send the turn on the session's client, opening one seeded with the history when needed.

        A warm client whose CLI has died (killed, crashed, out of memory) is noticed, closed and
        replaced, once, within this same call; so is one holding another conversation than the
        request's.
        """
        from ask_fable.backends.agent_sdk import TurnCollector, map_sdk_error

        if session.client is not None and not session.client.alive:
            await self._close_client(session)
            await sink.note(RESEEDED)
        if session.client is not None and not session.holds(request):
            await self._close_client(session)
        retried = False
        notes: list[str] = []
        while True:
            fresh = session.client is None
            if fresh:
                if session.evicted:
                    session.evicted = False
                    notes.append(WAS_CLOSED)
                notes += await self._make_room(session, settings)
                await self._open(session, model, request.system, settings)
            assert session.client is not None and session.tail is not None
            collector = TurnCollector(model, sink, settings, session.tail)
            prompt = request.folded_prompt() if fresh else request.prompt
            try:
                async for message in session.client.turn(prompt):
                    await collector.feed(message)
                reply = collector.reply()
            except BaseException as exc:
                await self._close_client(session)
                if not isinstance(exc, Exception):
                    raise
                if not fresh and not retried and collector.seen == 0:
                    # Nothing came back from a process that served the last turn: it died in between.
                    retried = True
                    await sink.note(RESEEDED)
                    continue
                raise map_sdk_error(exc, model, session.tail, started=True) from exc
            # What the store holds once this turn is written: the history as it came from there, and
            # this exchange redacted as the store redacts it.
            answered = Exchange(prompt=redact(request.prompt, settings), answer=redact(reply.text, settings),
                                model=reply.model)
            session.held = held_digest((*request.history, answered))
            return reply.model_copy(update={"note": "; ".join(notes)}) if notes else reply

    async def _make_room(self, opening: _Session, settings: Settings) -> list[str]:
        """Close the least recently used idle clients so that ``opening`` fits both caps; the notes
        for its caller."""
        notes = []
        tenant = tenant_of(opening.namespace)
        caps = ((settings.max_live_sessions_per_tenant, "ASK_FABLE_MAX_LIVE_SESSIONS_PER_TENANT", True),
                (settings.max_live_sessions, "ASK_FABLE_MAX_LIVE_SESSIONS", False))
        for limit, setting, own in caps:
            if limit <= 0:
                continue
            live = [s for s in self._sessions.values() if s.client is not None and s is not opening
                    and (not own or tenant_of(s.namespace) == tenant)]
            for victim in sorted(live, key=lambda s: s.last_used)[: max(0, len(live) - limit + 1)]:
                if await self._evict(victim):
                    which = ("your least recently used other session" if tenant_of(victim.namespace) == tenant
                             else "the least recently used session on this server")
                    notes.append(MADE_ROOM.format(which=which, setting=setting, limit=limit))
        return notes

    async def _evict(self, victim: _Session) -> bool:
        """Close ``victim``'s client unless it is mid-turn; whether it was closed."""
        try:
            victim.lock.acquire_nowait()
        except anyio.WouldBlock:
            return False
        try:
            if victim.client is None:
                return False
            await self._close_client(victim)
            victim.evicted = True
            self._cancel_timer((victim.namespace, victim.key))
            return True
        finally:
            victim.lock.release()

    async def _open(self, session: _Session, model: str, system: str, settings: Settings) -> None:
        from ask_fable.backends.agent_sdk import WarmClaudeCli, build_options, map_sdk_error
        from ask_fable.backends.claude_sdk import resolve_cli_path

        cli = await resolve_cli_path(settings, self.resources)
        tail = StderrTail(settings)
        options = build_options(settings, model=model, system=system, cli_path=cli, stderr=tail)
        try:
            client = await WarmClaudeCli.open(options)
        except Exception as exc:
            raise map_sdk_error(exc, model, tail, started=False) from exc
        session.client, session.tail = client, tail
        session.streaming, session.system = settings.stream_reasoning, system
        session.held, session.reported_cost = EMPTY, 0.0

    async def _cli_turn(
        self, session: _Session, model: str, request: OracleRequest, settings: Settings
    ) -> Reply:
        from ask_fable.backends.claude_cli import cli_ask

        session.reported_cost = 0.0  # each bridge run is a new CLI, counting from zero
        return await cli_ask(settings, model, request, resources=self.resources)

    async def _close_client(self, session: _Session) -> None:
        client, session.client = session.client, None
        session.held = EMPTY
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
    """One turn of a Claude conversation, on the session's warm process, behind the oracle interface."""

    provider = "anthropic"
    family = "anthropic"

    def __init__(self, sessions: ClaudeSessions, namespace: str, key: str, model_token: str) -> None:
        plan = model_plan(sessions.settings, model_token, unavailable_models(sessions.resources))
        self._sessions, self._namespace, self._key = sessions, namespace, key
        self.token = plan.token
        self.model = plan.first

    def ensure_available(self) -> None:
        """Raise ``BinaryMissing`` when no Claude Code CLI exists (a file check)."""
        from ask_fable.backends.claude_sdk import cli_exists

        cli_exists(self._sessions.settings)

    def reply_tokens(self, request: OracleRequest) -> int:
        """Claude Code's own room for the answer."""
        return CLAUDE_REPLY_TOKENS

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Run the turn on the session (see :meth:`ClaudeSessions.ask`)."""
        return await self._sessions.ask(self._namespace, self._key, request, sink, self.token)
