"""Councils that do not wait for stragglers, through the MCP client with default settings: every
member at once, the straggler cut once a quorum answered, retries inside the deadline, and the cut
reaching the wire (no open request at the provider, no live CLI process afterwards)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.test_mode_tools import answer, call, http_settings
from tests.fakes.fake_cli import install_fake_clis, is_alive
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli, child_pids, claude_cli_env, claude_with_a_child

#: A ceiling far below the members' 240 s share of the default council bound: a call under it did
#: not wait for the bound (never a timing assertion, only a ceiling).
CEILING = 60.0
NO_CLAUDE = "/nonexistent/claude"

Progress = list[tuple[float, float | None, str | None]]


def _source(result: dict[str, Any], model: str) -> dict[str, Any]:
    return next(s for s in result["sources"] if s["model"] == model)


def _messages(progress: Progress) -> list[str]:
    return [message or "" for _, _, message in progress]


@contextmanager
def _released_when(started: Callable[[], bool]) -> Iterator[threading.Event]:
    """An event set once ``started()`` holds (polled in a thread), or after :data:`CEILING`."""
    released, stop = threading.Event(), threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + CEILING
        while not stop.is_set() and not started() and time.monotonic() < deadline:
            stop.wait(0.02)
        released.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield released
    finally:
        stop.set()
        watcher.join()


async def _two_healthy_and(fp: FakeProvider, third: str, progress: Progress | None = None,
                           bravo_hold: threading.Event | None = None, **settings: Any) -> dict[str, Any]:
    """A council of two Ollama members that answer at once (bravo once ``bravo_hold`` is set) and
    ``third``, synthesized by GLM, under the default settings plus ``settings``; the call must end
    under :data:`CEILING`."""
    fp.enqueue("ollama", text=answer("Alpha: keep the lock.", "apply"), match="alpha:cloud")
    fp.enqueue("ollama", text=answer("Bravo: keep the lock.", "apply"), match="bravo:cloud", hold=bravo_hold)
    fp.enqueue("anthropic", text=answer("Synthesis: keep the lock.", "apply"), match="glm-5.2")
    with anyio.fail_after(CEILING):
        return await call("ask_council", {"question": "Should the cache keep its global lock?",
                                           "models": ["ollama:alpha", "ollama:bravo", third],
                                           "synthesizer": "glm"},
                          http_settings(fp, **{"claude_cli": NO_CLAUDE, **settings}), progress)


async def _still_alive(pids: list[int]) -> list[int]:
    """The ``pids`` still alive after the kernel had a moment to finish the signalled ones."""
    with anyio.move_on_after(2):
        while any(is_alive(pid) for pid in pids):
            await anyio.sleep(0.02)
    return [pid for pid in pids if is_alive(pid)]


COUNCILS = [
    ("ask_council", {"models": ["ollama:alpha", "ollama:bravo", "ollama:hang"], "synthesizer": "glm"},
     "ollama", ["alpha:cloud", "bravo:cloud", "hang:cloud"], "anthropic", "glm-5.2", "glm"),
    ("ask_atlas_council", {"models": ["a/alpha", "b/bravo", "c/hang"]},
     "openai", ["a/alpha", "b/bravo", "c/hang"], "openai", "openai/gpt-5.6-sol", "atlas:openai/gpt-5.6-sol"),
]


@pytest.mark.parametrize(("tool", "arguments", "route", "models", "judge_route", "judge_model", "judge"),
                         COUNCILS, ids=["ask_council", "ask_atlas_council"])
async def test_a_hung_member_is_cut_as_a_straggler_once_a_quorum_answered(
    fp: FakeProvider, tool: str, arguments: dict[str, Any], route: Any, models: list[str],
    judge_route: Any, judge_model: str, judge: str,
) -> None:
    """Under the default settings, two answers of three make a quorum: the hung member gets the
    straggler wait, is cancelled as kind straggler (its request closed at the provider), a progress
    notification names it, and the two answers are synthesized."""
    alpha, bravo, hung = models
    fp.enqueue(route, text=answer("Alpha: keep the lock.", "apply"), match=alpha)
    fp.enqueue(route, text=answer("Bravo: keep the lock.", "apply"), match=bravo)
    fp.enqueue(route, hang=True, match=hung)
    fp.enqueue(judge_route, text=answer("Synthesis: keep the lock.", "apply"), match=judge_model)
    progress: Progress = []
    with anyio.fail_after(CEILING):
        result = await call(tool, {"question": "Should the cache keep its global lock?", **arguments},
                            http_settings(fp, claude_cli=NO_CLAUDE), progress)
    assert result["status"] == "ok", result
    assert result["quorum"] == "2/3" and result["degraded"] is True
    late = _source(result, hung)
    assert (late["status"], late["kind"]) == ("straggler", "straggler")
    assert "after 2/3 members had answered" in late["detail"] and "cancelled" in late["detail"]
    assert result["answer"] == "Synthesis: keep the lock." and result["synthesizer"] == judge
    hung_token = late["token"]
    assert any(m.startswith("quorum 2/3: waiting up to") and hung_token in m for m in _messages(progress))
    assert any(m.startswith(f"cut as stragglers: {hung_token}") for m in _messages(progress))
    assert fp.wait_until_idle(timeout=5) == []
    [hung_request] = [r for r in fp.requests_for(route) if r.model == hung]
    assert hung_request.client_closed is True


async def test_a_failing_and_a_hung_member_cost_three_requests_and_a_straggler_wait(fp: FakeProvider) -> None:
    """One member answers, one answers HTTP 500 every time, one hangs, all with default settings:
    the 500 is an error after three requests, its failure leaves one answer as the quorum, the hung
    member is cut as a straggler and the one answer comes back without a synthesis."""
    fp.enqueue("ollama", text=answer("Alpha: keep the lock.", "apply"), match="alpha:cloud")
    fp.enqueue("ollama", status=500, error="overloaded", match="broken:cloud", times=None)
    fp.enqueue("ollama", hang=True, match="hang:cloud")
    with anyio.fail_after(CEILING):
        result = await call("ask_council", {"question": "Should the cache keep its global lock?",
                                            "models": ["ollama:alpha", "ollama:broken", "ollama:hang"]},
                            http_settings(fp, claude_cli=NO_CLAUDE))
    assert result["status"] == "ok", result
    assert result["quorum"] == "1/3" and result["answer"] == "Alpha: keep the lock."
    broken = _source(result, "broken:cloud")
    assert (broken["status"], broken["kind"]) == ("error", "upstream_error")
    assert "HTTP 500" in broken["detail"]
    assert len([r for r in fp.requests_for("ollama") if r.model == "broken:cloud"]) <= 3
    hung = _source(result, "hang:cloud")
    assert (hung["status"], hung["kind"]) == ("straggler", "straggler")
    assert fp.wait_until_idle(timeout=5) == []


@pytest.mark.parametrize("moment", ["before_the_quorum", "after_the_quorum"])
async def test_a_retry_never_waits_past_the_straggler_cut(fp: FakeProvider, moment: str) -> None:
    """A member told to retry in 30 s gives up as an error, with its one request, as soon as a
    quorum has answered: a wait already under way is re-judged when the cut is set, and a wait
    that would end past the cut is never started."""
    members_delay, throttled_delay = (0.5, 0.0) if moment == "before_the_quorum" else (0.0, 0.5)
    for name in ("alpha", "bravo"):
        fp.enqueue("ollama", text=answer(f"{name}: keep the lock.", "apply"), match=f"{name}:cloud",
                   delay=members_delay)
    fp.enqueue("ollama", status=429, retry_after=30, match="throttled:cloud", times=None,
               delay=throttled_delay)
    fp.enqueue("anthropic", text=answer("Synthesis: keep the lock.", "apply"), match="glm-5.2")
    with anyio.fail_after(20):
        result = await call("ask_council", {"question": "Should the cache keep its global lock?",
                                            "models": ["ollama:alpha", "ollama:bravo", "ollama:throttled"],
                                            "synthesizer": "glm"},
                            # a wait far longer than the 0.5 s the test needs, far shorter than 30 s
                            http_settings(fp, claude_cli=NO_CLAUDE, council_straggler_floor=10))
    assert result["status"] == "ok" and result["quorum"] == "2/3", result
    throttled = _source(result, "throttled:cloud")
    assert (throttled["status"], throttled["kind"]) == ("error", "upstream_error")
    assert "HTTP 429" in throttled["detail"]
    assert "would pass the council's straggler cut" in throttled["detail"]
    assert len([r for r in fp.requests_for("ollama") if r.model == "throttled:cloud"]) == 1


async def test_turning_the_cut_off_waits_for_the_council_bound(fp: FakeProvider) -> None:
    """ASK_FABLE_COUNCIL_CUT_STRAGGLERS=0 keeps the contract's behaviour: a hung member runs until
    two thirds of the council bound and is reported as a timeout."""
    fp.enqueue("ollama", hang=True, match="hang:cloud")
    progress: Progress = []
    result = await _two_healthy_and(fp, "ollama:hang", progress, council_cut_stragglers=False,
                                    council_timeout=6)
    assert result["status"] == "ok" and result["quorum"] == "2/3", result
    hung = _source(result, "hang:cloud")
    assert (hung["status"], hung["kind"]) == ("timeout", "timeout")
    assert "share of the council's 6s" in hung["detail"]
    assert not any("straggler" in m or m.startswith("quorum") for m in _messages(progress))
    assert result["synthesizer"] == "glm"


async def test_a_cut_cli_member_leaves_no_process_behind(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hung CLI member (with a child of its own) cut as a straggler has its whole process group
    ended by the time the council answers."""
    clis = install_fake_clis(tmp_path / "bin", names=("mmx",))
    monkeypatch.setenv("PATH", f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}")
    clis.behave("mmx", hang=True, spawn_child=True)
    with _released_when(lambda: bool(clis.child_pids("mmx"))) as hold:  # both processes are up first
        result = await _two_healthy_and(fp, "m3", bravo_hold=hold)
    assert result["status"] == "ok" and result["quorum"] == "2/3", result
    m3 = next(s for s in result["sources"] if s["token"] == "minimax")
    assert (m3["status"], m3["kind"]) == ("straggler", "straggler")
    pids = [clis.calls("mmx")[0]["pid"], *clis.child_pids("mmx")]
    assert len(pids) == 2
    assert await _still_alive(pids) == []


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")
async def test_a_cut_claude_member_closes_its_request_and_ends_its_cli(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fable (the Claude Code CLI through the Agent SDK) hanging on its request is cut as a
    straggler: the CLI's request is closed at the provider and the CLI's process group is ended."""
    for name, value in claude_cli_env(fp.base_url, tmp_path / "claude").items():
        monkeypatch.setenv(name, value)
    cli, pid_file = claude_with_a_child(tmp_path / "claude-bin")
    fp.enqueue("anthropic", hang=True, match="claude-fable-5-1")
    # The quorum waits for the CLI's request to reach the provider: on a loaded machine the CLI can
    # take longer to start than the straggler wait, and a cut before the request proves nothing.
    fable_asked = lambda: any(r.model == "claude-fable-5-1" for r in fp.requests_for("anthropic"))  # noqa: E731
    with _released_when(fable_asked) as hold:
        result = await _two_healthy_and(fp, "fable", bravo_hold=hold, claude_cli=str(cli))
    assert result["status"] == "ok" and result["quorum"] == "2/3", result
    fable = next(s for s in result["sources"] if s["token"] == "fable")
    assert (fable["status"], fable["kind"]) == ("straggler", "straggler")
    assert fp.wait_until_idle(timeout=5) == []
    assert [r.client_closed for r in fp.requests_for("anthropic") if r.model == "claude-fable-5-1"] == [True]
    children = child_pids(pid_file)
    assert children and await _still_alive(children) == []


async def test_every_member_of_a_large_council_runs_at_once_by_default(fp: FakeProvider) -> None:
    """Eight members under the default settings are all in flight together (no waves)."""
    members = [f"ollama:m{i}" for i in range(8)]
    fp.enqueue("ollama", text=answer("Keep the lock.", "apply"), delay=1.0, times=None)
    fp.enqueue("anthropic", text=answer("Synthesis: keep the lock.", "apply"), match="glm-5.2")
    with anyio.fail_after(CEILING):
        result = await call("ask_council", {"question": "Should the cache keep its global lock?",
                                            "models": members, "synthesizer": "glm"},
                            http_settings(fp, claude_cli=NO_CLAUDE))
    assert result["status"] == "ok" and result["quorum"] == "8/8", result
    asked = fp.requests_for("ollama")
    assert len(asked) == 8
    latest_start = max(r.received_at for r in asked)
    earliest_end = min(r.finished_at or 0.0 for r in asked)
    assert latest_start < earliest_end, "every member was asked before the first one was answered"


async def test_a_chain_is_not_cut(fp: FakeProvider) -> None:
    """A chain is sequential: a stage far slower than the one before it is still waited for."""
    fp.enqueue("anthropic", text=answer("Draft.", "investigate"), match="glm-5.2")
    fp.enqueue("ollama", text=answer("Critique.", "apply"), delay=3.0)
    fp.enqueue("anthropic", text=answer("Decision.", "apply"), match="deepseek-v4-pro")
    with anyio.fail_after(CEILING):
        result = await call("ask_chain", {"question": "How should we paginate?",
                                          "pipeline": "glm > ollama:slow > deepseek"}, http_settings(fp))
    assert result["status"] == "ok", result
    assert [s["status"] for s in result["stages"]] == ["ok", "ok", "ok"]
    assert result["answered"] == 3
