"""The stores' SQLite files: permissions, WAL, the Alembic schema, transactions, contention retries,
bounded pools, replaced files and read-only readers."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select

from ask_fable.errors import SchemaMismatch
from ask_fable.stores import db as db_module
from ask_fable.stores import engines as engines_module
from ask_fable.stores.db import Database
from ask_fable.stores.engines import Engines
from ask_fable.stores.schema import head
from ask_fable.stores.tables import context


def _row(key: str, value: str = "v") -> dict[str, object]:
    return {"tenant": "local", "key": key, "value": value, "size_chars": len(value), "created_at": 1.0,
            "updated_at": 1.0}


def _count(db: Database) -> int:
    with db.read() as conn:
        return int(conn.scalar(select(func.count()).select_from(context)) or 0)


def test_file_is_0600_in_a_0700_dir_with_wal(tmp_path: Path) -> None:
    db = Database.sqlite(tmp_path / "new" / "s.db", "context")
    with db.write() as conn:
        conn.execute(insert(context).values(**_row("a")))
    assert db.path is not None
    assert stat.S_IMODE(db.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.path.parent.stat().st_mode) == 0o700
    for companion in db.path.parent.iterdir():
        assert stat.S_IMODE(companion.stat().st_mode) == 0o600, companion.name
    with db.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    db.close()


def _file_with_one_entry(path: Path) -> None:
    made = Database.sqlite(path, "context")
    with made.write() as conn:
        conn.execute(insert(context).values(**_row("kept")))
    made.close()


def test_a_new_file_is_brought_to_the_head_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _file_with_one_entry(path)
    plain = sqlite3.connect(path)
    assert plain.execute("SELECT version_num FROM alembic_version").fetchall() == [(head(),)]
    # The old version marker is set past every release that knew only the old scripts.
    assert plain.execute("PRAGMA user_version").fetchone()[0] == 1000
    plain.close()
    again = Database.sqlite(path, "context")
    assert _count(again) == 1
    again.close()


def test_the_head_a_current_store_is_checked_against_is_the_last_revision_of_the_history() -> None:
    from alembic.script import ScriptDirectory

    from ask_fable.stores.schema import alembic_config

    assert head() == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_a_current_file_is_opened_without_loading_alembic(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _file_with_one_entry(path)
    probe = (
        "import sys\n"
        "from ask_fable.stores.db import Database\n"
        f"db = Database.sqlite({str(path)!r}, 'context')\n"
        "with db.read() as conn: pass\n"
        "db.close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))\n"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_write_rolls_back_when_the_body_raises(tmp_path: Path) -> None:
    db = Database.sqlite(tmp_path / "r.db", "context")
    with pytest.raises(RuntimeError), db.write() as conn:
        conn.execute(insert(context).values(**_row("lost")))
        raise RuntimeError("stop")
    assert _count(db) == 0
    db.close()


def test_write_waits_for_a_held_lock_instead_of_failing(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines_module, "BUSY_TIMEOUT_MS", 50)
    db = Database.sqlite(tmp_path / "busy.db", "context")
    assert _count(db) == 0
    assert db.path is not None
    blocker = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    released = threading.Event()

    def release() -> None:
        released.wait(0.4)
        blocker.execute("COMMIT")

    thread = threading.Thread(target=release)
    thread.start()
    # The busy timeout (50 ms) expires several times; the retry loop still gets the lock.
    with db.write() as conn:
        conn.execute(insert(context).values(**_row("after")))
    thread.join()
    blocker.close()
    assert _count(db) == 1
    db.close()


def test_a_lock_held_past_the_bound_surfaces_as_an_error(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines_module, "BUSY_TIMEOUT_MS", 20)
    monkeypatch.setattr(db_module, "LOCK_WAIT_S", 0.2)
    db = Database.sqlite(tmp_path / "stuck.db", "context")
    assert _count(db) == 0
    assert db.path is not None
    blocker = sqlite3.connect(db.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(Exception, match="locked"), db.write():
            pass
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    db.close()


def test_threads_share_one_database_object_on_a_bounded_pool(tmp_path: Path) -> None:
    """Many threads write through one Database; the file is opened a bounded number of times, whatever
    the number of threads (a server's worker threads once held a connection each, per file)."""
    db = Database.sqlite(tmp_path / "t.db", "context")
    errors: list[BaseException] = []
    peak: list[int] = []
    start = threading.Barrier(24)

    def work(n: int) -> None:
        try:
            start.wait()
            for i in range(20):
                with db.write() as conn:
                    conn.execute(insert(context).values(**_row(f"{n}-{i}")))
                    peak.append(db.engines.open_count)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _count(db) == 24 * 20
    bound = engines_module.SQLITE_POOL_SIZE + engines_module.SQLITE_POOL_OVERFLOW
    assert max(peak) <= bound
    assert db.path is not None
    held = [fd for fd in os.listdir("/proc/self/fd")
            if os.path.realpath(f"/proc/self/fd/{fd}").startswith(str(db.path))]
    assert len(held) <= 3 * bound  # the file, its WAL and shared memory, per pooled connection
    with db.read() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    db.close()


def test_a_replaced_file_is_reopened_with_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "replaced.db"
    db = Database.sqlite(path, "context")
    with db.write() as conn:
        conn.execute(insert(context).values(**_row("old")))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    assert _count(db) == 0  # a fresh file, made current again
    with db.write() as conn:
        conn.execute(insert(context).values(**_row("new")))
    assert _count(db) == 1
    db.close()


def test_closing_the_engines_closes_every_connection_and_they_reopen(tmp_path: Path) -> None:
    engines = Engines()
    db = Database.sqlite(tmp_path / "pooled.db", "context", engines=engines)

    def work() -> None:
        with db.write() as conn:
            conn.execute(insert(context).values(**_row(f"k{threading.get_ident()}")))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    work()
    assert engines.open_count >= 1
    engines.close()
    assert engines.open_count == 0
    assert _count(db) == 2
    engines.close()


def test_a_file_written_by_a_newer_release_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    db = Database.sqlite(path, "context")
    assert _count(db) == 0
    db.close()
    plain = sqlite3.connect(path)
    plain.execute("UPDATE alembic_version SET version_num = 'f00dfeed'")
    plain.commit()
    plain.close()
    before = path.read_bytes()
    older = Database.sqlite(path, "context")
    with pytest.raises(SchemaMismatch, match="newer than this ask-fable") as refused, older.read():
        pass
    older.close()
    assert refused.value.to_result()["kind"] == "unavailable"
    assert path.read_bytes() == before


def test_a_read_only_reader_neither_creates_migrates_nor_writes(tmp_path: Path) -> None:
    """A reader sees a file not created yet as empty (and creates nothing), sees what a writer stored
    once it exists, has every write refused, and leaves the file's bytes as they were."""
    path = tmp_path / "state" / "s.db"
    reader = Database.sqlite(path, "context", engines=Engines(read_only=True))
    assert _count(reader) == 0
    assert not path.parent.exists()
    writer = Database.sqlite(path, "context")
    with writer.write() as conn:
        conn.execute(insert(context).values(**_row("kept")))
    writer.close()
    stored = path.read_bytes()
    with reader.read() as conn:
        assert list(conn.scalars(select(context.c.key))) == ["kept"]
    with pytest.raises(Exception, match="readonly"), reader.write() as conn:
        conn.execute(insert(context).values(**_row("lost")))
    reader.close()
    reader.engines.close()
    assert path.read_bytes() == stored
