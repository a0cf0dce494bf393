"""The audit summary index behind stats: incremental, rotation-aware, rebuilt when lost."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from ask_fable.errors import BadArgs
from ask_fable.stores.audit import AuditLog
from ask_fable.stores.audit_index import AuditIndex, AuditTable, _ident, _rows
from ask_fable.stores.audit_trail import AuditTrail
from tests.conftest import StoreBackend
from tests.stores.legacy_databases import SCRIPTS

NOW = 1_800_000_000.0


def _record(i: int, rng: random.Random) -> dict:
    record = {
        "ts": NOW - rng.uniform(0, 3 * 86400), "trace_id": f"t{i}", "tool": rng.choice(["ask", "ask_glm"]),
        "mode": "single",
        "status": rng.choice(["ok", "ok", "error", "refused", "needs_context", "context_exhausted"]),
        "kind": None, "allowed": rng.random() < 0.9, "model": rng.choice(["glm-5.2", "kimi-code/k3"]),
        "provider": rng.choice(["glm", "kimi"]), "session": rng.choice(["s1", "s2"]), "project": "p",
        "elapsed_ms": rng.uniform(1, 500), "cached": rng.random() < 0.2, "pad": "x" * 80,
    }
    if record["status"] == "error":
        # A failure names no answering model; its member says which model was asked.
        kind = rng.choice(["upstream_error", "timeout", "not_configured", "binary_missing"])
        asked = {"provider": record["provider"], "model": "kimi-code/k3", "status": "error", "kind": kind,
                 "elapsed_ms": 5.0}
        record.update(kind=kind, model=None, members=[asked])
    if i % 4 == 0:
        record.update(mode="council", quorum="2/3", synth_fallback=True, members=[
            {"provider": "glm", "model": "glm-5.2", "status": "ok", "kind": None, "elapsed_ms": 10.0},
            {"provider": "kimi", "model": "kimi-code/k3", "status": "error", "kind": "circuit_open",
             "elapsed_ms": 0.0},
            {"provider": "deepseek", "model": "deepseek-v4-pro",
             "status": rng.choice(["not_configured", "timeout"]), "kind": None, "elapsed_ms": 7.0},
        ])
    return record


def _fill(log: AuditLog, start: int, n: int) -> None:
    rng = random.Random(start)
    for i in range(start, start + n):
        log.append(_record(i, rng))


def test_refresh_is_incremental(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=10_000_000)
    index = AuditIndex(log)
    _fill(log, 0, 30)
    assert index.refresh() == 30
    assert index.refresh() == 0
    _fill(log, 30, 5)
    assert index.refresh() == 5
    assert index.count() == 35
    assert index.path.name == "decisions.index.db"


def test_rotation_and_pruning_keep_the_index_equal_to_the_log(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=3000, backups=3)
    index = AuditIndex(log)
    for start in range(0, 200, 20):
        _fill(log, start, 20)
        index.refresh()  # rotations and prunes happen between refreshes
    assert len(log.segments()) == 3
    kept = list(log.iter_records())
    assert index.count() == len(kept)
    by_day = index.stats("local", window="all", by="day", now=NOW)
    assert by_day["records"] == by_day["totals"]["calls"] == len(kept)
    assert sum(b.figures["calls"] for b in by_day["buckets"]) == len(kept)
    backend_calls = sum(len(r.get("members") or []) or (1 if r.get("provider") else 0) for r in kept)
    assert index.stats("local", window="all", by="provider", now=NOW)["totals"]["calls"] == backend_calls


def test_torn_tail_is_indexed_once_completed(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=10_000_000)
    _fill(log, 0, 3)
    with open(log.path, "ab") as handle:
        handle.write(b'{"ts": 1800000000.0, "status": "ok", "model": "late"')
    index = AuditIndex(log)
    assert index.refresh() == 3
    with open(log.path, "ab") as handle:
        handle.write(b'}\nnot json\n')
    assert index.refresh() == 1
    late = index.stats("local", window="all", by="model", now=NOW)["buckets"]
    assert [b.figures["calls"] for b in late if b.key == "late"] == [1]


def test_deleted_index_is_rebuilt(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=10_000_000)
    _fill(log, 0, 10)
    index = AuditIndex(log)
    index.refresh()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index.path}{suffix}").unlink(missing_ok=True)
    assert AuditIndex(log).refresh() == 10


def test_audit_stats_validates_arguments(tmp_path: Path) -> None:
    trail = AuditTrail(AuditLog(tmp_path / "decisions.jsonl", max_bytes=1000))
    with pytest.raises(BadArgs):
        trail.stats("local", window="3d")
    with pytest.raises(BadArgs):
        trail.stats("local", by="colour")
    assert trail.stats("local")["totals"]["calls"] == 0


def test_an_index_from_before_failure_attribution_is_rebuilt(tmp_path: Path) -> None:
    """An index written when failures were stored without a model is re-read on open, so a failed
    call counts under the model it asked."""
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=10_000_000)
    asked = {"provider": "glm", "model": "glm-5.2", "status": "error", "kind": "upstream_error"}
    log.append({"ts": NOW - 60, "status": "error", "kind": "upstream_error", "model": None, "provider": "glm",
                "members": [asked]})
    path = AuditIndex(log).path
    ident, size = _ident(log.path) or ("", 0)
    old = sqlite3.connect(path)  # the index as the first schema wrote that record
    with old:
        old.executescript(SCRIPTS["audit"][0])
        old.execute("PRAGMA user_version = 1")
        old.execute("INSERT INTO files (ident, offset) VALUES (?, ?)", (ident, size))
        old.execute("INSERT INTO recs (id, ident, ts, status, kind, model, provider, cached, elapsed_ms, "
                    "degraded, synth_fallback) "
                    "VALUES (1, ?, ?, 'error', 'upstream_error', NULL, 'glm', 0, 5, 0, 0)",
                    (ident, NOW - 60))
    old.close()
    stats = AuditTrail(log).stats("local", window="all", by="model", now=NOW)
    assert [(b.by, b.key, b.figures["errors"]) for b in stats["buckets"]] == [("model", "glm-5.2", 1)]


def test_a_group_of_records_keeps_each_records_members_with_it(store_backend: StoreBackend,
                                                               tmp_path: Path) -> None:
    """Records appended as a group (calls that finished together) are each stored with their own
    member calls, on the shared database's table as in the file's index."""
    from sqlalchemy import select

    from ask_fable.stores.records import AuditRecord
    from ask_fable.stores.tables import audit_members, audit_recs

    db = store_backend.open("audit", tmp_path / "audit.db")
    table = AuditTable(db)
    rng = random.Random(7)
    records = [AuditRecord.model_validate(_record(i, rng)) for i in range(10)]
    table.append_many(records[:9])
    table.append_many(records[9:])
    with db.read() as conn:
        rows = conn.execute(select(audit_recs.c.line, audit_members.c.provider, audit_members.c.model)
                            .join_from(audit_recs, audit_members, isouter=True)).all()
    stored: dict[str, list[tuple[str, str]]] = {}
    for line, provider, model in rows:
        members = stored.setdefault(line, [])
        if provider is not None:
            members.append((provider, model))
    assert len(stored) == 10
    for record in records:
        line = json.dumps(record.line(), ensure_ascii=False, separators=(",", ":"))
        expected = sorted((m["provider"], m["model"]) for m in _rows("db", record)[1])
        assert expected and sorted(stored[line]) == expected, record.trace_id
