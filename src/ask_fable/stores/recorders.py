"""Writing what a finished call leaves behind: one recorder per store, each failing on its own.

    CallRecords ─▶ saved answer ─▶ audit ─▶ hub turn ─▶ trace bundle ─▶ trace
                   (AnswerArchive)  (AuditStore) (HubStore) (TraceRecordStore) ──────┘

:func:`write_call_groups` runs once, in one worker thread, before the answer is returned, so every
record is durable by then. A recorder that raises costs only its own record (reported through
``on_failure`` and noted in the trace, written last for that reason). Calls that finish together
are written as a group (one audit append, one trace transaction; on a shared database one
transaction for all, ``CallStores.records_transaction``); if a group write fails, each record is
written again on its own. The calls' quota settlements may follow in the same transaction
(``then``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from ask_fable.errors import NotConfigured, Unavailable
from ask_fable.stores.interfaces import AnswerArchive, AuditStore, HubStore, TraceRecordStore
from ask_fable.stores.records import AuditRecord, HubTurn, SavedAnswer, TraceBundle, TraceEvent, TraceRecord


class CallStores(Protocol):
    """Where a call's records go (the ``App`` provides them, each opened on first use)."""

    @property
    def answers(self) -> AnswerArchive:
        """Saved answers."""
        ...

    @property
    def audit(self) -> AuditStore:
        """The audit trail."""
        ...

    @property
    def hub(self) -> HubStore | None:
        """The session hub, ``None`` when off."""
        ...

    @property
    def traces(self) -> TraceRecordStore:
        """Traces and bundles."""
        ...

    def records_transaction(self) -> AbstractContextManager[None]:
        """The transaction a group of calls' records share where their stores share a database."""
        ...


@dataclass
class CallRecords:
    """One finished call's records; ``None`` where that record is not kept for this call."""

    audit: AuditRecord
    trace: TraceRecord
    bundle: TraceBundle | None = None
    hub_turn: HubTurn | None = None
    answer: SavedAnswer | None = None
    #: Where the saved answer went, once written.
    saved: str | None = None


def _save_answer(stores: CallStores, records: CallRecords) -> None:
    if records.answer is None:
        return
    records.saved = stores.answers.save_answer(records.answer)
    if records.bundle is not None:
        records.bundle.result["saved"] = records.saved


def _append_audit(stores: CallStores, records: CallRecords) -> None:
    stores.audit.append(records.audit)


def _append_audits(stores: CallStores, group: list[CallRecords]) -> None:
    stores.audit.append_many([records.audit for records in group])


def _record_hub_turn(stores: CallStores, records: CallRecords) -> None:
    if records.hub_turn is None:
        return
    hub = stores.hub
    if hub is not None:
        hub.record_turn(records.hub_turn)


def _write_bundle(stores: CallStores, records: CallRecords) -> None:
    if records.bundle is not None:
        stores.traces.write_bundle(records.trace.trace_id, records.bundle)


def _record_trace(stores: CallStores, records: CallRecords) -> None:
    stores.traces.record(records.trace)


def _record_traces(stores: CallStores, group: list[CallRecords]) -> None:
    stores.traces.record_many([records.trace for records in group])


@dataclass(frozen=True)
class Recorder:
    """Writes one record of a call to its store."""

    name: str
    write: Callable[[CallStores, CallRecords], None]
    #: Writes this record of several calls at once (all or none), where its store can.
    write_many: Callable[[CallStores, list[CallRecords]], None] | None = None


#: In order: the saved answer first (the bundle shows where it went), the trace last (it notes
#: which of the others failed).
RECORDERS: tuple[Recorder, ...] = (
    Recorder("saved answer", _save_answer),
    Recorder("audit", _append_audit, _append_audits),
    Recorder("hub", _record_hub_turn),
    Recorder("trace bundle", _write_bundle),
    Recorder("trace", _record_trace, _record_traces),
)

FailureFn = Callable[[str, Exception], None]


def write_call_groups(stores: CallStores, calls: Sequence[tuple[CallRecords, FailureFn]],
                      then: Callable[[], None] | None = None) -> bool:
    """Write several calls' records, recorder by recorder, each call's failures reported to its own
    ``on_failure``, in one transaction where the stores share a database. A record its store takes
    in groups is written for every call at once; if that write fails, it is written call by call, so
    only the records that fail on their own are lost.

    ``then`` (the calls' quota settlements) runs after the records, in the same transaction where
    its store shares it: the calls' last write is one commit. Should the shared transaction roll
    back, ``then`` runs again after the records are written on their own. Returns False when
    ``then`` failed (nothing of it was kept), True otherwise."""
    failures: list[tuple[FailureFn, str, Exception]] = []
    events_before = [len(records.trace.events) for records, _ in calls]
    landed = True
    try:
        with stores.records_transaction():
            _write_groups(stores, calls, lambda fn, name, exc: failures.append((fn, name, exc)))
            landed = _run_then(then)
    except (Unavailable, NotConfigured):
        # The shared transaction did not commit, so none of it was kept: each store on its own now.
        for (records, _), count in zip(calls, events_before, strict=True):
            del records.trace.events[count:]
        _write_groups(stores, calls, lambda fn, name, exc: fn(name, exc))
        return _run_then(then)
    for on_failure, name, exc in failures:
        on_failure(name, exc)
    return landed


def _run_then(then: Callable[[], None] | None) -> bool:
    if then is None:
        return True
    try:
        then()
    except Exception:  # its caller keeps it for later; a shared transaction it failed is rolled back
        return False
    return True


def _write_groups(stores: CallStores, calls: Sequence[tuple[CallRecords, FailureFn]],
                  failed: Callable[[FailureFn, str, Exception], None]) -> None:
    group = [records for records, _ in calls]
    for recorder in RECORDERS:
        if recorder.write_many is not None and len(group) > 1:
            try:
                recorder.write_many(stores, group)
                continue
            except Exception:  # retried one by one below, where each failure is reported
                pass
        for records, on_failure in calls:
            try:
                recorder.write(stores, records)
            except Exception as exc:  # isolation is the point: the next store still gets its record
                failed(on_failure, recorder.name, exc)
                events = records.trace.events
                events.append(TraceEvent(t_ms=events[-1].t_ms if events else None, name="store.error",
                                         attrs={"store": recorder.name, "error": type(exc).__name__}))
