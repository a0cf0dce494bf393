"""Sweeps and the writes that trim old rows run through ``Database.run_write``, on SQLite and on
PostgreSQL: when PostgreSQL aborts one for a conflict with another replica's (two replicas trimming
the same old rows in different orders deadlock), the whole transaction runs again and the caller
sees the second run's result, never an error. The conflict is simulated by a database that aborts
each transaction's first run after its body (as PostgreSQL does on a deadlock); a plain
``write()`` there fails the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import Connection, select

from ask_fable.config import load_settings
from ask_fable.stores.answers import DatabaseArchive
from ask_fable.stores.cache import AnswerCache
from ask_fable.stores.db import Database, Dialect
from ask_fable.stores.hub import SessionHub
from ask_fable.stores.records import SavedAnswer, SessionTurn
from ask_fable.stores.tables import documents
from ask_fable.stores.traces import TraceStore
from ask_fable.stores.transcripts import TranscriptStore
from tests.conftest import StoreBackend
from tests.fakes.clock import ManualClock

T = TypeVar("T")
DAY_S = 86_400.0


class SimulatedDeadlock(Exception):
    """What PostgreSQL raises for a transaction it aborted to break a deadlock."""

    sqlstate = "40P01"


class AbortsFirstRun:
    """A :class:`Database` whose ``run_write`` transactions are each aborted once, after their body ran
    (PostgreSQL: then run again by ``run_write``), and whose plain ``write()`` is refused."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.dialect: Dialect = db.dialect
        self.runs = 0

    def read(self) -> AbstractContextManager[Connection]:
        """The real read."""
        return self.db.read()

    def write(self) -> AbstractContextManager[Connection]:
        """Refused: a trimming write must be one ``run_write`` may run again."""
        raise AssertionError("a write that trims old rows must run through run_write")

    def run_write(self, body: Callable[[Connection], T]) -> T:
        """``body`` through the real ``run_write``, its first run aborted on PostgreSQL."""
        aborted: list[bool] = []

        def once_aborted(conn: Connection) -> T:
            self.runs += 1
            result = body(conn)
            if self.dialect == "postgres" and not aborted:
                aborted.append(True)
                raise SimulatedDeadlock("deadlock detected")
            return result

        return self.db.run_write(once_aborted)

    def close(self) -> None:
        """Close the real database."""
        self.db.close()


def _runs_expected(backend: StoreBackend, transactions: int) -> int:
    """Body runs for ``transactions`` transactions: twice each on PostgreSQL, once on SQLite."""
    return transactions * (2 if backend.name == "postgres" else 1)


@pytest.fixture
def clock() -> ManualClock:
    """A wall clock the test moves."""
    return ManualClock()


@pytest.fixture
def transcripts(store_backend: StoreBackend, tmp_path: Path, clock: ManualClock) -> Iterator[TranscriptStore]:
    """A transcript store keeping sessions a day, with one expired session (3 turns) and one live."""
    db = store_backend.open("transcripts", tmp_path / "sessions.db")
    plain = TranscriptStore(db, retention_days=1, clock=clock, sweep_every=10_000)
    for number in range(3):
        plain.append(SessionTurn(namespace="deepseek", session="old", question=f"q{number}", prompt="p",
                                 answer="a"))
    clock.advance(2 * DAY_S)
    plain.append(SessionTurn(namespace="deepseek", session="live", question="q", prompt="p", answer="a"))
    yield TranscriptStore(AbortsFirstRun(db), retention_days=1, clock=clock, sweep_every=1)


def test_a_transcript_sweep_aborted_by_a_conflict_runs_again_and_deletes_each_expired_turn(
    transcripts: TranscriptStore, store_backend: StoreBackend
) -> None:
    assert transcripts.sweep() == 3
    assert isinstance(transcripts.db, AbortsFirstRun)
    assert transcripts.db.runs == _runs_expected(store_backend, 1)
    assert [s["session"] for s in transcripts.sessions("local", "deepseek")] == ["live"]


def test_a_turn_whose_write_sweeps_counts_its_session_once_when_run_again(
    transcripts: TranscriptStore, store_backend: StoreBackend
) -> None:
    appended = transcripts.append(SessionTurn(namespace="deepseek", session="live", question="q2",
                                              prompt="p", answer="a"))
    assert appended == 2
    assert transcripts.turns("local", "deepseek", "old") == []
    assert len(transcripts.clear("local", "deepseek", "live")) == 2
    assert isinstance(transcripts.db, AbortsFirstRun)
    assert transcripts.db.runs == _runs_expected(store_backend, 2)


def test_the_cache_hub_and_trace_sweeps_run_through_run_write(
    store_backend: StoreBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: ManualClock
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    settings = load_settings()
    cache = AnswerCache(AbortsFirstRun(store_backend.open("cache", tmp_path / "cache.db")), ttl=60,
                        max_rows=100, clock=clock)
    hub, traces = SessionHub(settings), TraceStore(settings)
    hub.db, traces.db = AbortsFirstRun(hub.db), AbortsFirstRun(traces.db)
    assert (cache.sweep(), hub.sweep(), traces.sweep()) == (0, 0, 0)
    for swept in (cache.db, hub.db, traces.db):
        assert isinstance(swept, AbortsFirstRun)
        assert swept.runs == _runs_expected(store_backend, 1)


@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
def test_saved_answers_trimmed_to_their_cap_by_a_write_run_again_keep_the_newest(
    store_backend: StoreBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved answers live in the database only on PostgreSQL (Markdown files otherwise)."""
    monkeypatch.setenv("ASK_FABLE_MAX_ANSWERS", "2")
    settings = load_settings()
    archive = DatabaseArchive(settings, AbortsFirstRun(store_backend.open("answers", tmp_path / "unused")))
    kept = [archive.save_answer(SavedAnswer(tool="ask_glm", question=f"q{n}", answer=f"a{n}"))
            for n in range(3)]
    with archive.db.read() as conn:
        names = [f"postgresql:answers/{doc_id}" for doc_id in conn.scalars(
            select(documents.c.id).where(documents.c.kind == "answers").order_by(documents.c.id))]
    assert names == kept[1:]
