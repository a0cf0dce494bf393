"""The settings configure tools save to a shared database, on SQLite and on PostgreSQL: what one
store instance (one server) saves another loads, each save raises the revision, concurrent saves
keep each other's settings, and on PostgreSQL a listening server learns of another's save without
being asked."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import ask_fable.backends.registry  # noqa: F401  (registers the providers' settings sections, as the server does)
from ask_fable.config import SAVED_SOURCE, load_settings
from ask_fable.stores.records import SavedSettings
from ask_fable.stores.saved_settings import CHANNEL, SettingsStore, SharedSettings
from tests.conftest import StoreBackend


def _store(backend: StoreBackend, tmp_path: Path) -> SettingsStore:
    return SettingsStore(backend.open("settings", tmp_path / "settings.db"))


def test_what_one_server_saves_another_loads_and_none_removes_a_setting(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    one, other = _store(store_backend, tmp_path), _store(store_backend, tmp_path)
    assert other.load() == SavedSettings(revision=0, values={})
    first = one.save({"openrouter_council": ["a/x", "b/y"], "trace_mode": "full"}, "team")
    second = one.save({"trace_mode": None, "stream_reasoning": True}, "team")
    assert first.revision == 1 and second.revision == 2
    assert other.load() == SavedSettings(revision=2, values={"openrouter_council": ["a/x", "b/y"],
                                                             "stream_reasoning": True})


def test_concurrent_saves_through_two_servers_keep_every_setting_each_at_its_own_revision(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    stores = [_store(store_backend, tmp_path), _store(store_backend, tmp_path)]
    start = threading.Barrier(8)
    revisions: list[int] = []

    def save(number: int) -> None:
        start.wait()
        revisions.append(stores[number % 2].save({f"setting_{number}": number}, "team").revision)

    threads = [threading.Thread(target=save, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(revisions) == list(range(1, 9))
    assert stores[0].load().values == {f"setting_{n}": n for n in range(8)}


def test_a_server_keeps_the_newest_snapshot_when_an_older_load_arrives_after_its_own_save(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    shared = SharedSettings(_store(store_backend, tmp_path))
    stale = shared.store.load()
    saved = shared.save({"trace_mode": "full"}, "team")
    shared.offer(stale)
    assert shared.snapshot == saved


def test_a_call_after_a_notice_runs_with_the_announced_save_before_the_listener_loaded_it(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    shared = SharedSettings(_store(store_backend, tmp_path))
    shared.refresh()
    saved = _store(store_backend, tmp_path).save({"trace_mode": "full"}, "team")
    assert shared.latest().revision == 0  # nothing announced: no round trip, the snapshot seen
    shared.announce(str(saved.revision))
    assert shared.latest() == saved


# PostgreSQL only: with SQLite (one machine) configure tools save to the config file, nothing listens.
@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
def test_a_listening_server_applies_another_servers_save_without_a_call_asking(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    from ask_fable.stores.listener import Listener

    listening = SharedSettings(_store(store_backend, tmp_path))
    applied = threading.Event()

    def refresh() -> None:
        listening.refresh()
        if listening.snapshot.values:
            applied.set()

    listener = Listener(store_backend.url, CHANNEL, refresh, connect_timeout=2)
    listening.watch(listener)
    listener.start()
    try:
        assert listening.snapshot.revision == 0  # loaded once listening
        _store(store_backend, tmp_path).save({"ollama_council": ["m3:cloud"]}, "team")
        assert applied.wait(10)
        assert listening.snapshot.values == {"ollama_council": ["m3:cloud"]}
    finally:
        listener.close()


def test_saved_settings_override_the_config_file_and_the_environment_and_leave_the_rest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"trace_mode": "safe", "ollama_model": "glm-5.2:cloud"}', encoding="utf-8")
    monkeypatch.setenv("ASK_FABLE_CONFIG_FILE", str(config))
    monkeypatch.setenv("ASK_FABLE_STREAM_REASONING", "0")
    settings = load_settings(saved={"trace_mode": "full", "stream_reasoning": True})
    assert (settings.trace_mode, settings.stream_reasoning, settings.value_of("ollama_model")) == (
        "full", True, "glm-5.2:cloud")
    assert settings.origin("trace_mode") == SAVED_SOURCE


def test_entries_say_who_saved_each_value_and_forget_removes_named_or_all_in_one_save(
    store_backend: StoreBackend, tmp_path: Path
) -> None:
    """An admin reviews each saved value with its tenant and time, and forgetting raises the revision
    once (so servers apply it as a save), returning only the names that were saved."""
    when = 1_700_000_000.0
    store = SettingsStore(store_backend.open("settings", tmp_path / "settings.db"), clock=lambda: when)
    store.save({"trace_mode": "full", "ollama_model": "glm-5.2:cloud"}, "ops")
    entries = store.entries()
    assert [(e.name, e.value, e.tenant, e.saved_at) for e in entries] == [
        ("ollama_model", "glm-5.2:cloud", "ops", when), ("trace_mode", "full", "ops", when)]
    assert store.forget(["trace_mode", "not_saved"]) == ["trace_mode"]
    assert store.load() == SavedSettings(revision=2, values={"ollama_model": "glm-5.2:cloud"})
    assert store.forget() == ["ollama_model"]
    assert store.load() == SavedSettings(revision=3, values={})
