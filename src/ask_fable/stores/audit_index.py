"""A compact SQLite summary of the audit log, so ``stats`` does not re-parse JSONL every call.

The index keeps only the fields statistics read, one row per record, and remembers how far it
has read each log file. A file is known by its inode plus a hash of its first line: rotation
renames the active file (same inode, same first line), so reading simply continues in the
rotated segment; a pruned or discarded file disappears from the log and its rows go too. Each
refresh therefore parses only what was appended since the last one, by any process.

The JSONL log stays the source of truth: the index can be deleted at any time and is rebuilt.
Each row keeps its record's tenant (``local`` for lines written before tenants), and every
``stats`` query names the tenant it counts (``ALL_TENANTS`` for an admin's view).

On PostgreSQL the same tables are the audit log itself (:class:`AuditTable`); ``stats`` runs the
same query on either, the UTC day of a record (:class:`UtcDay`) being the one expression each
dialect spells its own way.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import Text, bindparam, case, delete, exists, func, insert, literal, or_, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from ask_fable.access import ALL_TENANTS
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import SecretSource, redact_obj, secret_list
from ask_fable.stores.audit import AuditLog
from ask_fable.stores.db import Database, per_dialect, upsert
from ask_fable.stores.driver import run_each, run_many
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import AuditRecord
from ask_fable.stores.stats import (
    ATTEMPTED,
    OUTCOMES,
    UNKNOWN,
    attributed_model,
    bucket_result,
    is_degraded,
    order_buckets,
    outcome_of,
    p50_rank,
    p95_rank,
    validate,
    window_start,
)
from ask_fable.stores.tables import audit_files, audit_members, audit_recs
from ask_fable.stores.views import BucketFigures, StatsReport

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection, Select, Table
    from sqlalchemy.sql import Executable
    from sqlalchemy.sql.compiler import SQLCompiler

#: Bytes read per pass over a file, so a huge backlog is indexed in bounded memory.
_READ_BYTES = 8 * 1024 * 1024
#: Lines parsed and validated per call, so one bad line costs a re-read of this many only.
_BATCH = 1000
_LINES = TypeAdapter(list[AuditRecord])


def _ident(path: Path) -> tuple[str, int] | None:
    """``(identity, size)`` of a log file, or ``None`` while it has no complete line."""
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            first = handle.readline(1 << 20)
    except OSError:
        return None
    if not first.endswith(b"\n"):
        return None
    digest = hashlib.sha256(first).hexdigest()[:24]
    return f"{stat.st_dev}:{stat.st_ino}:{digest}", stat.st_size


def parse_records(lines: list[bytes]) -> list[AuditRecord]:
    """Audit records from complete JSONL lines; a line that is not an audit record is skipped."""
    lines = [raw for raw in lines if raw.strip()]
    out: list[AuditRecord] = []
    for start in range(0, len(lines), _BATCH):
        batch = lines[start : start + _BATCH]
        try:
            out.extend(_LINES.validate_json(b"[" + b",".join(batch) + b"]"))
        except ValidationError:
            for raw in batch:
                try:
                    out.append(AuditRecord.model_validate_json(raw))
                except ValidationError:
                    continue
    return out


def _rows(ident: str, record: AuditRecord) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``recs`` row of one record (without its id) and its ``members`` rows (one per backend
    call, without the record's id)."""
    allowed = record.allowed
    outcome = outcome_of(record.status, record.kind)
    costs = [m.cost_usd for m in record.members if m.cost_usd is not None]
    row = {
        "ident": ident, "ts": record.ts, "model": attributed_model(record), "status": record.status,
        "kind": record.kind, "provider": record.provider, "session": record.session,
        "project": record.project, "tool": record.tool, "mode": record.mode,
        "cached": 1 if record.cached else 0, "elapsed_ms": record.elapsed_ms,
        "degraded": 1 if is_degraded(record.quorum) else 0,
        "synth_fallback": 1 if record.synth_fallback else 0,
        "allowed": None if allowed is None else (1 if allowed else 0), "outcome": outcome,
        "cost_usd": sum(costs) if costs else None, "tenant": record.tenant,
    }
    if record.members:
        member_rows = [
            {"provider": m.provider, "model": m.model, "status": m.status, "kind": m.kind,
             "elapsed_ms": m.elapsed_ms, "outcome": outcome_of(m.status, m.kind), "cost_usd": m.cost_usd}
            for m in record.members
        ]
    elif record.provider:
        # A single-shot record is one backend call of its own provider (none when refused early).
        member_rows = [
            {"provider": record.provider, "model": record.model, "status": record.status, "kind": record.kind,
             "elapsed_ms": record.elapsed_ms, "outcome": outcome, "cost_usd": None}
        ]
    else:
        member_rows = []
    return row, member_rows


