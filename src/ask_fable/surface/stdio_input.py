"""Make every line a client sends over stdio parseable, so no request is silently dropped.

JavaScript's ``JSON.stringify`` escapes a lone surrogate (half of an emoji cut in two) as
``\\ud83d``. That is valid JSON text but not valid Unicode, and the MCP SDK's strict parser then
rejects the whole line: the request vanishes with no reply and the client waits forever. Before
the server starts, :func:`sanitize_stdin` puts a pipe in front of file descriptor 0 and a thread
(:class:`StdinRelay`) copies the client's lines through :func:`repair_line`, which turns each lone
surrogate escape into ``\\ufffd`` (the replacement character) and leaves everything else
byte-identical. The relay can also be told to stop, which is how a stop signal (SIGTERM, SIGHUP,
Ctrl-C) ends a stdio server.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import threading

# A valid high+low pair, else a lone surrogate, else any other escape (consumed so that an
# escaped backslash followed by "ud83d" is never mistaken for an escape).
_ESCAPE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    rb"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
    rb"|\\."
)
_REPLACEMENT = rb"\ufffd"


def _repair(match: re.Match[bytes]) -> bytes:
    escape = match.group(0)
    return _REPLACEMENT if len(escape) == 6 else escape


def repair_line(line: bytes) -> bytes:
    """``line`` with every escaped lone surrogate replaced by ``\\ufffd``; otherwise unchanged."""
    if b"\\u" not in line or not re.search(rb"\\u[dD][89a-fA-F]", line):
        return line
    return _ESCAPE.sub(_repair, line)


class StdinRelay:
    """The thread copying the client's stdin to the server's, line by line through :func:`repair_line`.

    :meth:`stop` ends the server's input as if the client had closed its end, so the server shuts
    down the way it does for a client that went away; it only writes one byte to a pipe, so a
    signal handler may call it.
    """

    def __init__(self, source: int, sink: int) -> None:
        self._source = source
        self._sink = sink
        self._stop_read, self._stop_write = os.pipe()
        self._thread = threading.Thread(target=self._pump, name="ask-fable-stdin", daemon=True)
        #: The first non-blank line the client sent, and whether any line looked like a JSON message.
        self.first_line: bytes | None = None
        self.saw_json = False

    @property
    def not_mcp(self) -> bytes | None:
        """The first line of input when nothing on stdin looked like an MCP message (``echo hello |
        ask-fable``), else ``None``."""
        return None if self.saw_json else self.first_line

    def _note(self, lines: list[bytes]) -> None:
        for line in lines:
            text = line.strip()
            if not text:
                continue
            if self.first_line is None:
                self.first_line = text
            if text[:1] in (b"{", b"["):
                self.saw_json = True

    def start(self) -> None:
        """Start copying."""
        self._thread.start()

    def stop(self) -> None:
        """End the server's input (idempotent, safe from a signal handler)."""
        with contextlib.suppress(OSError):
            os.write(self._stop_write, b"x")

    def _pump(self) -> None:
        pending = b""
        try:
            while True:
                ready, _, _ = select.select([self._source, self._stop_read], [], [])
                if self._stop_read in ready:
                    return
                chunk = os.read(self._source, _CHUNK)
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                if not self.saw_json:
                    self._note(lines)
                if lines:
                    _write_all(self._sink, b"".join(repair_line(line + b"\n") for line in lines))
            if pending:
                if not self.saw_json:
                    self._note([pending])
                _write_all(self._sink, repair_line(pending))
        except OSError:
            return  # the client's end broke or the server stopped reading: nothing left to deliver
        finally:
            # The server reads EOF once the last copy of the write end is closed.
            for fd in (self._sink, self._source):
                with contextlib.suppress(OSError):
                    os.close(fd)


_CHUNK = 1 << 16


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def sanitize_stdin() -> StdinRelay | None:
    """Route file descriptor 0 through a repairing pipe (call once, before serving stdio).

    Returns the running relay, or None when the process has no stdin at all.
    """
    try:
        source = os.dup(0)
    except OSError:  # no stdin at all: nothing to repair
        return None
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)
    relay = StdinRelay(source, write_end)
    relay.start()
    return relay
