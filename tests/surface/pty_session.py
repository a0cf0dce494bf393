"""Run the ``ask-fable`` command on a pseudo-terminal, the way a person at a shell does."""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from collections.abc import Sequence


def run_in_terminal(argv: Sequence[str], env: dict[str, str], *, keys: bytes = b"",
                    after: bytes | None = None, limit: float = 60.0) -> tuple[str, int]:
    """Run ``argv`` with a terminal as stdin, stdout and stderr; returns (everything shown, exit code).

    ``keys`` are typed once ``after`` has appeared on the screen (at once when ``after`` is None);
    ``\\x03`` is Ctrl-C and ``\\x04`` Ctrl-D. A command still running after ``limit`` seconds is
    killed, which shows up as exit code -9.
    """
    pid, fd = pty.fork()
    if pid == 0:  # the child: its own session, with this terminal as its controlling one
        try:
            os.execve(argv[0], list(argv), env)
        finally:
            os._exit(127)
    shown = b""
    typed = False
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            if not typed and (after is None or after in shown):
                if keys:
                    os.write(fd, keys)
                typed = True
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal (Linux reports EIO)
                break
            if not chunk:
                break
            shown += chunk
        return shown.decode("utf-8", "replace"), _exit_code(pid, deadline)
    finally:
        os.close(fd)


def _exit_code(pid: int, deadline: float) -> int:
    """The child's exit code, killing it if it is still running at ``deadline``."""
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
