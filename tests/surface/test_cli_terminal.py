"""The installed ``ask-fable`` command at a shell: one-line errors and non-zero exits, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.fake_provider import FakeProvider
from tests.surface.pty_session import run_in_terminal

CTRL_C = b"\x03"
CTRL_D = b"\x04"
SERVING = b"waiting for an MCP client"

Outcome = tuple[str, int]


def run(*argv: str | bytes, stdin: bytes = b"", env: dict[str, str] | None = None) -> Outcome:
    """Run the command with pipes; (stdout + stderr, exit code)."""
    done = subprocess.run([*ask_fable_command(), *argv], input=stdin, capture_output=True,
                          env=env or child_env(), timeout=60, check=False)
    return (done.stdout + done.stderr).decode("utf-8", "replace"), done.returncode


def run_here(*argv: str) -> Outcome:
    """The command's own entry point run in this process, for a mistake that needs no process of its
    own (arguments, files, settings); (stdout + stderr, exit code)."""
    done = run_in_process(argv, child_env())
    return done.stdout + done.stderr, done.returncode


def into_closed_pipe(*argv: str) -> Outcome:
    """Run the command with stdout a pipe whose reader is already gone (``| head`` that has quit)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([*ask_fable_command(), *argv], stdin=subprocess.DEVNULL, stdout=write_end,
                              stderr=subprocess.PIPE, env=child_env(), timeout=60, check=False)
    finally:
        os.close(write_end)
    return done.stderr.decode("utf-8", "replace"), done.returncode


def in_terminal(*argv: str, keys: bytes = b"", after: bytes | None = None,
                env: dict[str, str] | None = None) -> Outcome:
    """Run the command on a pseudo-terminal, typing ``keys`` once ``after`` is on screen."""
    return run_in_terminal([*ask_fable_command(), *argv], env or child_env(), keys=keys, after=after)


