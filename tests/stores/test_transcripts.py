"""The conversation transcript store: turns by tenant, model and session, redacted, expiring, shared."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from ask_fable.stores.db import Database
from ask_fable.stores.records import SessionTurn, StoredSessionTurn, Transcript
from ask_fable.stores.tables import session_leases, transcript_turns
from ask_fable.stores.transcripts import TranscriptStore
from tests.conftest import StoreBackend
from tests.fakes.clock import ManualClock

KEY = "sk-ant-PLANTEDtranscriptsecret0123456789"


@pytest.fixture
def db(store_backend: StoreBackend, tmp_path: Path) -> Database:
    """The transcripts' database: a SQLite file, then a PostgreSQL database."""
    return store_backend.open("transcripts", tmp_path / "sessions.db")


def turn(question: str, *, session: str = "s", namespace: str = "deepseek", tenant: str = "local",
         cost: float | None = None) -> SessionTurn:
    return SessionTurn(tenant=tenant, namespace=namespace, session=session, question=question,
                       prompt=f"## Question\n{question}", answer=f"answer to {question}", model="m-1",
                       cost_usd=cost)


def test_turns_come_back_in_order_with_their_numbers_and_the_count_grows(db: Database) -> None:
    store = TranscriptStore(db)
    assert store.append(turn("one?", cost=0.5)) == 1
    assert store.append(turn("two?")) == 2
    turns = store.turns("local", "deepseek", "s")
    assert [(t.number, t.question, t.prompt, t.answer) for t in turns] == [
        (1, "one?", "## Question\none?", "answer to one?"),
        (2, "two?", "## Question\ntwo?", "answer to two?"),
    ]
    assert (turns[0].model, turns[0].cost_usd, turns[1].cost_usd) == ("m-1", 0.5, None)


def test_a_stored_turn_is_the_turn_appended_with_its_number_and_time(db: Database) -> None:
    """One shape from the write to the saved transcript: the store gives back the appended turn itself,
    numbered and timed, and a reset saves those turns as they are."""
    clock = ManualClock(1_780_000_000.0)
    store = TranscriptStore(db, clock=clock)
    appended = turn("one?", tenant="acme", cost=0.25)
    store.append(appended)
    [stored] = store.turns("acme", "deepseek", "s")
    assert isinstance(stored, SessionTurn) and isinstance(stored, StoredSessionTurn)
    assert stored.model_dump(exclude={"number", "ts"}) == appended.model_dump()
    assert (stored.number, stored.ts) == (1, 1_780_000_000.0)
    assert Transcript(key="s", tenant="acme", namespace="deepseek", turns=[stored]).turns[0] is stored


def test_tenants_models_and_sessions_are_separate_conversations(db: Database) -> None:
    store = TranscriptStore(db)
    store.append(turn("local deepseek"))
    store.append(turn("other tenant", tenant="acme"))
    store.append(turn("other model", namespace="opus5"))
    store.append(turn("other session", session="t"))
    assert [t.question for t in store.turns("local", "deepseek", "s")] == ["local deepseek"]
    assert [t.question for t in store.turns("acme", "deepseek", "s")] == ["other tenant"]
    assert [t.question for t in store.turns("local", "opus5", "s")] == ["other model"]
    assert sorted(s["session"] for s in store.sessions("local", "deepseek")) == ["s", "t"]
    assert [s["session"] for s in store.sessions("acme", "deepseek")] == ["s"]


def test_clear_returns_the_turns_and_forgets_only_that_session(db: Database) -> None:
    store = TranscriptStore(db)
    store.append(turn("one?"))
    store.append(turn("kept?", session="other"))
    assert [t.question for t in store.clear("local", "deepseek", "s")] == ["one?"]
    assert store.turns("local", "deepseek", "s") == []
    assert store.clear("local", "deepseek", "s") == []
    assert [s["session"] for s in store.sessions("local", "deepseek")] == ["other"]


def test_a_second_store_on_the_same_file_sees_every_turn(db: Database) -> None:
    """Two server processes (or a restarted one) continue the same conversation from the file."""
    TranscriptStore(db).append(turn("before the restart?"))
    again = TranscriptStore(db)
    assert again.append(turn("after it?")) == 2
    questions = [t.question for t in again.turns("local", "deepseek", "s")]
    assert questions == ["before the restart?", "after it?"]


