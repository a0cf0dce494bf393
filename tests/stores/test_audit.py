"""The JSONL audit log: one line per record, rotation, retention and tolerant reading."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from ask_fable.config import load_settings
from ask_fable.stores.audit import AuditLog, audit_log_for


def _record(i: int, ts: float = 1000.0, pad: int = 0) -> dict:
    return {"ts": ts + i, "trace_id": f"t{i}", "tool": "ask", "status": "ok", "pad": "x" * pad}


def test_append_writes_one_line_per_record_with_private_modes(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "state" / "decisions.jsonl", max_bytes=1_000_000)
    for i in range(3):
        log.append(_record(i))
    lines = log.path.read_text().splitlines()
    assert [json.loads(line)["trace_id"] for line in lines] == ["t0", "t1", "t2"]
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.path.parent.stat().st_mode) == 0o700
    assert [r["trace_id"] for r in log.iter_records()] == ["t0", "t1", "t2"]


def test_rotation_keeps_every_record_across_segments(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=600)
    for i in range(40):
        log.append(_record(i, pad=50))
    segments = log.segments()
    assert len(segments) >= 3
    for seg in segments:
        assert seg.name.startswith("decisions.") and seg.name.endswith(".jsonl")
        assert seg.stat().st_size <= 600
        assert stat.S_IMODE(seg.stat().st_mode) == 0o600
    assert [r["trace_id"] for r in log.iter_records()] == [f"t{i}" for i in range(40)]


def test_backups_cap_keeps_newest_segments_only(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=300, backups=2)
    for i in range(30):
        log.append(_record(i, pad=50))
    assert len(log.segments()) == 2
    ids = [int(r["trace_id"][1:]) for r in log.iter_records()]
    assert ids == sorted(ids) and ids[-1] == 29 and ids[0] > 0


def test_backups_zero_discards_the_active_segment(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=300, backups=0)
    for i in range(30):
        log.append(_record(i, pad=50))
    assert log.segments() == []
    ids = [int(r["trace_id"][1:]) for r in log.iter_records()]
    assert ids[-1] == 29 and len(ids) < 30


def test_oversized_record_is_still_written_whole(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=100)
    log.append(_record(0))
    log.append(_record(1, pad=5000))
    assert [r["trace_id"] for r in log.iter_records()] == ["t0", "t1"]


def test_garbage_and_torn_lines_are_skipped(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=1_000_000)
    log.append(_record(0))
    with open(log.path, "ab") as handle:
        handle.write(b"not json\n[1, 2]\n\xff\xfe\n")
    log.append(_record(1))
    with open(log.path, "ab") as handle:
        handle.write(b'{"ts": 5, "trace_id": "torn"')
    assert [r["trace_id"] for r in log.iter_records()] == ["t0", "t1"]


def test_since_filters_records_and_skips_old_segments(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=400)
    for i in range(20):
        log.append(_record(i, ts=1000.0, pad=40))
    # Segments were rotated "now", long after ts=1000: they are read; records filter by ts.
    assert [r["trace_id"] for r in log.iter_records(since_ts=1015)] == [f"t{i}" for i in range(15, 20)]
    old = log.segments()[0]
    renamed = old.with_name("decisions.20000101T000000000000Z.0.jsonl")
    old.rename(renamed)
    assert renamed in log.segments()
    got = [r["trace_id"] for r in log.iter_records(since_ts=2_000_000_000)]
    assert got == []


def test_foreign_files_beside_the_log_are_ignored(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "decisions.jsonl", max_bytes=1000)
    (tmp_path / "decisions.backup.jsonl").write_text('{"ts": 1, "trace_id": "foreign"}\n')
    log.append(_record(0))
    assert [r["trace_id"] for r in log.iter_records()] == ["t0"]


def test_audit_log_for_settings_uses_configured_path_and_redacts(tmp_path: Path) -> None:
    settings = load_settings(audit_max_bytes=1234, audit_backups=3, glm_api_key="exact-glm-key-777")
    log = audit_log_for(settings)
    assert log.path == settings.audit_file and log.max_bytes == 1234 and log.backups == 3
    planted = "sk-ant-api03-" + "a" * 40
    log.append({"ts": 1, "question": "why exact-glm-key-777 fails", "context_raw": planted})
    text = log.path.read_text()
    assert "exact-glm-key-777" not in text and "sk-ant-api03" not in text
    assert "[REDACTED]" in text
