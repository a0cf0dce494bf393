"""Writing finished calls' records in groups: one store call for every call that finished meanwhile.

    call A ─▶ write ─▶ (writes A's records) ─────────────▶ returns
    call B ─▶ write ─▶ waits ─▶ (writes B, C and D's records) ─▶ returns
    calls C, D ─▶ write ─▶ wait ─────────────────────────────────▶ return

Each call awaits :meth:`RecordWriter.write` and returns only once its own records are written, so
an answer the caller has seen is never missing from the audit log. While one group is being
written, the calls that finish meanwhile queue up; when it is done, the first of them writes the
whole queue, and so on. The stores of this process thus see one writer at a time: no SQLite write
waits on another thread's lock, and many concurrent calls cost a few store calls instead of one each
(each a worker-thread hop, ``App.run_store``). Within a group, the calls' audit lines are one append
and their traces one transaction, and on a shared PostgreSQL database everything the group leaves is
one transaction (``stores/recorders.write_call_groups``); each call's records still fail on their own.
The server's
minimal trace of a call outside the pipeline goes the same way (:meth:`RecordWriter.run`).

A call admitted against its key's quotas hands its settlement to the same write: the group's
settlements run in the same worker-thread hop, after the records (in their transaction on a shared
PostgreSQL database), so a call ends with one store call instead of two. A settlement that fails is
handed back to the quota batcher, which retries it (``core/quota_batcher.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import anyio.lowlevel

from ask_fable.stores.interfaces import StoreRunner
from ask_fable.stores.recorders import CallRecords, CallStores, FailureFn, write_call_groups
from ask_fable.stores.views import SettleRequest


class RecordStores(CallStores, Protocol):
    """The stores a call's records go to, and how to call them from the event loop (the ``App``)."""

    @property
    def run_store(self) -> StoreRunner:
        """Runs one blocking store call (``App.run_store``)."""
        ...

    def settle_quotas(self, settles: Sequence[SettleRequest]) -> None:
        """End these calls' quota holds (blocking: run in the group's worker thread)."""
        ...

    def keep_unsettled(self, settles: Sequence[SettleRequest]) -> None:
        """Hand back settlements that did not land, to be retried with the next quota work."""
        ...


@dataclass(eq=False)
class _Pending:
    """One call's write, waiting for its turn: its records, or a job of its own."""

    job: Callable[[], None] | None = None
    records: tuple[CallRecords, FailureFn] | None = None
    #: The call's quota settlements, written after the records.
    settles: Sequence[SettleRequest] = ()
    settled: bool = False
    #: Set when the write is done, or when this call is to write the queue.
    turn: anyio.Event = field(default_factory=anyio.Event)
    written: bool = False
    failure: Exception | None = None


class RecordWriter:
    """Runs the record writes of calls, grouping those that finish while a group is written."""

    def __init__(self, stores: RecordStores) -> None:
        self._stores = stores
        self._queue: list[_Pending] = []
        self._writing = False
        #: The event loop the queue belongs to (a process may run several, one after another).
        self._loop: object = None

    async def write(self, records: CallRecords, on_failure: FailureFn,
                    settles: Sequence[SettleRequest] = ()) -> bool:
        """Write one call's records (each store failing on its own, reported to ``on_failure``), then
        its quota ``settles``; returns once they are written: False when the settlements did not land
        (they are then retried with the next quota work)."""
        pending = _Pending(records=(records, on_failure), settles=settles)
        await self._enqueue(pending)
        return pending.settled or not settles

    async def run(self, job: Callable[[], None]) -> None:
        """Run the blocking write ``job`` (as a store call runs, ``App.run_store``), grouped with the
        writes queued meanwhile; returns once it is done and raises what it raised."""
        await self._enqueue(_Pending(job=job))

    async def _enqueue(self, pending: _Pending) -> None:
        """Queue one write and return once it is done. Not cancellable: a call that was answered has
        its records written in any case."""
        try:  # the loop itself on asyncio (as anyio's token names it), at a tenth of the cost
            loop: object = asyncio.get_running_loop()
        except RuntimeError:  # another backend (trio)
            loop = anyio.lowlevel.current_token().native_token
        if loop is not self._loop:
            self._loop, self._queue, self._writing = loop, [], False
        self._queue.append(pending)
        with anyio.CancelScope(shield=True):
            if self._writing:
                await pending.turn.wait()
            if not pending.written:
                await self._write_queue()
        if pending.failure is not None:
            raise pending.failure

    async def _write_queue(self) -> None:
        self._writing = True
        group, self._queue = self._queue, []
        try:
            await self._stores.run_store(_run_group, self._stores, group)
        finally:
            unsettled = [settle for item in group if not item.settled for settle in item.settles]
            if unsettled:
                self._stores.keep_unsettled(unsettled)
            for item in group:
                item.written = True
                item.turn.set()
            if self._queue:
                self._queue[0].turn.set()  # the next call writes what queued meanwhile
            else:
                self._writing = False


def _run_group(stores: RecordStores, group: list[_Pending]) -> None:
    writes = [item.records for item in group if item.records is not None]
    settles = [settle for item in group for settle in item.settles]
    if writes:
        try:
            then = (lambda: stores.settle_quotas(settles)) if settles else None
            landed = write_call_groups(stores, writes, then)
        except Exception as exc:  # a bug in writing records: each call of the group gets it
            landed = False
            for item in group:
                if item.records is not None:
                    item.failure = exc
        for item in group:
            item.settled = landed and bool(item.settles)
    for item in group:
        if item.job is not None:
            try:
                item.job()
            except Exception as exc:  # it is its caller's failure, not the group's
                item.failure = exc
