"""A process's quota work in batches: one store call for the admissions, settlements and lease
renewals that arrive while the previous batch runs.

    call A ─▶ admit ─▶ (admits A) ───────────────────────────────▶ runs
    call B ─▶ admit ─▶ waits ─▶ (settles X, admits B, C and D) ───▶ runs
    calls C, D ─▶ admit ─▶ wait ─────────────────────────────────▶ run

Each batch is one write transaction (``QuotaStore.apply``), exact across processes: a batch takes
its keys' rows first and admits in order, so 100 calls arriving at once cost a few transactions
instead of 200 (an admission and a settlement each). Every call in flight holds a lease that this
process renews in a batch every third of ``quota_lease_seconds`` (:meth:`QuotaBatcher.keep_alive`,
run by the MCP server over stdio and HTTP alike, and by the command line's in-process server); a
process that dies stops renewing, and its calls stop counting within that lease.
A settlement that fails (a database blip) is kept and retried with every later batch and
heartbeat until it lands; its call's lease is no longer renewed, so its place frees meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from ask_fable.stores.views import Admission, AdmitRequest, SettleRequest

if TYPE_CHECKING:
    from ask_fable.core.app import App

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Work:
    """One call's admission or settlement (neither: a heartbeat), waiting for its batch."""

    admit: AdmitRequest | None = None
    settle: SettleRequest | None = None
    turn: anyio.Event = field(default_factory=anyio.Event)
    done: bool = False
    admission: Admission | None = None
    failure: Exception | None = None


class QuotaBatcher:
    """Runs this process's quota work in batches and keeps its calls' leases alive."""

    def __init__(self, app: App) -> None:
        self.app = app
        #: Who holds this process's calls in flight (``ask-fable keys in-flight`` shows it).
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        #: Tickets of this process's calls in flight: their leases are renewed.
        self.live: set[str] = set()
        #: Settlements that failed, retried with the next batch.
        self.unsettled: list[SettleRequest] = []
        self._queue: list[_Work] = []
        self._running = False
        self._loop: object = None
        self._renewed_at = float("-inf")

    @property
    def lease_s(self) -> float:
        """How long a call's place lasts unless renewed (``quota_lease_seconds``)."""
        return self.app.settings.quota_lease_seconds

    @property
    def beat_s(self) -> float:
        """How often :meth:`heartbeat` should run: a third of the lease."""
        return self.lease_s / 3

    async def admit(self, request: AdmitRequest) -> Admission:
        """Admit one call (with whatever else is waiting); raises what the store raised."""
        work = _Work(admit=request)
        await self._enqueue(work)
        if work.failure is not None:
            raise work.failure
        assert work.admission is not None
        return work.admission

    async def settle(self, request: SettleRequest) -> bool:
        """End one call; False when the store failed (the settlement is then retried later)."""
        self.live.discard(request.ticket)
        work = _Work(settle=request)
        await self._enqueue(work)
        return work.failure is None

    async def heartbeat(self) -> None:
        """Renew the leases of this process's calls in flight and retry failed settlements."""
        if self.live or self.unsettled:
            await self._enqueue(_Work())

    async def keep_alive(self) -> None:
        """Run :meth:`heartbeat` every :attr:`beat_s` until cancelled; a beat that fails (the store is
        down) is logged and the next one tries again."""
        while True:
            await anyio.sleep(self.beat_s)
            try:
                await self.heartbeat()
            except Exception:
                log.warning("could not renew this server's calls in flight; retrying")

    async def _enqueue(self, work: _Work) -> None:
        """Queue ``work`` and return once its batch ran. Not cancellable: an admitted call must be
        known to be admitted, and a settlement must be tried."""
        try:  # the loop itself on asyncio (as anyio's token names it), at a tenth of the cost
            loop: object = asyncio.get_running_loop()
        except RuntimeError:  # another backend (trio)
            loop = anyio.lowlevel.current_token().native_token
        if loop is not self._loop:
            self._loop, self._queue, self._running = loop, [], False
        self._queue.append(work)
        with anyio.CancelScope(shield=True):
            if self._running:
                await work.turn.wait()
            if not work.done:
                await self._run_batch()

    async def _run_batch(self) -> None:
        self._running = True
        batch, self._queue = self._queue, []
        settles = [*self.unsettled, *(w.settle for w in batch if w.settle is not None)]
        self.unsettled = []
        admits = [w for w in batch if w.admit is not None]
        now, lease = self.app.clock.now(), self.lease_s
        renew = sorted(self.live) if now - self._renewed_at >= self.beat_s * 0.8 else []
        try:
            admissions = await self.app.run_store(
                self.app.quotas.apply, settles, [w.admit for w in admits if w.admit is not None], renew,
                self.holder, now, lease)
        except Exception as exc:
            # Kept with any handed back meanwhile (``App.keep_unsettled``, by the record writer).
            self.unsettled = [*settles, *self.unsettled]
            for item in batch:
                item.failure = exc
        else:
            if renew:
                self._renewed_at = now
            for item, admission in zip(admits, admissions, strict=True):
                item.admission = admission
                if admission.admitted and admission.ticket is not None:
                    self.live.add(admission.ticket)
        finally:
            for item in batch:
                item.done = True
                item.turn.set()
            if self._queue:
                self._queue[0].turn.set()  # the next call runs what queued meanwhile
            else:
                self._running = False
