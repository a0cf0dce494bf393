"""Several processes writing the same stores at once, and writers killed mid-write."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ask_fable.config import Settings, load_settings
from ask_fable.stores.audit import audit_log_for
from ask_fable.stores.cache import answer_cache_for
from ask_fable.stores.context import ContextStore, context_store_for
from ask_fable.stores.hub import SessionHub
from ask_fable.stores.records import HubTurn
from ask_fable.stores.traces import TraceStore
from tests.conftest import StoreBackend

WRITER = Path(__file__).with_name("proc_writer.py")
WORKERS = 4


def _spawn(tmp_path: Path, worker: str, count: int) -> tuple[subprocess.Popen[bytes], Path]:
    ack = tmp_path / f"ack-{worker}"
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), worker, str(count), str(ack)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # Writers that run until killed, round after round, may pass the tenant's default cap of
        # context entries; what is kept under a kill is the question here, not the cap.
        env={**os.environ, "ASK_FABLE_AUDIT_MAX_BYTES": "16384",
             "ASK_FABLE_CONTEXT_MAX_TENANT_ENTRIES": "1000000"},
    )
    return proc, ack


def _acked(ack: Path) -> list[tuple[int, str]]:
    if not ack.exists():
        return []
    out = []
    for line in ack.read_text().splitlines():
        i, trace_id = line.split()
        out.append((int(i), trace_id))
    return out


def _audit_lines(settings: Settings) -> tuple[list[dict], int]:
    """Every audit line across rotated segments: (parsed records, unparsable or unterminated lines)."""
    records, bad = [], 0
    for path in audit_log_for(settings).files():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            bad += 1
        for raw in data.splitlines():
            try:
                records.append(json.loads(raw))
            except ValueError:
                bad += 1
    return records, bad


def _verify(settings: Settings, acked: dict[str, list[tuple[int, str]]]) -> None:
    context = ContextStore(settings.context_db)
    traces = TraceStore(settings)
    hub = SessionHub(settings)
    cache = answer_cache_for(settings)
    for store_db in (context.db, traces.db, hub.db, cache.db):
        assert store_db.integrity_check() == "ok", store_db.path
    stored_keys = set(context.keys("local"))
    audit_records, bad_lines = _audit_lines(settings)
    assert bad_lines == 0
    audit_seen = {(r["worker"], r["i"]) for r in audit_records}
    assert len(audit_seen) == len(audit_records)  # no line written twice
    for worker, entries in acked.items():
        turns = {t.question for t in hub.peek("local", worker)}
        for i, trace_id in entries:
            key = f"{worker}-{i}"
            assert key in stored_keys
            assert traces.get("local", trace_id) is not None
            assert f"q {key}" in turns
            assert cache.get("local", key) is not None
            assert (worker, i) in audit_seen
    # Every store still takes writes after the others crashed.
    context.write("local", "after", "ok")
    hub.record_turn(HubTurn(session_key="after", agent_id="agent", project="proj", oracle="glm", status="ok",
                            question="q", answer="a", elapsed_ms=1.0))
    audit_log_for(settings).append({"ts": 1.0, "worker": "after", "i": 0})


def test_concurrent_writers_lose_nothing_and_never_see_locked(tmp_path: Path) -> None:
    settings = load_settings()
    count = 60
    procs = [_spawn(tmp_path, f"w{n}", count) for n in range(WORKERS)]
    acked = {}
    for n, (proc, ack) in enumerate(procs):
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert b"locked" not in err
        acked[f"w{n}"] = _acked(ack)
        assert len(acked[f"w{n}"]) == count
    _verify(settings, acked)
    assert len(ContextStore(settings.context_db).keys("local")) == WORKERS * count + 1
    assert TraceStore(settings).count() == WORKERS * count
    audit = audit_log_for(settings)
    assert len(audit.segments()) >= 2  # rotation happened under contention
    assert sum(1 for r in audit.iter_records() if r.get("worker") != "after") == WORKERS * count


async def test_writers_killed_mid_write_leave_stores_sound(tmp_path: Path) -> None:
    settings = load_settings()
    procs = [_spawn(tmp_path, f"k{n}", -1) for n in range(WORKERS)]
    try:
        with anyio.fail_after(60):
            while not all(len(_acked(ack)) >= 25 for _proc, ack in procs):
                assert all(proc.poll() is None for proc, _ack in procs)
                await anyio.sleep(0.02)
    finally:
        for proc, _ack in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        for proc, _ack in procs:
            proc.communicate(timeout=30)
    assert all(proc.returncode == -signal.SIGKILL for proc, _ack in procs)
    acked = {f"k{n}": _acked(ack) for n, (_proc, ack) in enumerate(procs)}
    _verify(settings, acked)


@pytest.mark.slow
async def test_repeated_kill_rounds_with_more_writers(tmp_path: Path) -> None:
    """Eight writers, killed at a random moment, five rounds over the same state."""
    settings = load_settings()
    acked: dict[str, list[tuple[int, str]]] = {}
    for round_no in range(5):
        procs = [_spawn(tmp_path, f"r{round_no}w{n}", -1) for n in range(8)]
        try:
            with anyio.fail_after(60):
                while not all(len(_acked(ack)) >= 5 for _proc, ack in procs):
                    await anyio.sleep(0.02)
            await anyio.sleep(random.uniform(0.05, 0.5))
        finally:
            for proc, _ack in procs:
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
            for proc, _ack in procs:
                proc.communicate(timeout=30)
        for n, (proc, ack) in enumerate(procs):
            assert proc.returncode == -signal.SIGKILL
            acked[f"r{round_no}w{n}"] = _acked(ack)
    _verify(settings, acked)


# The SQLite side is the test above, with its file checks.
@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
def test_concurrent_writers_on_postgresql_lose_nothing_and_count_every_turn(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    """Processes sharing one PostgreSQL database (replicas): every acknowledged write is there, and
    the hub's per-session turn counter, an upsert, counted every turn of every process."""
    settings = load_settings()
    count = 30
    procs = [_spawn(tmp_path, f"w{n}", count) for n in range(WORKERS)]
    acked = {}
    for n, (proc, ack) in enumerate(procs):
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        acked[f"w{n}"] = _acked(ack)
        assert len(acked[f"w{n}"]) == count
    pools = store_backend.engines
    context = context_store_for(settings, engines=pools)
    traces = TraceStore(settings, engines=pools)
    hub = SessionHub(settings, engines=pools)
    cache = answer_cache_for(settings, engines=pools)
    assert len(context.keys("local")) == WORKERS * count
    assert traces.count() == WORKERS * count
    sessions = {s.session_key: s.turns for s in hub.list_sessions("local", None, active_only=False)}
    assert sessions == {f"w{n}": count for n in range(WORKERS)}
    for worker, entries in acked.items():
        for i, trace_id in entries:
            assert traces.get("local", trace_id) is not None
            assert cache.get("local", f"{worker}-{i}") is not None
    assert not [p for p in Path(settings.state_dir).rglob("*.db")]
