"""Request traces: an index of finished calls with ordered events, plus full-mode bundles.

Safe mode stores metadata only (``record``). Full mode adds a bundle per trace
(``write_bundle``): JSONL whose lines are a header, one
``item`` line per content field (long strings split into chunks), and an ``end`` line that
records whether the size cap truncated anything. Every string is redacted before it is written.
On SQLite the index is ``settings.traces_db`` and a bundle a file under ``settings.traces_dir``;
on PostgreSQL both live in the database (the ``bundles`` table), so any replica can read them.

Every trace belongs to a tenant, and so does its bundle: a listing, a look-up or an excerpt names
the tenant it covers (``ALL_TENANTS`` for an admin's view), so one tenant never sees, pages
through or reads the content of another's calls.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from sqlalchemy import Double, Text, bindparam, delete, func, insert, select, tuple_

from ask_fable.access import ALL_TENANTS, LOCAL_TENANT
from ask_fable.files import atomic_write_bytes
from ask_fable.redact import redact, redact_obj, redacted_json_all, secret_list
from ask_fable.stores.cache import bump_write_counter
from ask_fable.stores.db import Database, database_for, per_dialect, upsert
from ask_fable.stores.driver import run, run_each, run_many
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import TraceBundle, TraceEvent, TraceRecord, TraceSummary
from ask_fable.stores.tables import trace_bundles, trace_counters, trace_events, trace_providers
from ask_fable.stores.tables import traces as _traces
from ask_fable.stores.trace_ids import valid_trace_id
from ask_fable.stores.views import TraceDetail

if TYPE_CHECKING:
    from sqlalchemy import BindParameter, ColumnElement, Connection, Row, RowMapping, Select
    from sqlalchemy.sql import Executable

    from ask_fable.config import Settings

#: Every this many recorded traces, the oldest beyond ``trace_max_rows`` are swept with their bundles.
SWEEP_EVERY = 100

SCHEMA_VERSION = 2
#: A trace's columns as listed and returned, in order.
_LIST_COLUMNS = tuple(_traces.c[name] for name in (
    "trace_id", "tenant", "ts", "tool", "mode", "status", "kind", "session", "project", "agent_id",
    "elapsed_ms", "providers", "models", "cached"))
_FILTERS = ("tool", "status", "session", "project")
#: One trace as rows: its id, time, ``traces`` row, providers and ``trace_events`` rows.
_TraceRows = tuple[str, float, dict[str, Any], list[str], list[dict[str, Any]]]

# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_ID: BindParameter[str] = bindparam("trace_id", type_=Text())
_INSERT_EVENTS = insert(trace_events)
_DELETE_EVENTS = delete(trace_events).where(trace_events.c.trace_id == _ID)
_DELETE_PROVIDERS = delete(trace_providers).where(trace_providers.c.trace_id == _ID)
_COUNT = select(func.count()).select_from(_traces)
_OLDEST = (select(_traces.c.trace_id).order_by(_traces.c.ts, _traces.c.trace_id)
           .limit(bindparam("limit")))
_DELETE_DOOMED = delete(_traces).where(_traces.c.trace_id == bindparam("doomed"))
_DELETE_DOOMED_BUNDLES = delete(trace_bundles).where(trace_bundles.c.trace_id == bindparam("doomed"))
#: A trace's columns, or only its time, by id: of any tenant (``True``) or of the one named.
_TRACE_OF = {every: select(*_LIST_COLUMNS).where(_traces.c.trace_id == _ID) for every in (True, False)}
_TRACE_OF[False] = _TRACE_OF[False].where(_traces.c.tenant == bindparam("tenant"))
_TS_OF = {every: select(_traces.c.ts).where(_traces.c.trace_id == _ID) for every in (True, False)}
_TS_OF[False] = _TS_OF[False].where(_traces.c.tenant == bindparam("tenant"))
_EVENTS_OF = (select(trace_events.c.t_ms, trace_events.c.name, trace_events.c.attrs)
              .where(trace_events.c.trace_id == _ID).order_by(trace_events.c.seq).limit(bindparam("limit")))
_BUNDLE_ID_OF = select(trace_bundles.c.trace_id).where(trace_bundles.c.trace_id == _ID)
_BUNDLE_OF = select(trace_bundles.c.content).where(trace_bundles.c.trace_id == _ID)


@per_dialect
def _NEW(dialect: str) -> Executable:
    return (upsert(dialect, _traces).on_conflict_do_nothing(index_elements=["trace_id"])
            .returning(_traces.c.trace_id))


@per_dialect
def _REPLACE(dialect: str) -> Executable:
    insert = upsert(dialect, _traces)
    return insert.on_conflict_do_update(
        index_elements=["trace_id"],
        set_={column.name: insert.excluded[column.name] for column in _traces.c if column.name != "trace_id"})


@per_dialect
def _ADD_PROVIDERS(dialect: str) -> Executable:
    return upsert(dialect, trace_providers).on_conflict_do_nothing()


@per_dialect
def _PUT_BUNDLE(dialect: str) -> Executable:
    bundle = upsert(dialect, trace_bundles)
    return bundle.on_conflict_do_update(index_elements=["trace_id"], set_={
        "tenant": bundle.excluded.tenant, "content": bundle.excluded.content})


@functools.cache
def _listing(tenant: bool, filters: tuple[str, ...], provider: bool, before: bool) -> Select[Any]:
    """The listing of one shape: filtered by tenant, by the ``_FILTERS`` named, by provider, paged
    back from a ``(before_ts, before_id)`` cursor; values bound at execution (128 shapes at most)."""
    where: list[ColumnElement[bool]] = [_traces.c[name] == bindparam(name)
                                        for name in (("tenant",) if tenant else ()) + filters]
    query = select(*_LIST_COLUMNS)
    if provider:
        # Newest first in the provider's own index: the trace's time and id are kept there too.
        query = query.select_from(trace_providers.join(
            _traces, _traces.c.trace_id == trace_providers.c.trace_id))
        where.append(trace_providers.c.provider == bindparam("provider"))
        order_ts, order_id = trace_providers.c.ts, trace_providers.c.trace_id
    else:
        order_ts, order_id = _traces.c.ts, _traces.c.trace_id
    if before:
        where.append(tuple_(order_ts, order_id) < tuple_(bindparam("before_ts", type_=Double()),
                                                         bindparam("before_id", type_=Text())))
    return query.where(*where).order_by(order_ts.desc(), order_id.desc()).limit(bindparam("limit"))


class TraceStore:
    """Finished traces over SQLite at ``settings.traces_db`` (bundles under ``settings.traces_dir``) or
    PostgreSQL (bundles in its ``bundles`` table): the ``TraceRecordStore``."""

    def __init__(self, settings: Settings, *, engines: Engines | None = None) -> None:
        self.settings = settings
        self.db: Database = database_for(settings, "traces", settings.traces_db, engines=engines)
        self._in_db = self.db.dialect == "postgres"
        self.bundle_dir = Path(settings.traces_dir)
        self._secrets = secret_list(settings)

    # --- writing ------------------------------------------------------------------------------
    def _label(self, value: Any) -> str | None:
        text = _text(value)
        return redact(text, self._secrets) if text else text

    def record(self, trace: TraceRecord) -> None:
        """Store one finished trace (replacing an earlier record with the same ``trace_id``)."""
        self.record_many([trace])

    def record_many(self, traces: Sequence[TraceRecord]) -> None:
        """Store several finished traces in one transaction: all of them or, if it fails, none."""
        # A trace given twice is recorded as last given.
        rows = list({row[0]: row for row in (self._rows(trace) for trace in traces)}.values())
        if not rows:
            return
        # The group's providers and events, each one statement after its traces' rows.
        provider_rows = [{"provider": p, "ts": ts, "trace_id": trace_id}
                         for trace_id, ts, _row, providers, _events in rows for p in dict.fromkeys(providers)]
        event_rows = [event for *_, events in rows for event in events]

        def store(conn: Connection) -> list[str]:
            # A new trace (nearly always) is one insert; one recorded before is replaced whole.
            inserted = run_each(conn, _NEW(conn), [row for _id, _ts, row, _p, _e in rows])
            for (trace_id, _ts, row, _providers, _events), returned in zip(rows, inserted, strict=True):
                if not returned:
                    run(conn, _DELETE_EVENTS, {"trace_id": trace_id})
                    run(conn, _DELETE_PROVIDERS, {"trace_id": trace_id})
                    run(conn, _REPLACE(conn), row)
            if provider_rows:
                run_many(conn, _ADD_PROVIDERS(conn), provider_rows)
            if event_rows:
                run_many(conn, _INSERT_EVENTS, event_rows)
            count = bump_write_counter(conn, by=len(rows), table=trace_counters)
            # Swept when the count passes a multiple of SWEEP_EVERY, however many this group added.
            due = count // SWEEP_EVERY > (count - len(rows)) // SWEEP_EVERY
            return self._sweep(conn) if due else []

        # A sweep may meet another replica's sweep or record on the same old rows: run_write runs the
        # loser of such a deadlock again.
        self._drop_bundles(self.db.run_write(store))

    def _rows(self, trace: TraceRecord) -> _TraceRows:
        """One trace's id, time, ``traces`` row, providers and ``trace_events`` rows (labels redacted)."""
        trace_id = trace.trace_id
        if not valid_trace_id(trace_id):
            raise ValueError(f"invalid trace_id: {trace_id!r}")
        ts = trace.ts
        providers = [p for p in trace.providers if p]
        models = [m for m in trace.models if m]
        row: dict[str, Any] = {
            "trace_id": trace_id, "tenant": trace.tenant, "ts": ts, "tool": trace.tool, "mode": trace.mode,
            "status": trace.status, "kind": trace.kind, "session": self._label(trace.session),
            "project": self._label(trace.project), "agent_id": self._label(trace.agent_id),
            "elapsed_ms": _number(trace.elapsed_ms), "providers": json.dumps(providers),
            "models": json.dumps(models), "cached": 1 if trace.cached else 0,
        }
        attrs = redacted_json_all([event.attrs for event in trace.events], self._secrets)
        event_rows = [
            {"trace_id": trace_id, "seq": seq, "t_ms": _number(event.t_ms), "name": event.name or "event",
             "attrs": attrs[seq]}
            for seq, event in enumerate(trace.events)
        ]
        return trace_id, ts, row, providers, event_rows

    def _sweep(self, conn: Connection) -> list[str]:
        """Delete the oldest traces beyond ``trace_max_rows`` (down to 90% of it); their ids."""
        cap = int(getattr(self.settings, "trace_max_rows", 0) or 0)
        if cap <= 0:
            return []
        count = int(conn.scalar(_COUNT) or 0)
        if count <= cap:
            return []
        doomed = list(conn.scalars(_OLDEST, {"limit": count - int(cap * 0.9)}))
        # Events and providers go with their traces (ON DELETE CASCADE).
        conn.execute(_DELETE_DOOMED, [{"doomed": t} for t in doomed])
        if self._in_db:
            conn.execute(_DELETE_DOOMED_BUNDLES, [{"doomed": t} for t in doomed])
        return doomed

    def sweep(self) -> int:
        """Apply the ``trace_max_rows`` cap now; returns how many traces were deleted."""
        swept = self.db.run_write(self._sweep)
        self._drop_bundles(swept)
        return len(swept)

    def _drop_bundles(self, trace_ids: list[str]) -> None:
        if self._in_db:
            return  # deleted with their traces
        for trace_id in trace_ids:
            with contextlib.suppress(OSError):
                self.bundle_path(trace_id).unlink(missing_ok=True)

    # --- reading ------------------------------------------------------------------------------
    def list(
        self,
        tenant: str,
        limit: int = 20,
        tool: str | None = None,
        status: str | None = None,
        provider: str | None = None,
        session: str | None = None,
        project: str | None = None,
        before: str | float | None = None,
    ) -> list[TraceSummary]:
        """The tenant's traces (every tenant's for ``ALL_TENANTS``) newest first, without events;
        ``before`` (one of those traces' id, or epoch seconds) pages back."""
        limit = max(1, min(int(limit), int(self.settings.trace_query_max_events)))
        values: dict[str, Any] = {"tool": tool, "status": status, "session": session, "project": project}
        filters = tuple(name for name in _FILTERS if values[name] is not None)
        params = {name: values[name] for name in filters}
        params["limit"] = limit
        if tenant != ALL_TENANTS:
            params["tenant"] = tenant
        if provider is not None:
            params["provider"] = provider
        query = _listing(tenant != ALL_TENANTS, filters, provider is not None, before is not None)
        with self.db.read() as conn:
            if before is not None:
                cursor = self._cursor(conn, tenant, before)
                if cursor is None:
                    return []
                params["before_ts"], params["before_id"] = cursor
            rows = conn.execute(query, params).mappings().all()
        return [_trace_row(r) for r in rows]

    def _cursor(self, conn: Connection, tenant: str, before: str | float) -> tuple[float, str] | None:
        if isinstance(before, int | float) and not isinstance(before, bool):
            return float(before), ""
        text = str(before).strip()
        try:
            return float(text), ""
        except ValueError:
            pass
        row = self._row(conn, tenant, text, _TS_OF)
        return None if row is None else (float(row.ts), text)

    @staticmethod
    def _row(conn: Connection, tenant: str, trace_id: str,
             queries: dict[bool, Select[Any]]) -> Row[Any] | None:
        """The row ``queries`` select of the trace ``trace_id`` when it belongs to ``tenant`` (any, for
        ``ALL_TENANTS``)."""
        if tenant == ALL_TENANTS:
            return conn.execute(queries[True], {"trace_id": trace_id}).first()
        return conn.execute(queries[False], {"trace_id": trace_id, "tenant": tenant}).first()

    def get(self, tenant: str, trace_id: str) -> TraceDetail | None:
        """One of the tenant's traces (anyone's for ``ALL_TENANTS``) with its ordered events and
        artifact references, or ``None``."""
        if not valid_trace_id(trace_id):
            return None
        max_events = int(self.settings.trace_query_max_events)
        max_bytes = int(self.settings.trace_query_max_bytes)
        with self.db.read() as conn:
            row = self._row(conn, tenant, trace_id, _TRACE_OF)
            if row is None:
                return None
            event_rows = conn.execute(_EVENTS_OF, {"trace_id": trace_id, "limit": max_events + 1}).all()
        events: list[TraceEvent] = []
        used = 0
        truncated = len(event_rows) > max_events
        for t_ms, name, attrs in event_rows[:max_events]:
            used += len(attrs) + len(name)
            if used > max_bytes:
                truncated = True
                break
            try:
                parsed = json.loads(attrs)
            except ValueError:
                parsed = {}
            events.append(TraceEvent(t_ms=t_ms, name=name, attrs=parsed if isinstance(parsed, dict) else {}))
        bundle = self._bundle_location(trace_id)
        return TraceDetail(**_summary_fields(row._mapping), events=events, events_truncated=truncated,
                           artifacts={} if bundle is None else {"bundle": bundle})

    def _bundle_location(self, trace_id: str) -> str | None:
        """Where the bundle of ``trace_id`` is, when it has one."""
        if self._in_db:
            with self.db.read() as conn:
                found = conn.scalar(_BUNDLE_ID_OF, {"trace_id": trace_id})
            return f"postgresql:traces/{trace_id}" if found else None
        bundle = self.bundle_path(trace_id)
        return str(bundle) if bundle.exists() else None

    def count(self) -> int:
        """How many traces are stored."""
        with self.db.read() as conn:
            return int(conn.scalar(_COUNT) or 0)

    # --- bundles ------------------------------------------------------------------------------
    def bundle_path(self, trace_id: str) -> Path:
        """Where the bundle of ``trace_id`` lives (whether or not it exists)."""
        if not valid_trace_id(trace_id):
            raise ValueError(f"invalid trace_id: {trace_id!r}")
        return self.bundle_dir / f"{trace_id}.jsonl"

    def write_bundle(self, trace_id: str, content: TraceBundle | Mapping[str, Any]) -> Path | str | None:
        """Write the full-mode bundle of ``trace_id``: redacted, capped, atomic, ``0600``.

        ``content`` is the call's ``TraceBundle`` or any mapping of field → content: each field
        becomes its own items, in order. The caller decides whether full mode is on. Returns the
        path (``postgresql:traces/<id>`` on PostgreSQL), or ``None`` when the id is invalid or the file
        could not be written (a bundle never breaks an answer).
        """
        if not valid_trace_id(trace_id):
            return None
        cap = int(self.settings.trace_max_content_bytes)
        chunk_chars = max(256, int(self.settings.trace_max_event_bytes) // 8)
        if isinstance(content, TraceBundle):
            fields, tenant = content.model_dump(exclude={"tenant"}), content.tenant
        else:
            fields = dict(content)
            tenant = str(fields.pop("tenant", LOCAL_TENANT))
        safe = redact_obj(fields, self._secrets)
        lines = [_line({"type": "header", "trace_id": trace_id, "tenant": tenant, "schema": SCHEMA_VERSION,
                        "ts": time.time(), "cap_bytes": cap})]
        written = 0
        original = 0
        truncated = False
        for field, value in safe.items():
            for item in _items(str(field), value, chunk_chars):
                encoded = _line(item)
                original += len(encoded)
                if truncated:
                    continue
                if written + len(encoded) > cap:
                    truncated = True
                    room = cap - written
                    partial = _cut_item(item, room)
                    if partial is not None:
                        lines.append(partial)
                        written += len(partial)
                    continue
                lines.append(encoded)
                written += len(encoded)
        lines.append(_line({"type": "end", "truncated": truncated, "content_bytes": written,
                            "original_bytes": original}))
        if self._in_db:
            with self.db.write() as conn:
                conn.execute(_PUT_BUNDLE(conn),
                             {"trace_id": trace_id, "tenant": tenant, "content": b"".join(lines)})
            return f"postgresql:traces/{trace_id}"
        try:
            return atomic_write_bytes(self.bundle_path(trace_id), b"".join(lines))
        except OSError:
            return None

    def bundle_bytes(self, trace_id: str) -> bytes | None:
        """The bundle of ``trace_id`` as stored (redacted JSONL), wherever it lives; ``None`` without one."""
        handle = self._open_bundle(trace_id) if valid_trace_id(trace_id) else None
        if handle is None:
            return None
        with handle:
            return handle.read()

    def _open_bundle(self, trace_id: str) -> BinaryIO | None:
        """The bundle of ``trace_id`` to read, or ``None``."""
        if self._in_db:
            with self.db.read() as conn:
                content = conn.scalar(_BUNDLE_OF, {"trace_id": trace_id})
            return None if content is None else io.BytesIO(bytes(content))
        try:
            return open(self.bundle_path(trace_id), "rb")
        except OSError:
            return None

    def bundle_excerpt(self, tenant: str, trace_id: str, max_chars: int) -> str | None:
        """A redacted, bounded text excerpt of the bundle of one of the tenant's traces (anyone's for
        ``ALL_TENANTS``), or ``None`` when there is none.

        Lines longer than ``settings.trace_max_event_bytes`` are skipped without being loaded
        whole; at most ``settings.trace_query_max_bytes`` are scanned.
        """
        if not valid_trace_id(trace_id):
            return None
        max_line = int(self.settings.trace_max_event_bytes)
        budget = int(self.settings.trace_query_max_bytes)
        max_chars = max(0, int(max_chars))
        parts: list[str] = []
        size = 0
        current: str | None = None
        truncated = False
        handle = self._open_bundle(trace_id)
        if handle is None:
            return None
        with handle:
            if not _bundle_of(handle.readline(max_line + 1), tenant):
                return None
            scanned = 0
            while size <= max_chars and scanned < budget:
                raw = handle.readline(max_line + 1)
                if not raw:
                    break
                scanned += len(raw)
                if len(raw) > max_line and not raw.endswith(b"\n"):
                    _skip_rest_of_line(handle)
                    continue
                try:
                    entry = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(entry, dict):
                    continue
                if entry.get("type") == "end":
                    truncated = bool(entry.get("truncated"))
                    continue
                if entry.get("type") != "item":
                    continue
                field = str(entry.get("field", ""))
                if field != current:
                    header = f"\n## {field}\n" if parts else f"## {field}\n"
                    parts.append(header)
                    size += len(header)
                    current = field
                value = entry.get("value")
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
                if entry.get("index") is not None and entry.get("chunk", 0) == 0:
                    text = f"- [{entry['index']}] {text}"
                if entry.get("chunk") is None or entry.get("last", True):
                    text += "\n"
                parts.append(text)
                size += len(text)
        excerpt = "".join(parts)
        if truncated:
            excerpt += "\n[bundle truncated at capture]\n"
        if len(excerpt) > max_chars:
            excerpt = excerpt[:max_chars]
        return redact(excerpt, self._secrets)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _summary_fields(row: RowMapping) -> dict[str, Any]:
    """A ``traces`` row as a summary's fields: its JSON lists parsed, ``cached`` a bool."""
    fields = dict(row)
    fields["providers"] = json.loads(fields.get("providers") or "[]")
    fields["models"] = json.loads(fields.get("models") or "[]")
    fields["cached"] = bool(fields.get("cached"))
    return fields


def _trace_row(row: RowMapping) -> TraceSummary:
    return TraceSummary(**_summary_fields(row))


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _items(field: str, value: Any, chunk_chars: int) -> list[dict[str, Any]]:
    """Bundle lines for one content field: lists per element, long strings in chunks."""
    if isinstance(value, list):
        out: list[dict[str, Any]] = []
        for index, element in enumerate(value):
            out.extend(_chunks({"type": "item", "field": field, "index": index}, element, chunk_chars))
        return out
    return _chunks({"type": "item", "field": field}, value, chunk_chars)


def _chunks(base: dict[str, Any], value: Any, chunk_chars: int) -> list[dict[str, Any]]:
    if not isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) <= chunk_chars:
            return [{**base, "value": value}]
        base = {**base, "json": True}
        value = text
    if len(value) <= chunk_chars:
        return [{**base, "value": value}]
    pieces = [value[i : i + chunk_chars] for i in range(0, len(value), chunk_chars)]
    return [
        {**base, "chunk": n, "last": n == len(pieces) - 1, "value": piece}
        for n, piece in enumerate(pieces)
    ]


