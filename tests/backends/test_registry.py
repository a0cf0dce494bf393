"""The backend registry: one descriptor per backend, and everyone giving the same advice from it."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from ask_fable.backends.claude_common import login_hint
from ask_fable.backends.descriptor import Backend, Token
from ask_fable.backends.probes import probe_cli
from ask_fable.backends.registry import backend_names, find_token, get_backend, register, registered
from ask_fable.config import ProviderSettings, load_settings, sections
from ask_fable.core.doctor import BACKENDS, diagnose
from ask_fable.core.tokens import backend_oracle
from ask_fable.errors import BinaryMissing


def _backend(name: str, *tokens: Token, prefix: str | None = None) -> Backend:
    def build(*_: object, **__: object) -> None:
        raise AssertionError("never built")

    return Backend(name=name, label=name, family="test", transport="cli", build=build,  # type: ignore[arg-type]
                   probe=probe_cli, enable="nothing", tokens=tokens, prefix=prefix)


def test_the_built_in_backends_are_registered_in_report_order() -> None:
    assert backend_names() == list(BACKENDS)
    assert find_token("M3") == (get_backend("minimax"), "minimax")
    assert find_token("fable51") == (get_backend("fable"), "fable51")


@pytest.mark.parametrize(
    ("backend", "taken"),
    [(_backend("glm", Token("glm2")), "named 'glm'"),
     (_backend("gpt2", Token("gpt2", aliases=("GPT",))), "'gpt' of 'gpt2' is already 'codex'"),
     (_backend("atlas2", prefix="atlas"), "prefix 'atlas'"),
     (_backend("colon", Token("a:b")), "may not contain ':'"),
     (_backend("nothing"), "needs tokens or a prefix")],
)
def test_a_backend_that_would_shadow_another_is_refused(backend: Backend, taken: str) -> None:
    with pytest.raises(ValueError, match=taken):
        register(backend)
    assert backend_names() == list(BACKENDS)


class _NoDefaults(ProviderSettings):
    """Settings a backend cannot start with: its endpoint has no default."""

    model: str = "m"


class _Clashing(ProviderSettings):
    """Settings whose ``hub_path`` (section ``hub``, field ``path``) is already a top-level setting."""

    base_url: str = "http://127.0.0.1:1"
    model: str = "m"
    path: str = "x"


def _with_settings(name: str, model: type[ProviderSettings]) -> Backend:
    return replace(_backend(name, Token(name)), transport="http", settings_model=model)


@pytest.mark.parametrize(
    ("backend", "why"),
    [(_with_settings("nodefaults", _NoDefaults), "no default for base_url"),
     (_with_settings("hub", _Clashing), "redefines hub_path"),
     (_backend("Bad-Name", Token("badname")), "lower-case identifier")],
)
def test_a_backend_whose_settings_or_name_cannot_work_is_refused(backend: Backend, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        register(backend)
    assert backend_names() == list(BACKENDS)
    assert backend.name not in sections()


async def test_a_missing_cli_gets_the_same_install_step_from_its_oracle_and_from_doctor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    settings = load_settings()
    clis = [backend for backend in registered() if backend.transport == "cli"]
    with anyio.fail_after(15):
        report = await diagnose(settings, only=[backend.name for backend in clis], timeout=1.0)
    for backend, entry in zip(clis, report.backends, strict=True):
        with pytest.raises(BinaryMissing) as missing:
            backend_oracle(backend.name, settings).ensure_available()
        assert entry.enable == backend.enable
        assert missing.value.detail == f"`{backend.binary}` is not on PATH: {backend.enable}"


def test_each_key_backend_names_its_key_variable_in_its_step() -> None:
    for backend in registered():
        if backend.key_vars:
            assert backend.key_vars[0] in backend.enable, backend.name


async def test_claude_without_a_login_gets_the_backends_own_login_advice(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    claude.write_text('#!/bin/sh\necho "2.9.0 (Claude Code)"\n')
    claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
    assert "ANTHROPIC_API_KEY" not in os.environ
    with anyio.fail_after(15):
        report = await diagnose(load_settings(claude_cli=str(claude)), only=["fable", "opus"], timeout=5.0)
    for entry in report.backends:
        assert entry.status == "needs_login" and entry.version == "2.9.0 (Claude Code)"
        assert entry.enable == login_hint()
        assert "no Claude login found" in (entry.detail or "")
