"""The subprocess runner: isolation, bounded output, group kill and the per-binary gate."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import anyio.abc
import pytest

from ask_fable.backends.subprocess_runner import BASE_ENV_ALLOW, ProcessGates, build_env, run_process
from ask_fable.errors import BinaryMissing, OracleTimeout
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, is_alive, sha256, stdin_bytes


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """Fake CLIs first on PATH."""
    handle = install_fake_clis(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{handle.bin_dir}{os.pathsep}{os.environ['PATH']}")
    return handle


def _env() -> dict[str, str]:
    return build_env(BASE_ENV_ALLOW)


async def _run(argv: list[str], **kw: object) -> object:
    options: dict[str, object] = {"stdin": None, "env": _env(), "timeout": 20, "gate": argv[0],
                                  "gate_limit": 0}
    options.update(kw)
    return await run_process(argv, **options)  # type: ignore[arg-type]


async def _wait_dead(pids: list[int]) -> list[int]:
    """PIDs still alive after giving the init process a moment to reap orphans."""
    with anyio.move_on_after(3):
        while any(is_alive(p) for p in pids):
            await anyio.sleep(0.02)
    return [p for p in pids if is_alive(p)]


def test_build_env_copies_only_allowed_names() -> None:
    """Exact names and patterns are copied; ASK_FABLE_* never is; extra is applied on top."""
    base = {"PATH": "/bin", "LC_ALL": "C", "ASK_FABLE_GLM_API_KEY": "k", "OPENROUTER_API_KEY": "o",
            "KIMI_X": "1", "HOME": "/h"}
    env = build_env(["PATH", "LC_*", "KIMI_*", "ASK_FABLE_*"], extra={"KIMI_HOME": "/k"}, base=base)
    assert env == {"PATH": "/bin", "LC_ALL": "C", "KIMI_X": "1", "KIMI_HOME": "/k"}


async def test_stdin_arrives_byte_identical_and_output_is_returned(fakes: FakeCLIs) -> None:
    """Stdin bytes reach the CLI unchanged; the child runs in its own session."""
    payload = ("--help; rm -rf / `x` $(y) | & \x01\x7f \u00e9\u4e2d\U0001f600\n" * 100).encode()
    result = await _run(["codex", "-"], stdin=payload)
    call = fakes.calls("codex")[0]
    assert stdin_bytes(call) == payload and call["stdin_sha256"] == sha256(payload)
    assert result.returncode == 0 and b"Answer from codex" in result.stdout
    assert call["pgid"] == call["pid"] == call["sid"] == result.pid
    assert call["pgid"] != os.getpgid(0)


async def test_no_stdin_means_dev_null(fakes: FakeCLIs) -> None:
    """Without stdin bytes the CLI reads an immediate EOF, not the server's stdin."""
    await _run(["grok"], stdin=None)
    assert fakes.calls("grok")[0]["stdin_len"] == 0


async def test_env_is_exactly_what_the_caller_passes(
    fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted keys in the server's environment never reach the CLI."""
    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", "glm-secret-123456")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-secret-123456")
    monkeypatch.setenv("LC_CTYPE", "C.UTF-8")
    await _run(["mmx"], env=build_env(BASE_ENV_ALLOW, extra={"MMX_PROFILE": "x"}))
    names = set(fakes.calls("mmx")[0]["env_names"])
    assert "ASK_FABLE_GLM_API_KEY" not in names and "OPENROUTER_API_KEY" not in names
    assert {"PATH", "HOME", "LC_CTYPE", "MMX_PROFILE"} <= names
    allowed = set(build_env(BASE_ENV_ALLOW)) | {"MMX_PROFILE"}
    assert names <= allowed


async def test_missing_binary_is_binary_missing(fakes: FakeCLIs) -> None:
    """A name not on PATH raises BinaryMissing naming it, without spawning."""
    fakes.remove("agy")
    with pytest.raises(BinaryMissing, match="agy"):
        await _run(["agy"])


async def test_nonzero_exit_and_stderr_are_reported(fakes: FakeCLIs) -> None:
    """The runner reports the exit status and stderr; interpreting them is the backend's job."""
    fakes.behave("kimi", exit_code=7, stderr="boom\n")
    result = await _run(["kimi"])
    assert result.returncode == 7 and result.stderr == b"boom\n" and result.stdout == b""


async def test_flood_is_bounded_and_flagged(fakes: FakeCLIs) -> None:
    """50 MB of output is read to the end but only the bound is kept."""
    fakes.behave("mmx", flood_bytes=50 * 1024 * 1024, flood_stderr_bytes=3 * 1024 * 1024)
    result = await _run(["mmx"], max_output_bytes=1024 * 1024)
    assert result.returncode == 0
    assert len(result.stdout) == 1024 * 1024 and result.stdout_truncated
    assert len(result.stderr) == 1024 * 1024 and result.stderr_truncated
    assert fakes.events("mmx")[-1]["event"] == "end"


