"""Write transactions that conflict: PostgreSQL aborts one of two transactions that lock rows in
opposite orders (a deadlock) or cannot be serialized; ``Database.run_write`` runs the aborted one
again, so neither caller sees an error. Provoked on the real server, not simulated."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import Connection, Update, insert, select, update

from ask_fable.errors import Unavailable
from ask_fable.stores.db import WRITE_ATTEMPTS, Database
from ask_fable.stores.tables import quota_keys
from tests.conftest import StoreBackend

#: PostgreSQL looks for deadlocks after a lock wait this long (1 s by default).
FAST_DEADLOCK_CHECK = "SET LOCAL deadlock_timeout = '50ms'"


def _keys_table(db: Database, ids: tuple[int, ...]) -> None:
    """Rows to lock: one ``quota_keys`` row per id, admissions 0."""
    with db.write() as conn:
        conn.execute(insert(quota_keys), [{"tenant": "t", "key_id": i, "admissions": 0} for i in ids])


def _add(key_id: int, admissions: int = 1) -> Update:
    """``admissions`` more for the ``quota_keys`` row of ``key_id``."""
    return (update(quota_keys).where(quota_keys.c.key_id == key_id)
            .values(admissions=quota_keys.c.admissions + admissions))


def _admissions(db: Database) -> dict[int, int]:
    with db.read() as conn:
        return {int(key_id): int(admissions) for key_id, admissions in conn.execute(
            select(quota_keys.c.key_id, quota_keys.c.admissions).order_by(quota_keys.c.key_id))}


def test_run_write_commits_its_body_once_and_returns_its_result(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    db = store_backend.open("quotas", tmp_path / "quotas.db")
    _keys_table(db, (1,))
    runs: list[int] = []

    def body(conn: Connection) -> int:
        runs.append(1)
        return int(conn.execute(_add(1, 5).returning(quota_keys.c.admissions)).scalar_one())

    assert db.run_write(body) == 5
    assert runs == [1]
    assert _admissions(db) == {1: 5}


def test_a_body_that_raises_is_rolled_back_and_not_run_again(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    db = store_backend.open("quotas", tmp_path / "quotas.db")
    _keys_table(db, (1,))
    runs: list[int] = []

    def body(conn: Connection) -> None:
        runs.append(1)
        conn.execute(update(quota_keys).where(quota_keys.c.key_id == 1).values(admissions=9))
        raise ValueError("the caller's own failure")

    with pytest.raises(ValueError, match="the caller's own failure"):
        db.run_write(body)
    assert runs == [1]
    assert _admissions(db) == {1: 0}


@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
def test_two_writers_locking_rows_in_opposite_orders_both_commit(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    """Each writer locks its first row, waits until the other has too, then wants the other's: a real
    deadlock. PostgreSQL aborts one, which runs again, and both increments land once. (A writer run
    again can win the race for its first row against the one still waiting for it, and deadlock with
    it once more: then one of them runs again, a third time in all.)"""
    db = store_backend.open("quotas", tmp_path / "quotas.db")
    _keys_table(db, (1, 2))
    both_hold_one = threading.Barrier(2, timeout=30)
    attempts = {"forward": 0, "backward": 0}
    errors: list[BaseException] = []

    def writer(name: str, order: tuple[int, int]) -> None:
        def body(conn: Connection) -> None:
            attempts[name] += 1
            conn.exec_driver_sql(FAST_DEADLOCK_CHECK)
            conn.execute(_add(order[0]))
            if attempts[name] == 1:
                both_hold_one.wait()
            conn.execute(_add(order[1]))

        try:
            db.run_write(body)
        except BaseException as exc:  # collected: the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=("forward", (1, 2))),
               threading.Thread(target=writer, args=("backward", (2, 1)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sum(attempts.values()) >= 3  # at least one was aborted and ran again
    assert _admissions(db) == {1: 2, 2: 2}


@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
def test_a_write_that_keeps_failing_to_serialize_is_unavailable_after_bounded_attempts(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    """The server reports a serialization failure at every attempt: the write is tried a bounded number
    of times, then fails as ``unavailable`` (retryable), with nothing committed."""
    db = store_backend.open("quotas", tmp_path / "quotas.db")
    _keys_table(db, (1,))
    attempts: list[int] = []

    def body(conn: Connection) -> None:
        attempts.append(1)
        conn.execute(_add(1))
        conn.exec_driver_sql("DO $$ BEGIN RAISE EXCEPTION 'could not serialize access' "
                             "USING ERRCODE = 'serialization_failure'; END $$")

    with pytest.raises(Unavailable) as failed:
        db.run_write(body)
    assert len(attempts) == WRITE_ATTEMPTS
    result = failed.value.to_result()
    assert result["kind"] == "unavailable" and "conflicting" in result["detail"] and result["hint"]
    assert _admissions(db) == {1: 0}


@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
def test_a_conflict_in_a_plain_write_is_unavailable_not_a_driver_error(
        store_backend: StoreBackend, tmp_path: Path) -> None:
    db = store_backend.open("quotas", tmp_path / "quotas.db")
    with pytest.raises(Unavailable, match="conflicting"), db.write() as conn:
        conn.exec_driver_sql("DO $$ BEGIN RAISE EXCEPTION 'deadlock' USING ERRCODE = 'deadlock_detected'; "
                             "END $$")