def _cut_item(item: dict[str, Any], room: int) -> bytes | None:
    """The longest prefix of a string item that fits in ``room`` bytes, marked truncated."""
    value = item.get("value")
    if not isinstance(value, str):
        return None
    shell = _line({**item, "value": "", "truncated": True, "last": True})
    space = room - len(shell)
    if space <= 0:
        return None
    # JSON escaping can grow a character to 6 bytes (or 4 for UTF-8); cut conservatively.
    cut = value[: space // 6]
    while cut:
        encoded = _line({**item, "value": cut, "truncated": True, "last": True})
        if len(encoded) <= room:
            return encoded
        cut = cut[: len(cut) * 3 // 4]
    return None


def _bundle_of(header: bytes, tenant: str) -> bool:
    """Whether a bundle whose first line is ``header`` belongs to ``tenant`` (every bundle does to
    ``ALL_TENANTS``; one written before tenants belongs to the local tenant)."""
    if tenant == ALL_TENANTS:
        return True
    try:
        entry = json.loads(header)
    except ValueError:
        return False
    if not isinstance(entry, dict) or entry.get("type") != "header":
        return False
    return bool(entry.get("tenant", LOCAL_TENANT) == tenant)


def _skip_rest_of_line(handle: BinaryIO) -> None:
    while True:
        rest = handle.readline(1 << 16)
        if not rest or rest.endswith(b"\n"):
            return
