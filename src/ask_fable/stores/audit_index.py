"""A compact SQLite summary of the audit log, so ``stats`` does not re-parse JSONL every call.

The index keeps only the fields statistics read, one row per record, and remembers how far it
has read each log file. A file is known by its inode plus a hash of its first line: rotation
renames the active file (same inode, same first line), so reading simply continues in the
rotated segment; a pruned or discarded file disappears from the log and its rows go too. Each
refresh therefore parses only what was appended since the last one, by any process.

The JSONL log stays the source of truth: the index can be deleted at any time and is rebuilt.
Each row keeps its record's tenant (``local`` for lines written before tenants), and every
``stats`` query names the tenant it counts (``ALL_TENANTS`` for an admin's view).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ask_fable.access import ALL_TENANTS
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import SecretSource, redact_obj, secret_list
from ask_fable.stores.audit import AuditLog
from ask_fable.stores.db import Connection, Connections, Database, SqliteDatabase
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
from ask_fable.stores.views import BucketFigures, StatsReport

MIGRATIONS = [
    """
    CREATE TABLE files (ident TEXT PRIMARY KEY, "offset" INTEGER NOT NULL);
    CREATE TABLE recs (
        id INTEGER PRIMARY KEY,
        ident TEXT NOT NULL,
        ts REAL, status TEXT, kind TEXT, model TEXT, provider TEXT,
        session TEXT, project TEXT, tool TEXT, mode TEXT, cached INTEGER NOT NULL,
        elapsed_ms REAL, degraded INTEGER NOT NULL, synth_fallback INTEGER NOT NULL,
        allowed INTEGER
    );
    CREATE INDEX recs_ts ON recs(ts);
    CREATE INDEX recs_ident ON recs(ident);
    CREATE TABLE members (
        rec_id INTEGER NOT NULL REFERENCES recs(id) ON DELETE CASCADE,
        provider TEXT, model TEXT, status TEXT, kind TEXT, elapsed_ms REAL
    );
    CREATE INDEX members_rec ON members(rec_id);
    """,
    # ``recs.model`` became the model a record counts under (stats.attributed_model) and each row
    # carries its outcome (stats.outcome_of): forget what was read so every record is indexed again.
    """
    DELETE FROM members;
    DELETE FROM recs;
    DELETE FROM files;
    ALTER TABLE recs ADD COLUMN outcome TEXT NOT NULL DEFAULT 'errors';
    ALTER TABLE members ADD COLUMN outcome TEXT NOT NULL DEFAULT 'errors';
    """,
    # Each record keeps its tenant: forget what was read so every record is indexed again with it.
    # No index leads with the tenant: stats read most of a window's rows, and a scan (or the ts
    # range) that checks each row's tenant beats looking every row up through such an index.
    """
    DELETE FROM members;
    DELETE FROM recs;
    DELETE FROM files;
    ALTER TABLE recs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'local';
    """,
    # What each backend call cost (as its provider reported it), and a record's total: every record
    # is indexed again to fill them in.
    """
    DELETE FROM members;
    DELETE FROM recs;
    DELETE FROM files;
    ALTER TABLE recs ADD COLUMN cost_usd REAL;
    ALTER TABLE members ADD COLUMN cost_usd REAL;
    """,
    # The whole record as written, for a database that is the audit log itself (PostgreSQL); an
    # index of a JSONL log leaves it empty.
    """
    ALTER TABLE recs ADD COLUMN line TEXT;
    CREATE INDEX recs_tenant_ts ON recs(tenant, ts);
    """,
]

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


def _rows(ident: str, record: AuditRecord) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The ``recs`` row of one record (without its id) and its ``members`` rows (one per backend
    call, without the record's id)."""
    allowed = record.allowed
    outcome = outcome_of(record.status, record.kind)
    costs = [m.cost_usd for m in record.members if m.cost_usd is not None]
    row = (
        ident, record.ts, attributed_model(record), record.status, record.kind, record.provider,
        record.session, record.project, record.tool, record.mode, 1 if record.cached else 0,
        record.elapsed_ms, 1 if is_degraded(record.quorum) else 0, 1 if record.synth_fallback else 0,
        None if allowed is None else (1 if allowed else 0), outcome, sum(costs) if costs else None,
        record.tenant,
    )
    if record.members:
        member_rows = [
            (m.provider, m.model, m.status, m.kind, m.elapsed_ms, outcome_of(m.status, m.kind), m.cost_usd)
            for m in record.members
        ]
    elif record.provider:
        # A single-shot record is one backend call of its own provider (none when refused early).
        member_rows = [
            (record.provider, record.model, record.status, record.kind, record.elapsed_ms, outcome, None)
        ]
    else:
        member_rows = []
    return row, member_rows


