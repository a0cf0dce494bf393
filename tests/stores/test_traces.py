"""The trace store: index, filters, paging, events, and full-mode bundles."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from ask_fable.config import Settings, load_settings
from ask_fable.stores.records import TraceRecord
from ask_fable.stores.trace_ids import new_trace_id, valid_trace_id
from ask_fable.stores.traces import TraceStore
from tests.conftest import StoreBackend


@pytest.fixture(autouse=True)
def backend(store_backend: StoreBackend) -> StoreBackend:
    """Every test here runs on SQLite and on PostgreSQL."""
    return store_backend


@pytest.fixture
def settings() -> Settings:
    return load_settings(trace_mode="full")


def _trace(i: int, **kw: object) -> TraceRecord:
    trace = {
        "trace_id": f"{i:012x}abcdef012345", "ts": 1_700_000_000.0 + i, "tool": "ask_glm", "mode": "single",
        "status": "ok", "kind": None, "session": "s1", "project": "p1", "agent_id": "a1",
        "elapsed_ms": 100.0 + i, "providers": ["glm"], "models": ["glm-5.2"], "cached": False,
        "events": [
            {"t_ms": 0, "name": "start", "attrs": {"n": i}},
            {"t_ms": 5.5, "name": "end", "attrs": {}},
        ],
    }
    trace.update(kw)
    return TraceRecord.model_validate(trace)


def test_new_trace_ids_are_unique_sortable_and_valid() -> None:
    first = new_trace_id()
    time.sleep(0.002)
    ids = [new_trace_id() for _ in range(200)]
    assert len(set(ids)) == 200
    assert all(valid_trace_id(t) and len(t) == 24 for t in ids)
    assert first < min(ids)
    assert not valid_trace_id("../etc/passwd") and not valid_trace_id("")


def test_record_then_get_returns_ordered_events_and_fields(settings: Settings) -> None:
    store = TraceStore(settings)
    store.record(_trace(1, cached=True, providers=["glm", "kimi"]))
    got = store.get("local", _trace(1).trace_id)
    assert got is not None
    assert got.tool == "ask_glm" and got.cached is True and got.providers == ["glm", "kimi"]
    assert [e.name for e in got.events] == ["start", "end"]
    assert got.events[0].attrs == {"n": 1} and got.events[1].t_ms == 5.5
    assert got.artifacts == {}
    assert store.get("local", "ffffffffffffffffffffffff") is None
    assert store.get("local", "../x") is None


def test_record_twice_replaces_the_trace(settings: Settings) -> None:
    """A trace recorded again keeps nothing of the first record: not its fields, events or providers,
    alone or in a group with new traces (or with itself)."""
    store = TraceStore(settings)
    store.record(_trace(1))
    store.record(_trace(1, status="error", providers=["kimi"],
                        events=[{"t_ms": 1, "name": "only", "attrs": {}}]))
    got = store.get("local", _trace(1).trace_id)
    assert got is not None and got.status == "error" and [e.name for e in got.events] == ["only"]
    assert got.providers == ["kimi"] and store.list("local", provider="glm") == []
    store.record_many([_trace(2), _trace(1, status="ok"), _trace(3)])
    got = store.get("local", _trace(1).trace_id)
    assert got is not None and got.status == "ok"
    assert [e.name for e in got.events] == ["start", "end"]
    assert [r.trace_id for r in store.list("local", provider="kimi")] == []
    assert store.count() == 3
    # Given twice in one group, a trace is stored as last given.
    store.record_many([_trace(4), _trace(4, status="error", providers=["kimi"],
                                         events=[{"t_ms": 1, "name": "only", "attrs": {}}])])
    got = store.get("local", _trace(4).trace_id)
    assert got is not None and got.status == "error" and [e.name for e in got.events] == ["only"]
    assert got.providers == ["kimi"] and store.count() == 4


def test_list_is_newest_first_without_events_and_filters(settings: Settings) -> None:
    store = TraceStore(settings)
    for i in range(10):
        store.record(_trace(
            i,
            tool="ask_glm" if i % 2 else "ask_kimi",
            status="error" if i == 7 else "ok",
            providers=["glm"] if i % 2 else ["kimi", "glm"] if i == 4 else ["kimi"],
            session="s2" if i >= 8 else "s1",
            project="p2" if i == 3 else "p1",
        ))
    rows = store.list("local")
    assert [r.trace_id[:12] for r in rows] == [f"{i:012x}" for i in range(9, -1, -1)]
    assert all("events" not in r for r in rows)
    kimi_times = [r.ts for r in store.list("local", tool="ask_kimi")]
    assert kimi_times == [1_700_000_000.0 + i for i in (8, 6, 4, 2, 0)]
    assert [r.status for r in store.list("local", status="error")] == ["error"]
    kimi = [int(r.trace_id[:12], 16) for r in store.list("local", provider="kimi")]
    assert kimi == [8, 6, 4, 2, 0]
    glm = [int(r.trace_id[:12], 16) for r in store.list("local", provider="glm")]
    assert glm == [9, 7, 5, 4, 3, 1]
    assert len(store.list("local", session="s2")) == 2
    assert [int(r.trace_id[:12], 16) for r in store.list("local", project="p2")] == [3]
    assert len(store.list("local", limit=3)) == 3


def test_before_pages_by_trace_id_or_timestamp(settings: Settings) -> None:
    store = TraceStore(settings)
    for i in range(6):
        store.record(_trace(i))
    page1 = store.list("local", limit=2)
    page2 = store.list("local", limit=2, before=page1[-1].trace_id)
    page3 = store.list("local", limit=2, before=page2[-1].trace_id)
    ids = [r.trace_id for r in page1 + page2 + page3]
    assert len(set(ids)) == 6
    earlier = store.list("local", before=1_700_000_002.0)
    assert [r.ts for r in earlier] == [1_700_000_001.0, 1_700_000_000.0]
    assert [r.ts for r in store.list("local", before="1700000001")] == [1_700_000_000.0]
    assert store.list("local", before="ffffffffffffffffffffffff") == []
    glm_page = store.list("local", provider="glm", limit=2, before=page1[-1].trace_id)
    assert [r.trace_id for r in glm_page] == [r.trace_id for r in page2]


def test_same_timestamp_pages_without_loss(settings: Settings) -> None:
    store = TraceStore(settings)
    for i in range(5):
        store.record(_trace(i, ts=1_700_000_000.0))
    seen: list[str] = []
    before = None
    while True:
        page = store.list("local", limit=2, before=before)
        if not page:
            break
        seen += [r.trace_id for r in page]
        before = page[-1].trace_id
    assert len(seen) == 5 and len(set(seen)) == 5


def test_event_attrs_are_redacted(settings: Settings) -> None:
    store = TraceStore(settings)
    planted = "sk-ant-api03-" + "Z" * 40
    store.record(_trace(1, events=[{"t_ms": 0, "name": "note", "attrs": {"detail": f"bad key {planted}"}}]))
    got = store.get("local", _trace(1).trace_id)
    assert got is not None and planted not in got.model_dump_json()


def test_bundle_is_redacted_private_and_excerpted(settings: Settings) -> None:
    store = TraceStore(settings)
    trace_id = new_trace_id()
    planted = "ghp_" + "Q" * 36
    path = store.write_bundle(trace_id, {
        "question": "why?", "answer": f"because {planted}", "thinking": "step one",
        "members": [{"model": "glm", "answer": "a"}, {"model": "kimi", "answer": "b"}],
    })
    if isinstance(path, Path):
        assert path.parent == settings.traces_dir
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    else:
        assert path == f"postgresql:traces/{trace_id}" and not settings.traces_dir.exists()
    raw = (store.bundle_bytes(trace_id) or b"").decode()
    assert planted not in raw and "[REDACTED]" in raw
    lines = [json.loads(line) for line in raw.splitlines()]
    assert lines[0]["type"] == "header" and lines[-1] == {
        "type": "end", "truncated": False, "content_bytes": lines[-1]["content_bytes"],
        "original_bytes": lines[-1]["original_bytes"],
    }
    excerpt = store.bundle_excerpt("local", trace_id, 4000)
    assert excerpt is not None
    assert "## question\nwhy?" in excerpt and "## answer\nbecause [REDACTED]" in excerpt
    assert "## members" in excerpt and "kimi" in excerpt
    assert len(store.bundle_excerpt("local", trace_id, 10) or "") == 10
    assert store.bundle_excerpt("local", new_trace_id(), 100) is None
    store.record(_trace(1, trace_id=trace_id))
    got = store.get("local", trace_id)
    assert got is not None and got.artifacts["bundle"] == str(path)


def test_bundle_cap_truncates_and_records_it() -> None:
    settings = load_settings(trace_max_content_bytes=2000, trace_max_event_bytes=1000)
    store = TraceStore(settings)
    trace_id = new_trace_id()
    assert store.write_bundle(trace_id, {"question": "q", "answer": "A" * 10_000, "thinking": "T" * 500})
    lines = [json.loads(line) for line in (store.bundle_bytes(trace_id) or b"").splitlines()]
    end = lines[-1]
    assert end["type"] == "end" and end["truncated"] is True
    assert end["content_bytes"] <= 2000 and end["original_bytes"] > 10_000
    assert all(len(json.dumps(line)) < 1000 for line in lines)  # long strings were chunked
    excerpt = store.bundle_excerpt("local", trace_id, 100_000)
    assert excerpt is not None and "truncated" in excerpt and "T" * 10 not in excerpt


def test_long_string_round_trips_through_chunks() -> None:
    settings = load_settings(trace_max_event_bytes=2048)
    store = TraceStore(settings)
    trace_id = new_trace_id()
    text = "".join(chr(ord("a") + i % 26) for i in range(5000))
    store.write_bundle(trace_id, {"answer": text})
    assert store.bundle_excerpt("local", trace_id, 100_000) == f"## answer\n{text}\n"


# Writes a bundle file by hand; PostgreSQL keeps bundles in a table.
@pytest.mark.parametrize("store_backend", ["sqlite"], indirect=True)
def test_oversized_lines_are_skipped_when_reading(store_backend: StoreBackend) -> None:
    settings = load_settings(trace_max_event_bytes=1024)
    store = TraceStore(settings)
    trace_id = new_trace_id()
    path = store.bundle_path(trace_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    huge = json.dumps({"type": "item", "field": "answer", "value": "X" * 50_000})
    small = json.dumps({"type": "item", "field": "question", "value": "fine"})
    header = json.dumps({"type": "header", "trace_id": trace_id})
    path.write_text(f"{header}\n{huge}\n{small}\nnot json\n")
    assert store.bundle_excerpt("local", trace_id, 1000) == "## question\nfine\n"


def test_oldest_traces_and_bundles_are_swept_beyond_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from ask_fable.stores import traces as traces_module

    monkeypatch.setattr(traces_module, "SWEEP_EVERY", 1)
    store = TraceStore(load_settings(trace_mode="full", trace_max_rows=10))
    ids = []
    for i in range(15):
        trace = _trace(i)
        store.record(trace)
        store.write_bundle(trace.trace_id, {"question": f"q{i}"})
        ids.append(trace.trace_id)
    kept = {t.trace_id for t in store.list("local", limit=200)}
    assert len(kept) <= 10 and ids[-1] in kept and ids[0] not in kept
    assert store.bundle_bytes(ids[0]) is None and store.bundle_bytes(ids[-1]) is not None
    assert store.get("local", ids[0]) is None


def test_traces_recorded_as_a_group_are_each_stored_and_still_swept_beyond_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A group of traces is stored as its traces one by one would be, and a group that carries the
    count past a sweep point sweeps, however many traces it adds."""
    from ask_fable.stores import traces as traces_module

    monkeypatch.setattr(traces_module, "SWEEP_EVERY", 5)
    store = TraceStore(load_settings(trace_max_rows=10))
    groups = [[_trace(i) for i in range(start, start + 3)] for start in range(0, 15, 3)]
    for group in groups:
        store.record_many(group)
    kept = [t.trace_id for t in store.list("local", limit=200)]
    assert len(kept) <= 10 and groups[-1][-1].trace_id in kept and groups[0][0].trace_id not in kept
    last = store.get("local", groups[-1][1].trace_id)
    assert last is not None and [e.name for e in last.events] == ["start", "end"]
    assert last.providers == ["glm"] and last.elapsed_ms == 113.0


def test_a_zero_cap_keeps_every_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    from ask_fable.stores import traces as traces_module

    monkeypatch.setattr(traces_module, "SWEEP_EVERY", 1)
    store = TraceStore(load_settings(trace_max_rows=0))
    for i in range(12):
        store.record(_trace(i))
    assert len(store.list("local", limit=200)) == 12
