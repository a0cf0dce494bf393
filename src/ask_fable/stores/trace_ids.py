"""Trace ids: issued once per call, sortable by time, safe as file names.

Kept apart from the trace store so that issuing an id (every result carries one) loads no database.
"""

from __future__ import annotations

import re
import secrets as _random
import time

_ID_RE = re.compile(r"[A-Za-z0-9_\-]{1,80}")


def new_trace_id() -> str:
    """A new trace id: 12 hex digits of epoch milliseconds then 12 random hex digits (sortable)."""
    return f"{time.time_ns() // 1_000_000:012x}{_random.token_hex(6)}"


def valid_trace_id(trace_id: object) -> bool:
    """Whether ``trace_id`` has the shape of an id we could have issued (safe as a file name)."""
    return isinstance(trace_id, str) and bool(_ID_RE.fullmatch(trace_id))