@contextmanager
def port_in_use() -> Iterator[int]:
    """A loopback port another program is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def serve_on_a_busy_port() -> Outcome:
    with port_in_use() as port:
        return run("serve", "--http", "--port", str(port))


def ctrl_c_during_a_call(fake: FakeProvider) -> Outcome:
    fake.enqueue("anthropic", text="too late", delay=30)
    env = child_env(ASK_FABLE_GLM_API_KEY="sk-glm-0123456789", ASK_FABLE_QUIET="0", ASK_FABLE_CACHE="0",
                    ASK_FABLE_GLM_BASE_URL=f"{fake.base_url}/api/anthropic")
    return in_terminal("glm", "Why is this lock slow under load?", keys=CTRL_C, after=b"asking glm", env=env)


def test_no_bad_invocation_prints_a_traceback() -> None:
    """Every way of getting the command wrong, or of interrupting it, ends in lines meant for people."""
    # Each needs a process of its own: bytes that are not UTF-8, a pipe, a bound port, a stdio
    # server's start, a terminal.
    with FakeProvider() as fake:
        spawned: dict[str, Callable[[], Outcome]] = {
            "port already in use": serve_on_a_busy_port,
            "manual into a closed pipe": lambda: into_closed_pipe("--quiet", "help"),
            "tool table into a closed pipe": lambda: into_closed_pipe("tools"),
            "argument not UTF-8": lambda: run(b"ask", b"why does \xff\xfe fail here?"),
            "question on stdin not UTF-8": lambda: run("ask", "-", stdin=b"\xff\xfe why?"),
            "context on stdin not UTF-8": lambda: run("glm", "Why does it fail?", "--context-file", "-",
                                                      stdin=b"log \xff"),
            "unknown toolset": lambda: run("--toolsets", "bogus"),
            "Ctrl-C during a call": lambda: ctrl_c_during_a_call(fake),
        }
        with ThreadPoolExecutor(max_workers=4) as pool:
            outcomes = dict(zip(spawned, pool.map(lambda case: case(), spawned.values()), strict=True))
    # The bare command and Ctrl-C on a stdio server are the terminal tests below; a state directory
    # that cannot exist is test_a_failure_of_ours_shows_its_traceback_only_when_asked's.
    outcomes |= {
        "port out of range": run_here("serve", "--http", "--port", "99999"),
        "port not a number": run_here("serve", "--http", "--port", "eighty"),
        "body cap of zero": run_here("serve", "--http", "--max-body-bytes", "0"),
        "context file missing": run_here("ask", "Why does it fail?", "--context-file", "/no/such.txt"),
        "stdin asked for twice": run_here("ask", "-", "--context-file", "-"),
        "client name with a space": run_here("config", "claude", "--name", "bad name"),
        "config path that cannot exist": run_here("init", "cursor", "--config-path", "/proc/nope/x.json"),
        "option that is not a number": run_here("trace", "list", "--limit", "abc"),
        "unknown command": run_here("frobnicate"),
        "missing context key": run_here("context", "read", "no-such-key"),
    }
    for name, (output, code) in outcomes.items():
        assert "Traceback" not in output, f"{name}:\n{output}"
        assert code != 0, f"{name} exited 0:\n{output}"
        # A reader that quit is no error to report: like any shell tool, the command just stops.
        assert output.strip() or "closed pipe" in name, f"{name} said nothing"
    output, code = outcomes["port already in use"]
    assert code == 1 and "ask-fable: error: " in output, output
    output, code = outcomes["config path that cannot exist"]
    assert code == 1 and output.startswith("ask-fable: cannot write /proc/nope/x.json"), output
    assert "cannot listen on 127.0.0.1" in outcomes["port already in use"][0]
    assert outcomes["port out of range"][1] == 2 and "from 1 to 65535" in outcomes["port out of range"][0]
    assert outcomes["argument not UTF-8"][1] == 2 and "not valid UTF-8" in outcomes["argument not UTF-8"][0]
    assert outcomes["question on stdin not UTF-8"][1] == 2
    assert "stdin is not UTF-8 text" in outcomes["context on stdin not UTF-8"][0]
    assert outcomes["manual into a closed pipe"] == ("", 141)
    assert outcomes["Ctrl-C during a call"][1] == 130
    assert "ask-fable: interrupted" in outcomes["Ctrl-C during a call"][0]


def test_a_failure_of_ours_shows_its_traceback_only_when_asked() -> None:
    """One line by default; ASK_FABLE_DEBUG=1 adds the traceback for a bug report."""
    plain, plain_code = run("keys", "list", env=child_env(XDG_STATE_HOME="/proc/no-such-dir"))
    debug, debug_code = run("keys", "list", env=child_env(XDG_STATE_HOME="/proc/no-such-dir",
                                                          ASK_FABLE_DEBUG="1"))
    assert plain_code == debug_code == 1
    line = ("ask-fable: error: cannot open /proc/no-such-dir/ask_fable/keys.db (No such file or "
            "directory); ask-fable keeps its data in /proc/no-such-dir/ask_fable: make it a directory this "
            "user can write, or set XDG_STATE_HOME to one")
    assert plain.strip().splitlines() == [line]
    assert "Traceback (most recent call last)" in debug
    assert debug.strip().splitlines()[-1] == line


def test_a_bare_command_on_a_terminal_says_how_to_start_instead_of_waiting() -> None:
    output, code = in_terminal()
    assert code == 2
    assert "ask-fable init claude" in output and "ask-fable doctor" in output and "ask-fable serve" in output


def test_a_stdio_server_started_on_a_terminal_says_so_and_stops_on_ctrl_d_or_ctrl_c() -> None:
    """Ctrl-D ends its input like a client closing the pipe (exit 0); Ctrl-C interrupts it (exit 130)."""
    ended, ended_code = in_terminal("serve", keys=CTRL_D, after=SERVING)
    interrupted, interrupted_code = in_terminal("serve", keys=CTRL_C, after=SERVING)
    assert "serving MCP over stdio" in ended and "Ctrl-D or Ctrl-C stops" in ended
    assert ended_code == 0
    assert interrupted_code == 130 and "ask-fable: interrupted" in interrupted
    for output in (ended, interrupted):
        assert "Traceback" not in output


@pytest.mark.parametrize("toolsets", [(), ("--toolsets", "all")])
def test_stdio_stays_the_behaviour_when_stdin_is_a_pipe(toolsets: tuple[str, ...]) -> None:
    """An MCP client spawns ``ask-fable`` with pipes: it serves, and no usage text reaches stdout."""
    init = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')
    done = subprocess.run([*ask_fable_command(), *toolsets], input=init, capture_output=True,
                          env=child_env(), timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b'{"jsonrpc":"2.0","id":1,"result":')
    assert b"ask-fable init claude" not in done.stdout + done.stderr