class AuditIndex:
    """The summary index of one :class:`AuditLog` (default file: ``<stem>.index.db`` beside it)."""

    def __init__(self, log: AuditLog, path: str | os.PathLike[str] | None = None, *,
                 engines: Engines | None = None) -> None:
        self.log = log
        self.path = Path(path) if path else log.path.with_name(f"{log.path.stem}.index.db")
        self.db = Database.sqlite(self.path, "audit", engines=engines)

    def refresh(self) -> int:
        """Index whatever was appended since the last refresh; returns records added."""
        files = [(p, found) for p in self.log.files() if (found := _ident(p)) is not None]
        added = 0
        with self.db.write() as conn:
            known = {ident: int(offset) for ident, offset in conn.execute(_KNOWN_FILES)}
            present = {ident for _p, (ident, _size) in files}
            for gone in set(known) - present:
                conn.execute(_DELETE_RECS_OF, {"ident": gone})
                conn.execute(_DELETE_FILE, {"ident": gone})
            for path, (ident, size) in files:
                offset = known.get(ident, 0)
                if size <= offset:
                    continue
                offset, count = self._ingest(conn, path, ident, offset)
                added += count
                conn.execute(_READ_TO(conn), {"ident": ident, "offset": offset})
        return added

    def _ingest(self, conn: Connection, path: Path, ident: str, offset: int) -> tuple[int, int]:
        count = 0
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError:
            return offset, 0
        with handle:
            handle.seek(offset)
            while True:
                block = handle.read(_READ_BYTES)
                if not block:
                    break
                end = block.rfind(b"\n")
                if end < 0:
                    if len(block) < _READ_BYTES:
                        break  # an incomplete tail: wait for its newline
                    # One enormous unterminated line: skip past it rather than stall forever.
                    offset += len(block)
                    continue
                complete = block[: end + 1]
                records = parse_records(complete.splitlines(keepends=True))
                next_id = int(conn.scalar(_LAST_ID) or 0) + 1
                rows: list[dict[str, Any]] = []
                member_rows: list[dict[str, Any]] = []
                for n, record in enumerate(records):
                    row, members = _rows(ident, record)
                    rows.append({"id": next_id + n, **row})
                    member_rows.extend({"rec_id": next_id + n, **member} for member in members)
                _insert_many(conn, audit_recs, rows)
                _insert_many(conn, audit_members, member_rows)
                count += len(rows)
                offset += len(complete)
                handle.seek(offset)
        return offset, count

    def count(self) -> int:
        """Records indexed."""
        with self.db.read() as conn:
            return int(conn.scalar(_COUNT) or 0)

    def stats(
        self,
        tenant: str,
        window: str = "24h",
        by: str = "model",
        model: str | None = None,
        session: str | None = None,
        now: float | None = None,
    ) -> StatsReport:
        """The tenant's calls (every tenant's for ``ALL_TENANTS``) per bucket over ``window``, from
        this index (see :func:`audit_stats`)."""
        return audit_stats(self.db, tenant, window=window, by=by, model=model, session=session, now=now)


class AuditTable:
    """The ``AuditStore`` of a shared database (PostgreSQL): each record is a row of ``recs`` (the
    line as written kept whole, redacted) with its ``members``, and ``stats`` reads them directly."""

    def __init__(self, db: Database, *, secrets: SecretSource = (), clock: Clock = SYSTEM_CLOCK) -> None:
        self.db = db
        self._secrets = secret_list(secrets)
        self._clock = clock

    def append(self, record: AuditRecord) -> None:
        """Insert ``record`` (redacted) and its member calls in one transaction."""
        self.append_many([record])

    def append_many(self, records: Sequence[AuditRecord]) -> None:
        """Insert ``records`` (redacted) and their member calls in one transaction."""
        rows: list[dict[str, Any]] = []
        members_of: list[list[dict[str, Any]]] = []
        for record in records:
            written = redact_obj(record.line(), self._secrets)
            line = json.dumps(written, ensure_ascii=False, separators=(",", ":"), default=str)
            row, members = _rows("db", AuditRecord.model_validate(written))
            rows.append({**row, "line": line})
            members_of.append(members)
        if not rows:
            return
        with self.db.write() as conn:
            # Each record one INSERT ... RETURNING on the driver, a group's in one pipeline.
            ids = [returned[0][0] for returned in run_each(conn, _INSERT_RECS_IDS, rows)]
            member_rows = [{"rec_id": rec_id, **member}
                           for rec_id, members in zip(ids, members_of, strict=True) for member in members]
            if member_rows:
                run_many(conn, _INSERT_MEMBERS, member_rows)

    def stats(
        self,
        tenant: str,
        window: str = "24h",
        by: str = "model",
        model: str | None = None,
        session: str | None = None,
        now: float | None = None,
    ) -> StatsReport:
        """The tenant's calls per bucket over ``window`` (see :func:`audit_stats`)."""
        now = self._clock.now() if now is None else now
        return audit_stats(self.db, tenant, window=window, by=by, model=model, session=session, now=now)