def test_secrets_are_stored_redacted_and_a_key_is_found_by_its_redacted_label(db: Database) -> None:
    store = TranscriptStore(db, secrets=[KEY])
    store.append(SessionTurn(namespace="glm", session=f"label-{KEY}", question=f"why {KEY}?",
                             prompt=f"ctx {KEY}", answer=f"echo {KEY}", thinking=f"think {KEY}"))
    [stored] = store.turns("local", "glm", f"label-{KEY}")
    assert KEY not in str(stored) and "[REDACTED]" in stored.prompt
    with store.db.read() as conn:
        assert KEY not in str([tuple(row) for row in conn.execute(select(transcript_turns)).all()])


def test_a_session_past_its_retention_reads_as_empty_and_is_swept(db: Database) -> None:
    clock = ManualClock()
    store = TranscriptStore(db, retention_days=1, clock=clock)
    store.append(turn("old?"))
    store.append(turn("stale?", session="stale"))
    clock.advance(2 * 86_400)
    store.append(turn("fresh?", session="fresh"))
    assert store.turns("local", "deepseek", "s") == []
    assert [s["session"] for s in store.sessions("local", "deepseek")] == ["fresh"]
    assert store.sweep() == 1  # the stale session; the expired one was deleted when read
    assert [t.question for t in store.turns("local", "deepseek", "fresh")] == ["fresh?"]


def test_retention_zero_keeps_sessions_until_cleared(db: Database) -> None:
    clock = ManualClock()
    store = TranscriptStore(db, retention_days=0, clock=clock)
    store.append(turn("kept?"))
    clock.advance(10_000 * 86_400)
    assert [t.question for t in store.turns("local", "deepseek", "s")] == ["kept?"]
    assert store.sweep() == 0


def test_a_session_lease_has_one_holder_until_released_or_expired(db: Database) -> None:
    """Two stores on one database (two processes): while one holds a session's lease the other
    cannot take it; it can once the lease is released, or once it expired unrenewed."""
    clock = ManualClock()
    here, there = TranscriptStore(db, clock=clock), TranscriptStore(db, clock=clock)
    assert here.lease("local", "deepseek", "s", "turn-a", 10)
    assert not there.lease("local", "deepseek", "s", "turn-b", 10)
    assert there.lease("local", "deepseek", "other", "turn-b", 10), "other sessions are free"
    assert there.lease("acme", "deepseek", "s", "turn-b", 10), "so are other tenants' sessions"
    assert here.lease("local", "deepseek", "s", "turn-a", 10), "the holder may take it again"
    here.release("local", "deepseek", "s", "turn-b")  # not its holder: nothing happens
    assert not there.lease("local", "deepseek", "s", "turn-b", 10)
    here.release("local", "deepseek", "s", "turn-a")
    assert there.lease("local", "deepseek", "s", "turn-b", 10)
    clock.advance(11)
    assert here.lease("local", "deepseek", "s", "turn-c", 10), "an expired lease is taken over"
    assert not there.renew("local", "deepseek", "s", "turn-b", 10), "its old holder has lost it"


def test_renewing_a_lease_keeps_it_past_its_first_expiry(db: Database) -> None:
    clock = ManualClock()
    store = TranscriptStore(db, clock=clock)
    assert store.lease("local", "deepseek", "s", "long-turn", 10)
    clock.advance(8)
    assert store.renew("local", "deepseek", "s", "long-turn", 10)
    clock.advance(8)
    assert not store.lease("local", "deepseek", "s", "next-turn", 10)
    clock.advance(3)
    assert store.lease("local", "deepseek", "s", "next-turn", 10)


def test_a_session_key_with_a_secret_is_leased_under_its_redacted_label(db: Database) -> None:
    store = TranscriptStore(db, secrets=[KEY])
    assert store.lease("local", "glm", f"label-{KEY}", "turn", 10)
    assert not store.lease("local", "glm", f"label-{KEY}", "other", 10)
    with store.db.read() as conn:
        assert KEY not in str([tuple(row) for row in conn.execute(select(session_leases)).all()])
