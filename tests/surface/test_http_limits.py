"""The pieces under the HTTP server's limits: JSON nesting measured without recursion, repeated
failures printed once per interval with a count, server paths hidden from read keys."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_fable.surface.http_limits import MAX_JSON_DEPTH, nesting_exceeds
from ask_fable.surface.log_limits import RateLimitedLog
from ask_fable.surface.server_paths import hide_server_paths, names_no_root


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _in_arguments(depth: int) -> bytes:
    """A tools/call whose argument nests ``depth`` arrays (inside three objects)."""
    message = {"jsonrpc": "2.0", "params": {"arguments": {"x": json.loads(_nested(depth))}}}
    return json.dumps(message).encode()


@pytest.mark.parametrize(
    ("body", "too_deep"),
    [
        (_nested(MAX_JSON_DEPTH), False),
        (_nested(MAX_JSON_DEPTH + 1), True),
        (b"[" * 3000, True),  # never closed: still measured, still refused
        (b"[]" * 100_000, False),  # wide, not deep
        (json.dumps({"question": "[" * 5000 + "{" * 5000}).encode(), False),  # brackets inside a string
        (json.dumps({"a": "\\\"[[[[" * 100, "b": [[1]]}).encode(), False),  # escaped quotes do not end it
        (b'{"a": "unterminated ' + b"[" * 200, True),  # malformed text is measured all the same
        (_in_arguments(MAX_JSON_DEPTH - 3), False),  # three objects around it: exactly at the limit
        (_in_arguments(MAX_JSON_DEPTH - 2), True),
        (b"", False),
    ],
)
def test_nesting_is_measured_without_a_parser(body: bytes, too_deep: bool) -> None:
    """Depth counts arrays and objects, never brackets inside strings, whatever the text's shape."""
    assert nesting_exceeds(body) is too_deep


def test_a_parser_would_have_recursed_where_the_measure_does_not() -> None:
    """The very body that made the scope check fail with RecursionError is measured fine."""
    body = _nested(100_000)
    with pytest.raises(RecursionError):
        json.loads(body)
    assert nesting_exceeds(body)


class _Scheduled:
    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []

    def __call__(self, delay: float, callback: Callable[[], None]) -> None:
        self.calls.append(callback)

    def fire(self) -> None:
        calls, self.calls = self.calls, []
        for call in calls:
            call()


def test_a_repeated_failure_is_one_line_then_one_count_line() -> None:
    """A thousand identical reports: the first is printed, the rest become one line with their count."""
    lines: list[str] = []
    now = [0.0]
    scheduled = _Scheduled()
    log = RateLimitedLog(lines.append, interval=10, schedule=scheduled, clock=lambda: now[0])
    for _ in range(1000):
        log.report("accept", "cannot accept connections:\n Too many open files")
    log.report("invalid", "Invalid HTTP request received.")
    assert lines == ["cannot accept connections: Too many open files", "Invalid HTTP request received."]
    now[0] = 10.0
    scheduled.fire()
    assert lines[2:] == ["cannot accept connections: Too many open files (999 more times in the last 10s)"]
    log.report("accept", "cannot accept connections: Too many open files")
    assert len(lines) == 4  # a new interval starts with the line itself


def test_server_paths_are_shown_relative_to_their_directories(tmp_path: Path) -> None:
    """Paths under the server's directories lose their prefix; other text, and look-alikes, are kept."""
    home, state = tmp_path / "home", tmp_path / "home" / ".local" / "state" / "ask_fable"
    roots = [(str(state / "answers"), "answers"), (str(state), ""), (str(home), "~")]
    result = {
        "saved": f"{state}/answers/x.md",
        "note": f"state dir {state}; config in {home}/.config/ask_fable/config.json",
        "other": f"{state}2/x and /usr/lib/python3",
        "list": [f"{state}/traces/t.jsonl"],
    }
    shown = hide_server_paths(result, sorted(roots, key=lambda r: len(r[0]), reverse=True))
    assert shown == {
        "saved": "answers/x.md",
        "note": "state dir .; config in ~/.config/ask_fable/config.json",
        "other": "~/.local/state/ask_fable2/x and /usr/lib/python3",
        "list": ["traces/t.jsonl"],
    }


_ROOT_TEXT = st.lists(st.sampled_from(["/srv/ask", "/srv/ask/answers/x.md", "/srv/asking", 'C:\\"q', "plain",
                                       " ", "/", "é"]), max_size=5).map("".join)
_RESULTS = st.recursive(st.one_of(_ROOT_TEXT, st.integers(), st.none()),
                        lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                st.dictionaries(_ROOT_TEXT, inner, max_size=3)),
                        max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(result=_RESULTS)
def test_a_dump_naming_no_root_is_a_result_hiding_leaves_unchanged(result: object) -> None:
    """A served result skips the path rewrite when its JSON dump shows none of the server's roots:
    then the rewrite would have left it as it was (a root JSON escapes never counts as absent)."""
    for roots in ([("/srv/ask/answers", "answers"), ("/srv/ask", "")], [('C:\\"q', "~"), ("/srv/ask", "")]):
        if names_no_root(json.dumps(result, ensure_ascii=False), roots):
            assert hide_server_paths(result, roots) == result