def audit_stats(
    db: Database,
    tenant: str,
    window: str = "24h",
    by: str = "model",
    model: str | None = None,
    session: str | None = None,
    now: float | None = None,
) -> StatsReport:
    """The tenant's calls (every tenant's for ``ALL_TENANTS``) per bucket over ``window`` (see
    ``stores/stats.py`` for what is counted), in SQL.

    ``model`` keeps records whose model or provider (or one of whose members') matches, and
    in the provider view only the matching member calls; ``session`` keeps one session.
    Unknown ``window`` or ``by`` raise ``BadArgs`` naming the allowed values.
    """
    validate(window, by)
    since = window_start(window, now)
    values = {"tenant": None if tenant == ALL_TENANTS else tenant, "since": since, "session": session,
              "model": model}
    params = {name: value for name, value in values.items() if value is not None}
    count, figures, samples = _stats_queries(by, tenant != ALL_TENANTS, since is not None,
                                             session is not None, model is not None)
    with db.read() as conn:
        matched = int(conn.scalar(count, params) or 0)
        buckets, totals = _aggregate(conn.execute(figures, params).all(), conn.execute(samples, params))
    return {
        "tenant": tenant,
        "window": window,
        "by": by,
        "since": since,
        "filters": {"model": model, "session": session},
        "records": matched,
        "buckets": order_buckets(by, buckets),
        "totals": totals,
    }

@functools.cache
def _stats_queries(by: str, tenant: bool, since: bool, session: bool,
                   model: bool) -> tuple[Select[Any], Select[Any], Select[Any]]:
    """The statements of one shape of :func:`audit_stats` (the ``by`` view, and which of the tenant,
    window start, session and model filters it binds): the records matched, the per-bucket figures and
    the latency samples. Built once per shape, values bound at execution."""
    r, m = audit_recs, audit_members
    where: list[ColumnElement[bool]] = []
    if tenant:
        where.append(r.c.tenant == bindparam("tenant"))
    if since:
        where.append(r.c.ts >= bindparam("since"))
    if session:
        where.append(r.c.session == bindparam("session"))
    record_where = list(where)
    wanted = bindparam("model", type_=Text())
    if model:
        x = audit_members.alias("x")
        record_where.append(or_(
            r.c.model == wanted, r.c.provider == wanted,
            exists().where(x.c.rec_id == r.c.id, or_(x.c.model == wanted, x.c.provider == wanted))))
    if by == "provider":
        base = select(
            _known(m.c.provider).label("bucket"), m.c.outcome.label("outcome"),
            func.coalesce(r.c.allowed, 1).label("allowed"), m.c.elapsed_ms.label("elapsed"),
            literal(0).label("degraded"), literal(0).label("synth"), m.c.cost_usd.label("cost"),
        ).select_from(m.join(r, r.c.id == m.c.rec_id))
        rows_where = list(where)
        if model:
            rows_where.append(or_(m.c.model == wanted, m.c.provider == wanted))
    else:
        base = select(
            _bucket(by).label("bucket"), r.c.outcome.label("outcome"),
            func.coalesce(r.c.allowed, 0).label("allowed"), r.c.elapsed_ms.label("elapsed"),
            r.c.degraded.label("degraded"), r.c.synth_fallback.label("synth"), r.c.cost_usd.label("cost"),
        )
        rows_where = record_where
    count = select(func.count()).select_from(r).where(*record_where)
    rows = base.where(*rows_where).subquery("base")
    per_outcome = [func.sum(case((rows.c.outcome == name, 1), else_=0)) for name in OUTCOMES]
    figures = (select(rows.c.bucket, func.sum(rows.c.cost), *per_outcome, func.sum(rows.c.allowed),
                      func.sum(rows.c.degraded), func.sum(rows.c.synth))
               .group_by(rows.c.bucket))
    samples = select(rows.c.bucket, rows.c.elapsed).where(rows.c.outcome.in_(sorted(ATTEMPTED)),
                                                          rows.c.elapsed.is_not(None))
    return count, figures, samples


