"""CLIs that hang and fork, ignore SIGTERM or flood output, through ask_m3: killed, reaped, memory bounded."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.backends.subprocess_runner import DEFAULT_MAX_OUTPUT_BYTES
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, is_alive
from tests.reliability.support import call, make_server

QUESTION = "Why does the worker pool deadlock on shutdown?"
FLOOD = 100 * 1024 * 1024
#: Largest growth of the server process's resident set a 100 MB flood may cause: a few copies of the
#: captured output (bytes, text, result JSON), independent of how much the CLI writes.
RSS_BOUND = 8 * DEFAULT_MAX_OUTPUT_BYTES


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """Fake CLIs first on PATH."""
    handle = install_fake_clis(tmp_path / "bin", names=["mmx"])
    monkeypatch.setenv("PATH", f"{handle.bin_dir}{os.pathsep}{os.environ['PATH']}")
    return handle


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class PeakRss:
    """Samples this process's resident set every 5 ms in a thread; ``growth`` is peak minus start."""

    def __init__(self) -> None:
        self.start = _rss_bytes()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss_bytes())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())

    @property
    def growth(self) -> int:
        """Bytes the peak resident set rose above the starting one."""
        return self.peak - self.start


def _pids(fakes: FakeCLIs) -> list[int]:
    return [c["pid"] for c in fakes.calls("mmx")] + fakes.child_pids("mmx")


async def _gone(pids: list[int]) -> list[int]:
    """The pids still alive after a short grace (polled, bounded)."""
    with anyio.move_on_after(3):
        while any(is_alive(p) for p in pids):
            await anyio.sleep(0.02)
    return [p for p in pids if is_alive(p)]


async def _ask(**settings: Any) -> dict[str, Any]:
    async with Client(make_server(toolsets=["single", "default"], cache=False, **settings)) as client:
        result = await call(client, "ask_m3", {"question": QUESTION})
        assert (await call(client, "ask_fable_help", {}))["status"] == "ok"
    return result


@pytest.mark.parametrize(
    "behaviour",
    [
        {"hang": True, "spawn_child": True},
        {"hang": True, "spawn_child": True, "ignore_sigterm": True},
        {"sleep": 30, "ignore_sigterm": True},
    ],
    ids=["hang+fork", "hang+fork+ignore-sigterm", "sleep+ignore-sigterm"],
)
async def test_hung_cli_is_killed_at_the_deadline_with_no_survivors(fakes: FakeCLIs, behaviour: dict) -> None:
    """kind=timeout, and the CLI and every child it forked are gone."""
    fakes.behave("mmx", **behaviour)
    with anyio.fail_after(30):
        result = await _ask(timeout=1)
    pids = _pids(fakes)
    survivors = await _gone(pids)
    print(f"{behaviour}: kind={result.get('kind')} pids={len(pids)} survivors={len(survivors)}")
    assert result["kind"] == "timeout", result
    assert len(pids) == (2 if behaviour.get("spawn_child") else 1)
    assert survivors == []


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_100_mb_flood_keeps_memory_bounded(fakes: FakeCLIs, stream: str) -> None:
    """A CLI writing 100 MB is read under the byte bound: the server's RSS grows far less than 100 MB."""
    key = "flood_bytes" if stream == "stdout" else "flood_stderr_bytes"
    fakes.behave("mmx", **{key: FLOOD})
    with anyio.fail_after(60), PeakRss() as rss:
        result = await _ask(timeout=30)
    survivors = await _gone(_pids(fakes))
    print(
        f"{stream} flood of {FLOOD >> 20} MB: status={result['status']} kind={result.get('kind')} "
        f"answer={len(result.get('answer') or '')} chars, peak RSS growth {rss.growth / 2**20:.1f} MB"
    )
    assert rss.growth < RSS_BOUND
    if stream == "stdout":  # a flood is no answer: it is refused, never passed on to the caller
        assert result["status"] == "error" and "MiB of output" in result["detail"], result
    assert len(result.get("answer") or "") <= DEFAULT_MAX_OUTPUT_BYTES
    assert survivors == []


async def test_flood_then_hang_ignoring_sigterm_is_killed_and_bounded(fakes: FakeCLIs) -> None:
    """Flood stderr, then hang with a forked child, ignoring SIGTERM: timeout, 0 survivors, bounded RSS."""
    fakes.behave("mmx", flood_stderr_bytes=FLOOD, spawn_child=True, ignore_sigterm=True, hang=True)
    with anyio.fail_after(60), PeakRss() as rss:
        result = await _ask(timeout=2.5)
    pids = _pids(fakes)
    survivors = await _gone(pids)
    print(
        f"flood+hang: kind={result.get('kind')} pids={len(pids)} survivors={len(survivors)} "
        f"peak RSS growth {rss.growth / 2**20:.1f} MB"
    )
    assert result["kind"] == "timeout"
    assert survivors == [] and len(pids) == 2
    assert rss.growth < RSS_BOUND
