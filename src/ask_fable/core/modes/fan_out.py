"""A council's members, all asked at once, and the two deadlines that end their run.

Every member starts at the same time (past ``max_parallel`` members the rest queue for a slot, and
CLI members also wait for their binary's gate). Two deadlines end the members' run:

- **the council bound**: members get the first two thirds of ``council_deadline``
  (:func:`member_window`), the rest is the synthesis's; whoever still runs then is cancelled as
  ``kind: "timeout"``;
- **the straggler cut**: once a quorum has answered (:func:`quorum_size`: half of the members still
  able to answer, rounded up), the others get :meth:`StragglerRule.wait` more seconds, a multiple
  of the slowest answer so far with a floor, then are cancelled as ``kind: "straggler"``, and a
  progress notification names them. ``council_cut_stragglers`` off leaves only the bound.

Both deadlines are shared with the members' backend calls (:mod:`ask_fable.backends.deadline`), so
a retry never waits past them, and cancelling a member closes its HTTP request and ends its CLI's
process group (each backend's own cancellation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from ask_fable.backends.base import Oracle, OracleRequest
from ask_fable.backends.deadline import SharedDeadline, bounded_by
from ask_fable.config import Settings
from ask_fable.core.modes.base import MemberOutcome, ModeContext
from ask_fable.core.spans import Step

if TYPE_CHECKING:
    from pydantic import JsonValue

#: Share of the council's wall-clock bound reserved for the synthesis. With the default bound
#: (timeout + 120 s) and timeout 240 s, members keep their whole 240 s and the synthesis has 120 s.
SYNTHESIS_SHARE = 1 / 3


def member_window(bound: float) -> float:
    """Seconds council members may run inside a council ``bound``; the rest is the synthesis's."""
    return bound * (1 - SYNTHESIS_SHARE)


def quorum_size(members: int, without_answer: int) -> int:
    """Answers that make a quorum of ``members`` when ``without_answer`` of them already finished
    without one (failed, refused, not configured): half of the rest, rounded up, at least one."""
    return max(1, math.ceil((members - without_answer) / 2))


@dataclass(frozen=True)
class StragglerRule:
    """How long members still running after the quorum may take: ``max(floor, factor × slowest)``."""

    factor: float
    floor: float

    @classmethod
    def from_settings(cls, settings: Settings) -> StragglerRule | None:
        """The configured rule, or ``None`` when stragglers are not cut."""
        if not settings.council_cut_stragglers:
            return None
        return cls(settings.council_straggler_factor, settings.council_straggler_floor)

    def wait(self, slowest: float) -> float:
        """Seconds granted after the quorum, given the slowest answer so far took ``slowest``."""
        return max(self.floor, self.factor * slowest)

    def describe(self) -> str:
        """The rule in words, for a straggler's detail."""
        return f"{self.factor:g}× the slowest answer, at least {self.floor:g}s"


@dataclass(frozen=True)
class _Cut:
    """The straggler cut once armed: when, how long after the quorum, which quorum, by what rule."""

    at: float
    wait: float
    quorum: str
    rule: str