def _aggregate(rows: Iterable[Sequence[Any]],
               samples: Iterable[Sequence[Any]]) -> tuple[dict[str, BucketFigures], BucketFigures]:
    """Per-bucket figures and totals from the per-bucket ``rows`` (counts and cost, summed in SQL) and
    the latency ``samples``, whose percentiles are taken here."""
    # Latencies are summed and ranked in Python (SQLite's window functions were several times
    # slower at this).
    latencies: dict[str, list[float]] = {}
    for name, value in samples:
        found = latencies.get(name)
        if found is None:
            latencies[name] = [value]
        else:
            found.append(value)
    every: list[float] = []
    buckets = {}
    sums = [0] * (len(OUTCOMES) + 3)
    total_cost: float | None = None
    for name, cost, *counted in rows:
        figures = [int(v or 0) for v in counted]
        sums = [a + b for a, b in zip(sums, figures, strict=True)]
        if cost is not None:
            total_cost = (total_cost or 0.0) + float(cost)
        values = sorted(latencies.get(name, []))
        every.extend(values)
        buckets[name] = _result(figures, values, None if cost is None else float(cost))
    every.sort()
    return buckets, _result(sums, every, total_cost)


def _result(figures: list[int], values: list[float], cost: float | None) -> BucketFigures:
    counts = dict(zip(OUTCOMES, figures, strict=False))
    allowed, degraded, synth = figures[len(OUTCOMES):]
    return bucket_result(
        counts, allowed=allowed, latency_sum=sum(values), latency_count=len(values),
        p50=values[p50_rank(len(values)) - 1] if values else None,
        p95=values[p95_rank(len(values)) - 1] if values else None, degraded=degraded, synth_fallback=synth,
        cost_usd=cost,
    )


#: The ``offset`` column of ``files`` (its name is also a method of a column collection).
_OFFSET = audit_files.c["offset"]

# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_KNOWN_FILES = select(audit_files.c.ident, _OFFSET)
_DELETE_RECS_OF = delete(audit_recs).where(audit_recs.c.ident == bindparam("ident"))
_DELETE_FILE = delete(audit_files).where(audit_files.c.ident == bindparam("ident"))
_LAST_ID = select(func.coalesce(func.max(audit_recs.c.id), 0))
_INSERT_RECS_IDS = insert(audit_recs).returning(audit_recs.c.id, sort_by_parameter_order=True)
_INSERT_MEMBERS = insert(audit_members)
_COUNT = select(func.count()).select_from(audit_recs)


@per_dialect
def _READ_TO(dialect: str) -> Executable:
    read = upsert(dialect, audit_files)
    return read.on_conflict_do_update(index_elements=["ident"], set_={_OFFSET: read.excluded["offset"]})


def _insert_many(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` (dicts with the same keys) into ``table`` of the SQLite index in one executemany.

    The index's first build inserts every record of the log: the INSERT is compiled from Core once
    and its rows handed to the driver as tuples, skipping the per-row parameter processing of
    ``conn.execute`` (a third of that build's CPU), which SQLite's types do not need."""
    if rows:
        sql, values_of = _sqlite_insert(table, tuple(rows[0]))
        conn.exec_driver_sql(sql, [values_of(row) for row in rows])


@functools.cache
def _sqlite_insert(table: Table,
                   keys: tuple[str, ...]) -> tuple[str, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """SQLite's INSERT of the columns ``keys`` into ``table``, and what takes a row's values in its order."""
    from sqlalchemy.dialects import sqlite

    compiled = insert(table).compile(dialect=sqlite.dialect(), column_keys=list(keys))
    order = compiled.positiontup or []
    return compiled.string, operator.itemgetter(*order)


def _known(column: ColumnElement[str | None]) -> ColumnElement[str]:
    """``column``, or :data:`UNKNOWN` where it is empty or missing."""
    return func.coalesce(func.nullif(column, ""), UNKNOWN)


def _bucket(by: str) -> ColumnElement[str]:
    """What a record counts under in the ``by`` view (every view but ``provider``)."""
    r = audit_recs
    if by == "cache":
        return case((r.c.cached == 1, "hit"), else_="miss")
    if by == "tenant":
        return r.c.tenant
    if by == "day":
        return func.coalesce(UtcDay(r.c.ts), UNKNOWN)
    return _known(r.c[by])


class UtcDay(FunctionElement[str]):
    """The UTC calendar day (``YYYY-MM-DD``) of epoch seconds: the one expression whose SQL differs
    between the dialects."""

    type = Text()
    name = "utc_day"
    inherit_cache = True


@compiles(UtcDay, "sqlite")
def _utc_day_sqlite(element: UtcDay, compiler: SQLCompiler, **kw: Any) -> str:
    (seconds,) = element.clauses
    return compiler.process(func.strftime("%Y-%m-%d", seconds, "unixepoch"), **kw)


@compiles(UtcDay, "postgresql")
def _utc_day_postgres(element: UtcDay, compiler: SQLCompiler, **kw: Any) -> str:
    (seconds,) = element.clauses
    day = func.to_char(func.timezone("UTC", func.to_timestamp(seconds)), "YYYY-MM-DD")
    return compiler.process(day, **kw)
