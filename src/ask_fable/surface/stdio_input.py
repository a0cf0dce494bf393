"""Make every line a client sends over stdio parseable, so no request is silently dropped.

JavaScript's ``JSON.stringify`` escapes a lone surrogate (half of an emoji cut in two) as
``\\ud83d``. That is valid JSON text but not valid Unicode, and the MCP SDK's strict parser then
rejects the whole line: the request vanishes with no reply and the client waits forever. Before
the server starts, :func:`sanitize_stdin` puts a pipe in front of file descriptor 0 and a thread
copies the client's lines through :func:`repair_line`, which turns each lone surrogate escape into
``\\ufffd`` (the replacement character) and leaves everything else byte-identical.
"""

from __future__ import annotations

import os
import re
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


def sanitize_stdin() -> None:
    """Route file descriptor 0 through a repairing pipe (call once, before serving stdio)."""
    try:
        source = os.dup(0)
    except OSError:  # no stdin at all: nothing to repair
        return
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        with os.fdopen(source, "rb") as client, os.fdopen(write_end, "wb", buffering=0) as server:
            try:
                for line in client:
                    server.write(repair_line(line))
            except (BrokenPipeError, OSError):
                return  # the server stopped reading: nothing left to deliver

    threading.Thread(target=pump, name="ask-fable-stdin", daemon=True).start()
