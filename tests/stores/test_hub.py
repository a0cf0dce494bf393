"""The cross-instance session hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from ask_fable.config import Settings, load_settings
from ask_fable.stores.hub import SessionHub
from ask_fable.stores.records import HubTurn
from tests.conftest import StoreBackend
from tests.fakes.clock import ManualClock


@pytest.fixture(autouse=True)
def backend(store_backend: StoreBackend) -> StoreBackend:
    """Every test here runs on SQLite and on PostgreSQL."""
    return store_backend


@pytest.fixture
def settings() -> Settings:
    return load_settings(hub_preview_chars=10, hub_stale_seconds=300, hub_max_rows=50)


def _turn(hub: SessionHub, key: str = "s1", agent: str = "a1", project: str = "p1", **kw: object) -> None:
    args = {"oracle": "fable", "status": "ok", "question": "What is the safest migration path?",
            "answer": "Use expand/contract.", "elapsed_ms": 120.0}
    args.update(kw)
    hub.record_turn(HubTurn(session_key=key, agent_id=agent, project=project, **args))  # type: ignore[arg-type]


def test_list_sessions_one_row_per_key_and_agent_newest_first(settings: Settings) -> None:
    hub = SessionHub(settings)
    _turn(hub, "s1", "a1")
    _turn(hub, "s1", "a1", question="second")
    _turn(hub, "s1", "a2")
    _turn(hub, "s2", "a1", project="p2")
    rows = hub.list_sessions("local", "p1")
    assert [(r.session_key, r.agent_id) for r in rows] == [("s1", "a2"), ("s1", "a1")]
    a1 = rows[1]
    assert a1.turns == 2 and a1.retained_turns == 2 and a1.last_question == "second"
    assert a1.stale is False
    assert len(hub.list_sessions("local", None)) == 3
    assert len(hub.list_sessions("local", None, limit=1)) == 1


def test_preview_is_capped(settings: Settings) -> None:
    hub = SessionHub(settings)
    _turn(hub)
    preview = hub.list_sessions("local", "p1")[0].last_question
    assert len(preview) == 10 and preview.endswith("…")


def test_stale_sessions_hidden_when_active_only(settings: Settings) -> None:
    clock = ManualClock()
    hub = SessionHub(settings, clock=clock)
    _turn(hub, "old")
    clock.advance(1000)
    _turn(hub, "new")
    assert [r.session_key for r in hub.list_sessions("local", "p1")] == ["new"]
    rows = hub.list_sessions("local", "p1", active_only=False)
    assert [(r.session_key, r.stale) for r in rows] == [("new", False), ("old", True)]


def test_peek_returns_full_turns_across_projects_in_order(settings: Settings) -> None:
    hub = SessionHub(settings)
    _turn(hub, "db", "a1", "p1", question="q1", answer="ans1", sdk_session_id="sdk-1")
    _turn(hub, "db", "a2", "p2", question="q2", answer="ans2")
    _turn(hub, "other", "a1", "p1", question="q3")
    turns = hub.peek("local", "db")
    assert [(t.question, t.answer, t.project) for t in turns] == [
        ("q1", "ans1", "p1"),
        ("q2", "ans2", "p2"),
    ]
    assert turns[0].sdk_session_id == "sdk-1"
    assert [t.question for t in hub.peek("local", "db", agent_id="a2")] == ["q2"]
    assert hub.peek("local", "nothing") == []


def test_stats_totals_by_oracle_agent_status(settings: Settings) -> None:
    clock = ManualClock()
    hub = SessionHub(settings, clock=clock)
    _turn(hub, "s0", "a1", oracle="glm")
    clock.advance(2 * 86400)
    _turn(hub, "s1", "a1", oracle="fable")
    _turn(hub, "s1", "a2", oracle="fable")
    _turn(hub, "s2", "a2", oracle="kimi", status="context_exhausted")
    _turn(hub, "s3", "a3", project="elsewhere")
    stats = hub.stats("local", "p1")
    assert stats["turns"] == 3
    assert stats["by_oracle"] == {"fable": 2, "kimi": 1}
    assert stats["by_agent"] == {"a2": 2, "a1": 1}
    assert stats["by_status"] == {"ok": 2, "context_exhausted": 1}
    assert stats["sessions"] == 4  # not limited to the window
    everything = hub.stats("local", None, window_s=0)
    assert everything["turns"] == 5 and everything["by_oracle"]["glm"] == 1


def test_sweep_trims_oldest_turns_toward_ninety_percent(tmp_path: Path) -> None:
    settings = load_settings(hub_max_rows=10)
    hub = SessionHub(settings, sweep_every=15)
    for i in range(15):
        _turn(hub, question=f"q{i}")
    turns = hub.peek("local", "s1")
    assert [t.question for t in turns] == [f"q{i}" for i in range(6, 15)]
    assert hub.list_sessions("local", "p1")[0].turns == 15  # the heartbeat keeps the total


def test_disabled_hub_writes_nothing() -> None:
    hub = SessionHub(load_settings(hub=False))
    _turn(hub)
    assert hub.peek("local", "s1") == []


def test_questions_and_answers_are_redacted() -> None:
    hub = SessionHub(load_settings(openrouter_api_key="or-exact-value-123"))
    _turn(hub, question="why does or-exact-value-123 fail", answer="rotate ghp_" + "A" * 36)
    turn = hub.peek("local", "s1")[0]
    assert "or-exact-value-123" not in turn.question and "ghp_" not in turn.answer
