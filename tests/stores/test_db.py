"""The shared SQLite wrapper: permissions, WAL, migrations, transactions, contention retries."""

from __future__ import annotations

import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from ask_fable.errors import SchemaMismatch
from ask_fable.stores.db import SqliteDatabase, split_statements

MIGRATIONS = [
    "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX a_v ON a(v);",
    "ALTER TABLE a ADD COLUMN w TEXT DEFAULT 'x;y';",
]


def test_file_is_0600_in_a_0700_dir_with_wal(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "new" / "s.db", MIGRATIONS)
    with db.write() as conn:
        conn.execute("INSERT INTO a (v) VALUES ('1')")
    assert stat.S_IMODE(db.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.path.parent.stat().st_mode) == 0o700
    for companion in db.path.parent.iterdir():
        assert stat.S_IMODE(companion.stat().st_mode) == 0o600, companion.name
    with db.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_migrations_apply_in_order_and_only_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first = SqliteDatabase(path, MIGRATIONS[:1])
    with first.write() as conn:
        conn.execute("INSERT INTO a (v) VALUES ('kept')")
    assert first.schema_version == 1
    second = SqliteDatabase(path, MIGRATIONS)
    assert second.schema_version == 2
    with second.read() as conn:
        assert [tuple(r) for r in conn.execute("SELECT v, w FROM a")] == [("kept", "x;y")]
    assert SqliteDatabase(path, MIGRATIONS).schema_version == 2  # re-open: nothing re-applied


def test_failed_migration_leaves_the_previous_schema(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    SqliteDatabase(path, MIGRATIONS[:1]).integrity_check()
    broken = SqliteDatabase(path, [MIGRATIONS[0], "CREATE TABLE b (x); CREATE TABLE b (y);"])
    with pytest.raises(sqlite3.OperationalError):
        broken.integrity_check()
    plain = sqlite3.connect(path)
    assert plain.execute("PRAGMA user_version").fetchone()[0] == 1
    assert plain.execute("SELECT count(*) FROM sqlite_master WHERE name = 'b'").fetchone()[0] == 0
    plain.close()


def test_write_rolls_back_when_the_body_raises(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "r.db", MIGRATIONS)
    with pytest.raises(RuntimeError), db.write() as conn:
        conn.execute("INSERT INTO a (v) VALUES ('lost')")
        raise RuntimeError("stop")
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM a").fetchone()[0] == 0


def test_split_statements_keeps_semicolons_inside_literals() -> None:
    script = "CREATE TABLE t (x TEXT DEFAULT ';'); INSERT INTO t VALUES ('a;b');\n"
    assert split_statements(script) == [
        "CREATE TABLE t (x TEXT DEFAULT ';');",
        "INSERT INTO t VALUES ('a;b');",
    ]


def test_write_waits_for_a_held_lock_instead_of_failing(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "busy.db", MIGRATIONS, busy_timeout_ms=50, lock_wait_s=10)
    db.integrity_check()
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
        conn.execute("INSERT INTO a (v) VALUES ('after')")
    thread.join()
    blocker.close()
    with db.read() as conn:
        assert conn.execute("SELECT v FROM a").fetchone()[0] == "after"


def test_a_lock_held_past_the_bound_surfaces_as_an_error(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "stuck.db", MIGRATIONS, busy_timeout_ms=20, lock_wait_s=0.2)
    db.integrity_check()
    blocker = sqlite3.connect(db.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"), db.write():
            pass
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_threads_share_one_database_object(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "t.db", MIGRATIONS)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(40):
                with db.write() as conn:
                    conn.execute("INSERT INTO a (v) VALUES (?)", (f"{n}-{i}",))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with db.read() as conn:
        assert conn.execute("SELECT count(DISTINCT v) FROM a").fetchone()[0] == 240
    assert db.integrity_check() == "ok"


def test_a_thread_keeps_a_bounded_number_of_connections(tmp_path: Path) -> None:
    from ask_fable.stores import db as db_mod

    pool = db_mod.Connections()
    dbs = [SqliteDatabase(tmp_path / f"many{i}.db", MIGRATIONS, connections=pool)
           for i in range(db_mod.MAX_THREAD_CONNECTIONS + 8)]
    for db in dbs:
        with db.write() as conn:
            conn.execute("INSERT INTO a (v) VALUES ('x')")
    assert len(pool.thread_map()) <= db_mod.MAX_THREAD_CONNECTIONS
    for db in dbs:  # evicted ones reopen transparently
        with db.read() as conn:
            assert conn.execute("SELECT count(*) FROM a").fetchone()[0] == 1


def test_a_replaced_file_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "replaced.db"
    db = SqliteDatabase(path, MIGRATIONS)
    with db.write() as conn:
        conn.execute("INSERT INTO a (v) VALUES ('old')")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with db.read() as conn:  # a fresh file, migrated again
        assert conn.execute("SELECT count(*) FROM a").fetchone()[0] == 0


def test_closing_the_pool_closes_every_threads_connection(tmp_path: Path) -> None:
    """The App's pool closes what each of its threads opened; the databases reopen on next use."""
    from ask_fable.stores.db import Connections

    pool = Connections()
    db = SqliteDatabase(tmp_path / "pooled.db", MIGRATIONS, connections=pool)
    opened: list[sqlite3.Connection] = []

    def work() -> None:
        with db.write() as conn:
            conn.execute("INSERT INTO a (v) VALUES ('x')")
            opened.append(conn)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    work()
    assert len(opened) == 2 and opened[0] is not opened[1]
    pool.close()
    for conn in opened:
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM a").fetchone()[0] == 2


def test_a_file_written_by_a_newer_release_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    newer = SqliteDatabase(path, [*MIGRATIONS, "CREATE TABLE later (x)"])
    assert newer.schema_version == 3
    newer.close()
    older = SqliteDatabase(path, MIGRATIONS)
    with pytest.raises(SchemaMismatch, match="newer than this ask-fable") as refused, older.read():
        pass
    older.close()
    assert refused.value.to_result()["kind"] == "unavailable"
    assert SqliteDatabase(path, [*MIGRATIONS, "CREATE TABLE later (x)"]).schema_version == 3


def test_a_read_only_pool_reads_without_creating_migrating_or_writing(tmp_path: Path) -> None:
    """Read-only connections see a file not created yet as empty (and create nothing), see what a
    writer stored once it exists, refuse every write, and leave the database file's bytes as they were."""
    from ask_fable.stores.db import Connections

    path = tmp_path / "state" / "s.db"
    reader = SqliteDatabase(path, MIGRATIONS, connections=Connections(read_only=True))
    with reader.read() as conn:
        assert conn.execute("SELECT count(*) FROM a").fetchone()[0] == 0
    assert not path.parent.exists()
    writer = SqliteDatabase(path, MIGRATIONS)
    with writer.write() as conn:
        conn.execute("INSERT INTO a (v) VALUES ('kept')")
    writer.close()
    stored = path.read_bytes()
    with reader.read() as conn:
        assert [r[0] for r in conn.execute("SELECT v FROM a")] == ["kept"]
    with pytest.raises(sqlite3.OperationalError, match="readonly"), reader.write() as conn:
        conn.execute("INSERT INTO a (v) VALUES ('lost')")
    reader.close()
    assert path.read_bytes() == stored