_REC_COLUMNS = ("ident, ts, model, status, kind, provider, session, project, tool, mode, cached, elapsed_ms, "
                "degraded, synth_fallback, allowed, outcome, cost_usd, tenant")
def _marks(count: int) -> str:
    return ",".join("?" * count)


_MEMBER_INSERT = ("INSERT INTO members (rec_id, provider, model, status, kind, elapsed_ms, outcome, "
                  "cost_usd) VALUES (?,?,?,?,?,?,?,?)")


class AuditIndex:
    """The summary index of one :class:`AuditLog` (default file: ``<stem>.index.db`` beside it)."""

    def __init__(self, log: AuditLog, path: str | os.PathLike[str] | None = None, *,
                 connections: Connections | None = None) -> None:
        self.log = log
        self.path = Path(path) if path else log.path.with_name(f"{log.path.stem}.index.db")
        self.db = SqliteDatabase(self.path, MIGRATIONS, connections=connections)

    def refresh(self) -> int:
        """Index whatever was appended since the last refresh; returns records added."""
        files = [(p, found) for p in self.log.files() if (found := _ident(p)) is not None]
        added = 0
        with self.db.write() as conn:
            known = {r[0]: int(r[1]) for r in conn.execute("SELECT ident, offset FROM files")}
            present = {ident for _p, (ident, _size) in files}
            for gone in set(known) - present:
                conn.execute("DELETE FROM recs WHERE ident = ?", (gone,))
                conn.execute("DELETE FROM files WHERE ident = ?", (gone,))
            for path, (ident, size) in files:
                offset = known.get(ident, 0)
                if size <= offset:
                    continue
                offset, count = self._ingest(conn, path, ident, offset)
                added += count
                conn.execute(
                    "INSERT INTO files (ident, offset) VALUES (?, ?) "
                    "ON CONFLICT(ident) DO UPDATE SET offset = excluded.offset",
                    (ident, offset),
                )
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
                next_id = int(conn.execute("SELECT coalesce(max(id), 0) FROM recs").fetchone()[0]) + 1
                rows: list[tuple[Any, ...]] = []
                member_rows: list[tuple[Any, ...]] = []
                for n, record in enumerate(records):
                    row, members = _rows(ident, record)
                    rows.append((next_id + n, *row))
                    member_rows.extend((next_id + n, *member) for member in members)
                conn.executemany(
                    f"INSERT INTO recs (id, {_REC_COLUMNS}) VALUES ({_marks(19)})", rows
                )
                conn.executemany(_MEMBER_INSERT, member_rows)
                count += len(rows)
                offset += len(complete)
                handle.seek(offset)
        return offset, count

    def count(self) -> int:
        """Records indexed."""
        with self.db.read() as conn:
            return int(conn.execute("SELECT count(*) FROM recs").fetchone()[0])

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
        rows: list[tuple[tuple[Any, ...], list[tuple[Any, ...]], str]] = []
        for record in records:
            written = redact_obj(record.line(), self._secrets)
            line = json.dumps(written, ensure_ascii=False, separators=(",", ":"), default=str)
            row, members = _rows("db", AuditRecord.model_validate(written))
            rows.append((row, members, line))
        if not rows:
            return
        with self.db.write() as conn:
            for row, members, line in rows:
                rec_id = conn.execute(
                    f"INSERT INTO recs ({_REC_COLUMNS}, line) VALUES ({_marks(19)}) RETURNING id",
                    (*row, line),
                ).fetchone()[0]
                conn.executemany(_MEMBER_INSERT, [(rec_id, *member) for member in members])

    def iter_lines(self, tenant: str) -> list[dict[str, Any]]:
        """The tenant's records as written (every tenant's for ``ALL_TENANTS``), oldest first."""
        where, params = ("", ()) if tenant == ALL_TENANTS else (" WHERE tenant = ?", (tenant,))
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT line FROM recs{where} ORDER BY id", params).fetchall()
        return [json.loads(r[0]) for r in rows if r[0]]

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
    where: list[str] = ["1 = 1"]
    params: list[float | str] = []
    if tenant != ALL_TENANTS:
        where.append("r.tenant = ?")
        params.append(tenant)
    if since is not None:
        where.append("r.ts >= ?")
        params.append(since)
    if session is not None:
        where.append("r.session = ?")
        params.append(session)
    record_where = list(where)
    record_params = list(params)
    if model is not None:
        record_where.append(
            "(r.model = ? OR r.provider = ? OR EXISTS (SELECT 1 FROM members x WHERE x.rec_id = r.id "
            "AND (x.model = ? OR x.provider = ?)))"
        )
        record_params += [model] * 4
    if by == "provider":
        source = "members m JOIN recs r ON r.id = m.rec_id"
        bucket = f"coalesce(nullif(m.provider, ''), '{UNKNOWN}')"
        outcome, elapsed, allowed = "m.outcome", "m.elapsed_ms", "coalesce(r.allowed, 1)"
        cost = "m.cost_usd"
        degraded = synth = "0"
        rows_where, rows_params = list(where), list(params)
        if model is not None:
            rows_where.append("(m.model = ? OR m.provider = ?)")
            rows_params += [model, model]
    else:
        source = "recs r"
        bucket = _BUCKETS[by] if by != "day" else _DAY[db.dialect]
        outcome, elapsed, allowed = "r.outcome", "r.elapsed_ms", "coalesce(r.allowed, 0)"
        cost = "r.cost_usd"
        degraded, synth = "r.degraded", "r.synth_fallback"
        rows_where, rows_params = record_where, record_params
    base = (
        f"SELECT {bucket} AS bucket, {outcome} AS outcome, {allowed} AS allowed, "
        f"{elapsed} AS elapsed, {degraded} AS degraded, {synth} AS synth, {cost} AS cost "
        f"FROM {source} WHERE {' AND '.join(rows_where)}"
    )
    with db.read() as conn:
        matched = int(conn.execute(
            f"SELECT count(*) FROM recs r WHERE {' AND '.join(record_where)}", record_params
        ).fetchone()[0])
        buckets, totals = _aggregate(conn, base, rows_params)
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

