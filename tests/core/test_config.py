"""Settings precedence: config file > environment > defaults."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ask_fable.config import config_file_path, load_settings, update_config_file


def test_defaults_match_the_contract() -> None:
    s = load_settings()
    assert (s.min_len, s.max_len, s.timeout, s.max_needs_context) == (3, 65536, 240, 2)
    assert s.cache_ttl == 3600 and s.max_parallel == 6 and s.cli_max_parallel == 2
    assert s.council_deadline == 240 + 120
    assert s.chain_deadline(4) == 960 and s.chain_deadline(1) == 600
    assert s.ollama_council[0] == "minimax-m3:cloud"
    assert s.save_answers is False


def test_environment_overrides_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_TIMEOUT", "30")
    monkeypatch.setenv("ASK_FABLE_OLLAMA_COUNCIL", "a:cloud, b:cloud c")
    monkeypatch.setenv("ATLASCLOUD_API_KEY", "atlas-secret-1")
    monkeypatch.setenv("ASK_FABLE_HUB", "off")
    s = load_settings()
    assert s.timeout == 30
    assert s.ollama_council == ["a:cloud", "b:cloud", "c"]
    assert s.atlas_api_key == "atlas-secret-1"
    assert s.hub is False
    assert "atlas-secret-1" in s.secret_values()


def test_config_file_overrides_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_OLLAMA_MODEL", "from-env")
    monkeypatch.setenv("ASK_FABLE_TRACE_MODE", "safe")
    update_config_file({"ollama_model": "from-file", "ASK_FABLE_TRACE_MODE": "full"})
    s = load_settings()
    assert s.ollama_model == "from-file"
    assert s.trace_mode == "full"
    assert s.save_answers is True


def test_config_file_is_private_and_updates_merge() -> None:
    path = update_config_file({"ollama_council": ["x:cloud"]})
    update_config_file({"atlas_council": ["a/b"]})
    update_config_file({"ollama_council": None})
    assert json.loads(path.read_text()) == {"atlas_council": ["a/b"]}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert path == config_file_path()


def test_broken_config_file_is_ignored_not_fatal() -> None:
    path = config_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert load_settings().timeout == 240


def test_explicit_config_file_location(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"timeout": 12}))
    monkeypatch.setenv("ASK_FABLE_CONFIG_FILE", str(target))
    assert load_settings().timeout == 12


def test_an_unreadable_config_file_is_never_overwritten() -> None:
    from ask_fable.errors import BadArgs

    path = config_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"ollama_council": ["a:cloud"], // a comment\n}')
    with pytest.raises(BadArgs) as info:
        update_config_file({"atlas_council": ["b"]})
    assert str(path) in info.value.detail
    assert "// a comment" in path.read_text()


def test_concurrent_updates_keep_every_key() -> None:
    import threading

    threads = [threading.Thread(target=update_config_file, args=({f"key_{i}": i},)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert json.loads(config_file_path().read_text()) == {f"key_{i}": i for i in range(12)}
