"""Reading a trace's events as a timeline when the events are incomplete: traces recorded before
every event existed, and calls cancelled before their backend answered."""

from __future__ import annotations

from ask_fable.stores.records import TraceEvent
from ask_fable.surface.ui.timeline import build_timeline


def test_an_end_without_a_start_is_drawn_from_its_duration() -> None:
    """Traces written before starts were paired still show each backend call where it ran."""
    events = [
        {"t_ms": 0, "name": "request", "attrs": {"tool": "ask_glm", "mode": "single"}},
        {"t_ms": 900, "name": "provider.end", "attrs": {"token": "glm", "status": "ok", "elapsed_ms": 800}},
        {"t_ms": 905, "name": "response", "attrs": {"status": "ok"}},
    ]
    timeline = build_timeline([TraceEvent.model_validate(event) for event in events], tool="ask_glm")
    [backend] = [lane for lane in timeline.lanes if lane.kind_of_lane == "backend"]
    assert (backend.start_ms, backend.end_ms, backend.outcome) == (100, 900, "ok")
    assert timeline.total_ms == 905


def test_a_start_without_an_end_runs_to_the_response_unfinished() -> None:
    """A call cut short (a chain past its deadline) leaves its backend call open: shown until the end."""
    events = [
        {"t_ms": 0, "name": "request", "attrs": {"mode": "chain"}},
        {"t_ms": 5, "name": "mode.start", "attrs": {"mode": "chain"}},
        {"t_ms": 10, "name": "provider.start", "attrs": {"token": "glm", "role": "draft"}},
        {
            "t_ms": 50,
            "name": "provider.retry",
            "attrs": {
                "token": "glm",
                "role": "draft",
                "attempt": 1,
                "cause": "connection failed (ConnectError)",
                "delay_ms": 20,
            },
        },
        {"t_ms": 600, "name": "response", "attrs": {"status": "error", "kind": "timeout"}},
    ]
    timeline = build_timeline([TraceEvent.model_validate(event) for event in events], tool="ask_chain")
    assert [lane.key for lane in timeline.lanes][:2] == ["call", "mode"]
    assert timeline.lanes[0].outcome == timeline.lanes[1].outcome == "timeout"
    [backend] = [lane for lane in timeline.lanes if lane.kind_of_lane == "backend"]
    assert [s.outcome for s in backend.segments] == ["retried", "wait", "unfinished"]
    assert backend.segments[0].label.startswith("attempt 1: connection failed")
    assert backend.end_ms == 600 and backend.retries == 1
    assert "cancelled with the call" in backend.notes[-1]