def _aggregate(
    conn: Connection, base: str, params: list[Any]
) -> tuple[dict[str, BucketFigures], BucketFigures]:
    """Per-bucket figures and totals: counts and cost in SQL, latency percentiles in Python."""
    per_outcome = ", ".join(f"sum(CASE WHEN outcome = '{name}' THEN 1 ELSE 0 END)" for name in OUTCOMES)
    rows = conn.execute(
        f"SELECT bucket, sum(cost), {per_outcome}, sum(allowed), sum(degraded), sum(synth) "
        f"FROM ({base}) GROUP BY 1",
        params,
    ).fetchall()
    # Latencies are summed and ranked in Python (SQLite's window functions were several times
    # slower at this).
    attempted = ", ".join(f"'{name}'" for name in sorted(ATTEMPTED))
    latencies: dict[str, list[float]] = {}
    cursor = conn.execute(
        f"SELECT bucket, elapsed FROM ({base}) WHERE outcome IN ({attempted}) AND elapsed IS NOT NULL",
        params,
    )
    if isinstance(cursor, sqlite3.Cursor):
        cursor.row_factory = None  # plain tuples: several times faster to unpack
    for name, value in cursor.fetchall():
        found = latencies.get(name)
        if found is None:
            latencies[name] = [value]
        else:
            found.append(value)
    every: list[float] = []
    buckets = {}
    sums = [0] * (len(OUTCOMES) + 3)
    total_cost: float | None = None
    for name, cost, *figures in rows:
        figures = [int(v or 0) for v in figures]
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


_BUCKETS = {
    "model": f"coalesce(nullif(r.model, ''), '{UNKNOWN}')",
    "tool": f"coalesce(nullif(r.tool, ''), '{UNKNOWN}')",
    "session": f"coalesce(nullif(r.session, ''), '{UNKNOWN}')",
    "project": f"coalesce(nullif(r.project, ''), '{UNKNOWN}')",
    "mode": f"coalesce(nullif(r.mode, ''), '{UNKNOWN}')",
    "cache": "CASE WHEN r.cached = 1 THEN 'hit' ELSE 'miss' END",
    "tenant": "r.tenant",
}

#: The UTC day of a record: the one bucket whose SQL differs between the dialects.
_DAY = {
    "sqlite": f"coalesce(strftime('%Y-%m-%d', r.ts, 'unixepoch'), '{UNKNOWN}')",
    "postgres": f"coalesce(to_char(to_timestamp(r.ts) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), '{UNKNOWN}')",
}