class _MemberRun:
    """The members of one council as they run: outcomes, start times and the straggler cut."""

    def __init__(self, oracles: list[Oracle], request: OracleRequest, mctx: ModeContext, total_steps: int,
                 started_at: float) -> None:
        settings = mctx.settings
        self.oracles, self.request, self.mctx, self.total_steps = oracles, request, mctx, total_steps
        self.bound = settings.council_deadline
        self.window = member_window(self.bound)
        self.rule = StragglerRule.from_settings(settings)
        self.limiter = anyio.CapacityLimiter(settings.max_parallel)
        self.scope = anyio.CancelScope(deadline=started_at + self.window)
        self.shared = SharedDeadline(
            started_at + self.window,
            f"the members' {self.window:.0f}s share of the council's {self.bound:.0f}s bound",
        )
        self.results: dict[int, MemberOutcome] = {}
        self.began: dict[int, float] = {}
        self.steps: dict[int, Step] = {}
        self.cut: _Cut | None = None

    async def run(self) -> list[MemberOutcome]:
        """Ask every member; return their outcomes in the members' order, the cut ones included."""
        try:
            with self.scope:
                async with anyio.create_task_group() as group:
                    for index, oracle in enumerate(self.oracles):
                        group.start_soon(self._ask, index, oracle)
        except BaseException as exc:  # the whole council was cancelled: end its members' spans
            for step in self.steps.values():
                step.abandon(exc)
            raise
        unfinished = [index for index in range(len(self.oracles)) if index not in self.results]
        for index in unfinished:
            self.results[index] = self._cancelled(index)
        if self.cut is not None and unfinished:
            names = ", ".join(self.oracles[index].token for index in unfinished)
            await self.mctx.progress(
                len(self.oracles), self.total_steps,
                f"cut as stragglers: {names} (still running {self.cut.wait:.1f}s after "
                f"{self.cut.quorum} had answered)",
            )
        return [self.results[index] for index in range(len(self.oracles))]

    async def _ask(self, index: int, oracle: Oracle) -> None:
        async with self.limiter:
            self.began[index] = anyio.current_time()
            # Opened here: a member cut while it runs has its model call's span ended by _cancelled.
            step = self.steps[index] = self.mctx.provider_step(oracle, "member")
            with bounded_by(self.shared):
                outcome = await self.mctx.call_oracle(oracle, self.request, role="member", step=step)
        self.results[index] = outcome
        done = len(self.results)
        await self.mctx.progress(done, self.total_steps,
                                 f"{oracle.token}: {outcome.status} ({done}/{len(self.oracles)})", echo=False)
        await self._arm_cut()

    async def _arm_cut(self) -> None:
        """Set the straggler cut the first time a quorum has answered while members still run."""
        size = len(self.oracles)
        if self.rule is None or self.cut is not None or len(self.results) == size:
            return
        answered = [m for m in self.results.values() if m.ok]
        if not answered or len(answered) < quorum_size(size, len(self.results) - len(answered)):
            return
        slowest = max(m.elapsed_ms for m in answered) / 1000
        wait = self.rule.wait(slowest)
        at = anyio.current_time() + wait
        if at >= self.shared.at:
            return  # the council bound comes first: nothing to cut early
        quorum = f"{len(answered)}/{size}"
        self.cut = _Cut(at, wait, quorum, self.rule.describe())
        self.scope.deadline = at
        self.shared.tighten(at, f"the council's straggler cut ({wait:.1f}s after {quorum} members answered)")
        waiting = [o.token for i, o in enumerate(self.oracles) if i not in self.results]
        self.mctx.trace.event("council.quorum", answered=len(answered), asked=size, straggler_wait_s=wait)
        await self.mctx.progress(len(self.results), self.total_steps,
                                 f"quorum {quorum}: waiting up to {wait:.1f}s more for {', '.join(waiting)}")

    def _cancelled(self, index: int) -> MemberOutcome:
        """The outcome of a member still running when its deadline came, recorded in the trace."""
        oracle = self.oracles[index]
        began = self.began.get(index)
        elapsed = anyio.current_time() - began if began is not None else 0.0
        ran = f"still running after {elapsed:.1f}s" if began is not None else "never started (no free slot)"
        if self.cut is not None:
            kind = "straggler"
            detail = (f"{ran}, {self.cut.wait:.1f}s after {self.cut.quorum} members had answered "
                      f"(the straggler wait: {self.cut.rule}); cancelled so the "
                      "answers in could be synthesized")
        else:
            kind = "timeout"
            detail = (f"{ran}, the members' {self.window:.1f}s share of the council's {self.bound:.0f}s "
                      "wall-clock bound; cancelled so the answers in could be synthesized")
        outcome = MemberOutcome(oracle.token, oracle.model, oracle.provider, kind, kind=kind, role="member",
                                elapsed_ms=int(elapsed * 1000), detail=detail)
        ended: dict[str, JsonValue] = dict(token=oracle.token, provider=oracle.provider, model=oracle.model,
                                     role="member", status=kind, kind=kind, elapsed_ms=outcome.elapsed_ms,
                                     cut=True)
        step = self.steps.get(index)
        if step is not None:
            step.finish("provider.end", **ended)
        else:  # never started: no span to end
            self.mctx.trace.event("provider.end", **ended)
        self.mctx.members.append(outcome)
        return outcome


async def run_members(oracles: list[Oracle], request: OracleRequest, mctx: ModeContext, total_steps: int,
                      started_at: float) -> list[MemberOutcome]:
    """Ask every oracle at once (``started_at`` is the council's start, ``anyio.current_time()``)
    until they all finished, the straggler cut or the members' share of the council bound; the
    ones still running then are cancelled and reported as stragglers or timeouts."""
    return await _MemberRun(oracles, request, mctx, total_steps, started_at).run()
