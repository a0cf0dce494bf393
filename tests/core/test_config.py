"""Settings precedence: config file > environment > defaults."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ask_fable.backends.providers.atlas import AtlasSettings
from ask_fable.backends.providers.ollama import OllamaSettings
from ask_fable.backends.registry import get_backend
from ask_fable.config import config_file_path, load_settings, tracking_reads, update_config_file
from tests.type_probe import type_check


def test_defaults_match_the_contract() -> None:
    s = load_settings()
    assert (s.min_len, s.max_len, s.timeout, s.max_needs_context) == (3, 65536, 240, 2)
    assert s.cache_ttl == 3600 and s.cli_max_parallel == 2
    # Every member of the full tier at once: the contract's 6 split larger councils into waves.
    assert s.max_parallel == 16
    stragglers = (s.council_cut_stragglers, s.council_straggler_factor, s.council_straggler_floor)
    assert stragglers == (True, 2.0, 2.0)
    assert s.council_deadline == 240 + 120
    assert s.chain_deadline(4) == 960 and s.chain_deadline(1) == 600
    assert s.section("ollama", OllamaSettings).council[0] == "minimax-m3:cloud"
    assert s.save_answers is False


def test_environment_overrides_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_TIMEOUT", "30")
    monkeypatch.setenv("ASK_FABLE_OLLAMA_COUNCIL", "a:cloud, b:cloud c")
    monkeypatch.setenv("ATLASCLOUD_API_KEY", "atlas-secret-1")
    monkeypatch.setenv("ASK_FABLE_HUB", "off")
    s = load_settings()
    assert s.timeout == 30
    assert s.section("ollama", OllamaSettings).council == ["a:cloud", "b:cloud", "c"]
    assert get_backend("atlas").key(s) == "atlas-secret-1"
    assert s.hub is False
    assert "atlas-secret-1" in s.secret_values()


def test_the_ollama_catalog_url_is_the_ollama_sections_under_its_variable_and_config_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings().section("ollama", OllamaSettings).catalog_url == "https://ollama.com"
    monkeypatch.setenv("ASK_FABLE_OLLAMA_CATALOG_URL", "http://127.0.0.1:9/from-env")
    assert load_settings().section("ollama", OllamaSettings).catalog_url == "http://127.0.0.1:9/from-env"
    update_config_file({"ollama_catalog_url": "http://127.0.0.1:9/from-file"})
    settings = load_settings()
    assert settings.section("ollama", OllamaSettings).catalog_url == "http://127.0.0.1:9/from-file"
    assert "ollama_catalog_url" not in type(settings).model_fields


def test_config_file_overrides_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_OLLAMA_MODEL", "from-env")
    monkeypatch.setenv("ASK_FABLE_TRACE_MODE", "safe")
    update_config_file({"ollama_model": "from-file", "ASK_FABLE_TRACE_MODE": "full"})
    s = load_settings()
    assert get_backend("ollama").model(s) == "from-file"
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


def test_a_broken_config_file_is_not_fatal_and_is_reported() -> None:
    path = config_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    settings = load_settings()
    assert settings.timeout == 240
    [problem] = settings.problems
    assert problem.source == f"config file {path}" and "not valid JSON" in problem.problem
    assert problem.concerns is None  # it matters to every call


@pytest.mark.parametrize(("content", "problem"), [
    (b"[1, 2]", "must hold a JSON object, not a list"),
    (b"\xff\xfe", "is not UTF-8 text (invalid byte at offset 0)"),
])
def test_a_config_file_that_is_not_an_object_or_not_text_is_reported(content: bytes, problem: str) -> None:
    path = config_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    assert [p.problem for p in load_settings().problems] == [problem]


def test_a_bad_environment_value_falls_back_to_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_TIMEOUT", "abc")
    monkeypatch.setenv("ASK_FABLE_MAX_PARALLEL", "5")
    settings = load_settings()
    assert settings.timeout == 240 and settings.max_parallel == 5
    [problem] = settings.problems
    assert (problem.setting, problem.source) == ("timeout", "ASK_FABLE_TIMEOUT")
    assert problem.message() == (
        "timeout from ASK_FABLE_TIMEOUT: 'abc' is not valid: input should be a valid number, unable to "
        "parse string as a number; using the default (240)"
    )


def test_a_bad_config_value_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_TIMEOUT", "30")
    update_config_file({"timeout": "soon", "ollama_council": "[not, json"})
    settings = load_settings()
    assert settings.timeout == 30
    assert settings.section("ollama", OllamaSettings).council[0] == "minimax-m3:cloud"
    by_setting = {p.setting: p for p in settings.problems}
    assert by_setting["timeout"].using == "using the value from ASK_FABLE_TIMEOUT (30)"
    assert by_setting["ollama_council"].source == f"config file {config_file_path()}"
    assert settings.origin("timeout") == "ASK_FABLE_TIMEOUT" and settings.origin("max_len") is None


@pytest.mark.parametrize(("key", "meant", "spelled"), [
    ("deepseek_api_kye", "deepseek_api_key", "deepseek_api_key"),
    ("ASK_FABLE_TIMOUT", "timeout", "ASK_FABLE_TIMEOUT"),
])
def test_an_unknown_key_is_reported_with_a_did_you_mean(key: str, meant: str, spelled: str) -> None:
    update_config_file({key: "sk-live-abcdefghijklmnopqrstuvwx0123"})
    [problem] = load_settings().problems
    assert problem.meant == meant and f"did you mean {spelled!r}" in problem.problem
    assert "sk-live" not in problem.message()


def test_an_unknown_key_far_from_every_setting_is_reported_without_a_guess() -> None:
    update_config_file({"colour_scheme": "dark"})
    [problem] = load_settings().problems
    assert problem.meant is None and "did you mean" not in problem.problem


def test_a_bad_secret_is_described_never_quoted() -> None:
    update_config_file({"glm_api_key": ["sk-live-abcdefghijklmnopqrstuvwx0123"]})
    settings = load_settings()
    [problem] = settings.problems
    assert get_backend("glm").key(settings) is None
    assert "not shown" in problem.problem and "sk-live" not in problem.message()


def test_other_accepted_names_work_in_the_config_file() -> None:
    update_config_file({"effort": "quick", "ATLASCLOUD_API_KEY": "atlas-secret-1"})
    settings = load_settings()
    assert settings.section("atlas", AtlasSettings).effort == "quick"
    assert get_backend("atlas").key(settings) == "atlas-secret-1"
    assert settings.problems == ()


def test_a_bad_override_from_code_still_raises() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        load_settings(timeout="abc")


def test_problems_matter_to_the_calls_that_read_their_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from ask_fable.config import tracking_reads

    monkeypatch.setenv("ASK_FABLE_TIMEOUT", "abc")
    update_config_file({"deepseek_api_kye": "x"})
    settings = load_settings()
    with tracking_reads() as reads:
        assert settings.max_len == 65536
        settings.secret_values()  # redaction is not a dependency on the keys
    assert settings.problems_for(reads) == []
    with tracking_reads() as reads:
        assert settings.council_deadline == 360
        assert get_backend("deepseek").key(settings) is None
    assert {p.concerns for p in settings.problems_for(reads)} == {"timeout", "deepseek_api_key"}


def test_a_config_change_reloads_and_a_bad_value_falls_back_reported(capsys: pytest.CaptureFixture) -> None:
    from ask_fable.core.app import App

    app = App()
    update_config_file({"timeout": 30})
    assert app.settings.timeout == 30 and app.settings.problems == ()
    update_config_file({"timeout": "soon"})
    assert app.settings.timeout == 240
    assert [p.setting for p in app.settings.problems] == ["timeout"]
    assert capsys.readouterr().err.startswith("ask-fable: settings problem: timeout from config file")
    update_config_file({"timeout": 45})
    assert app.settings.timeout == 45 and app.settings.problems == ()
    assert capsys.readouterr().err == ""


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


def test_settings_are_typed_attributes_and_their_reads_are_still_tracked() -> None:
    """No catch-all attribute hook: each setting is a typed field, and reading it is still noted."""
    from ask_fable.config import Settings, tracking_reads

    assert "__getattribute__" not in vars(Settings) and "__getattr__" not in vars(Settings)
    settings = load_settings(timeout=12)
    with tracking_reads() as reads:
        assert settings.timeout == 12
        assert get_backend("glm").model(settings) == "glm-5.2"
    assert {"timeout", "glm_model", "glm_api_key"} <= reads
    with pytest.raises(AttributeError):
        _ = settings.no_such_setting


@pytest.mark.slow
def test_a_misspelled_setting_fails_the_type_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The strict type check the project runs refuses a setting that does not exist."""
    out, status = type_check("from ask_fable.config import load_settings\n\n"
                             "timeout: float = load_settings().timeout\n"
                             "typo: float = load_settings().timeuot\n", tmp_path, monkeypatch)
    assert status == 1
    assert 'probe.py:4: error: "Settings" has no attribute "timeuot"' in out
    assert "probe.py:3" not in out


def test_a_backends_own_setting_that_cannot_be_used_is_a_problem_of_the_calls_that_read_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_GLM_MODEL", "glm-from-env")
    update_config_file({"glm_model": ["not", "a", "string"]})
    settings = load_settings()
    assert get_backend("glm").model(settings) == "glm-from-env"
    [problem] = settings.problems
    assert problem.setting == "glm_model" and problem.using == "using the value from ASK_FABLE_GLM_MODEL " \
        "(glm-from-env)"
    with tracking_reads() as reads:
        assert settings.timeout > 0
    assert settings.problems_for(reads) == []
    with tracking_reads() as reads:
        get_backend("glm").model(settings)
    assert settings.problems_for(reads) == [problem]
