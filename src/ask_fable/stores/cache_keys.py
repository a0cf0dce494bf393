"""Answer cache keys: what a request is cached under.

Kept apart from the cache store so that computing a key (the pipeline does, for every cacheable
call) loads no database.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def normalize_question(question: str) -> str:
    """Collapse whitespace and fold case, so trivially different re-asks share a key."""
    return " ".join(question.split()).casefold()


def cache_key(
    tool: str,
    models: list[str],
    question: str,
    context: str | None,
    extra: dict[str, Any] | None = None,
) -> str:
    """The cache key of one request (hex sha256), the same whichever store holds the entry."""
    material = json.dumps(
        [tool, list(models), normalize_question(question or ""), context or "", extra or {}],
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()