async def test_timeout_kills_the_whole_group(fakes: FakeCLIs) -> None:
    """A hung CLI whose child ignores SIGTERM and holds the pipes leaves no survivor."""
    fakes.behave("agy", hang=True, spawn_child=True, ignore_sigterm=True)
    with anyio.fail_after(15), pytest.raises(OracleTimeout, match="agy"):
        await _run(["agy"], timeout=1.0, kill_grace=0.2)
    call = fakes.calls("agy")[0]
    pids = [call["pid"], *fakes.child_pids("agy")]
    assert len(pids) == 2
    assert await _wait_dead(pids) == []


async def test_cancellation_kills_the_group(fakes: FakeCLIs) -> None:
    """An outer cancel scope ends the CLI and its child too."""
    fakes.behave("codex", hang=True, spawn_child=True)
    with anyio.fail_after(15):
        with anyio.move_on_after(1.0):
            await _run(["codex"], timeout=60, kill_grace=0.2)
    pids = [fakes.calls("codex")[0]["pid"], *fakes.child_pids("codex")]
    assert len(pids) == 2
    assert await _wait_dead(pids) == []


async def test_stray_grandchild_after_exit_does_not_block(fakes: FakeCLIs) -> None:
    """A CLI that exits leaving a child holding stdout returns promptly; the child is ended."""
    fakes.behave("grok", spawn_child=True, answer="done")
    with anyio.fail_after(10):
        result = await _run(["grok"], timeout=30)
    assert result.returncode == 0 and result.stdout == b"done"
    assert await _wait_dead(fakes.child_pids("grok")) == []


async def test_gate_of_one_serializes(fakes: FakeCLIs) -> None:
    """With one slot, no run ever sees a peer running."""
    fakes.behave("kimi", sleep=0.2)
    gates = ProcessGates()
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(lambda: _run(["kimi"], gates=gates, gate="kimi-serial", gate_limit=1))
    calls = fakes.calls("kimi")
    assert len(calls) == 3 and [c["peers"] for c in calls] == [0, 0, 0]


async def test_gate_of_two_runs_in_parallel(fakes: FakeCLIs) -> None:
    """With two slots, two runs that each wait for a peer both succeed."""
    fakes.behave("kimi", wait_for_peers=2)
    results: list[int] = []
    gates = ProcessGates()

    async def one() -> None:
        results.append((await _run(["kimi"], gates=gates, gate="kimi-pair", gate_limit=2)).returncode)

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
    assert results == [0, 0]


async def test_queued_time_counts_against_timeout(fakes: FakeCLIs) -> None:
    """A call parked behind a busy slot times out without ever spawning."""
    fakes.behave("mmx", hang=True)
    outcome: dict[str, str] = {}
    gates = ProcessGates()

    async def parked(tg: anyio.abc.TaskGroup) -> None:
        with anyio.fail_after(10):
            while not fakes.calls("mmx"):
                await anyio.sleep(0.02)
        try:
            await _run(["mmx"], gates=gates, gate="mmx-q", gate_limit=1, timeout=0.5)
        except OracleTimeout as exc:
            outcome["parked"] = exc.detail
        tg.cancel_scope.cancel()

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _run(["mmx"], gates=gates, gate="mmx-q", gate_limit=1, timeout=20,
                                       kill_grace=0.2))
            tg.start_soon(parked, tg)
    assert "slot" in outcome["parked"]
    assert len(fakes.calls("mmx")) == 1


async def test_deadline_during_the_post_exit_drain_is_not_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader that exited 0 is a success even when the deadline falls while its pipes drain."""
    import sys

    from ask_fable.backends import subprocess_runner

    monkeypatch.setattr(subprocess_runner, "_DRAIN_TIMEOUT", 6.0)
    script = tmp_path / "exits-early"
    # The escaped grandchild (its own session, so the group kill misses it) holds stdout past the deadline.
    late = "import os, sys, time; os.setsid(); time.sleep(2.5); sys.stdout.write('late'); sys.stdout.flush()"
    script.write_text(f"#!/bin/sh\nprintf 'early '\n{sys.executable} -c \"{late}\" &\nsleep 0.3\nexit 0\n")
    script.chmod(0o755)
    env = _env() | {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    with anyio.fail_after(15):
        result = await run_process(["exits-early"], stdin=None, env=env, timeout=1.0, gate="x", gate_limit=0)
    assert result.returncode == 0
    assert result.stdout == b"early late"

