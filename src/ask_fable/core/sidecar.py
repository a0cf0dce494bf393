"""Parse the machine-readable sidecar a model appends to its answer, and spot scope refusals.

The system prompt asks every model to end with a fenced block tagged ``sidecar``::

    ```sidecar
    {"recommendation": "apply", "confidence": "high", "needs_context": []}
    ```

A bare trailing JSON object with those keys is accepted too. The block is removed from the
answer the caller sees; when nothing parses, the sidecar is ``None``.
"""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from ask_fable.values import Sidecar

# The closing block may be tagged ``json`` instead (a common slip); mid-answer only ``sidecar`` counts.
_FENCED = re.compile(
    r"```[ \t]*(?:sidecar|json)[ \t]*\n(?P<body>(?:(?!```).)*?)\n?```[ \t]*\s*$", re.DOTALL | re.IGNORECASE
)
_ANY_FENCED = re.compile(r"```[ \t]*sidecar[ \t]*\n(?P<body>(?:(?!```).)*?)\n?```", re.DOTALL | re.IGNORECASE)
_REFUSED = re.compile(r"^\s*(?:\*\*)?REFUSED(?:\*\*)?\s*:\s*(?P<reason>.+)", re.IGNORECASE)


def _parse_object(text: str) -> Sidecar | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or "recommendation" not in data:
        return None
    try:
        return Sidecar.model_validate(data)
    except ValidationError:
        return None


def _trailing_json(text: str) -> tuple[int, Sidecar] | None:
    """Find a bare JSON object closing the text that carries a recommendation."""
    stripped = text.rstrip()
    if not stripped.endswith("}"):
        return None
    # A sidecar is small: only look at the tail, trying each opening brace from the right.
    floor = max(0, len(stripped) - 4000)
    index = stripped.rfind("{", floor)
    while index >= floor:
        sidecar = _parse_object(stripped[index:])
        if sidecar is not None:
            return index, sidecar
        index = stripped.rfind("{", floor, index)
    return None


def parse_sidecar(text: str) -> tuple[str, Sidecar | None]:
    """Split ``text`` into the answer without its sidecar and the parsed sidecar (or None)."""
    match = _FENCED.search(text)
    if match is None:
        # A sidecar fence followed by a short sign-off still counts; take the last one.
        fences = list(_ANY_FENCED.finditer(text))
        match = fences[-1] if fences else None
    if match is not None:
        sidecar = _parse_object(match.group("body").strip())
        if sidecar is not None:
            answer = (text[: match.start()] + text[match.end() :]).strip()
            return answer, sidecar
    trailing = _trailing_json(text)
    if trailing is not None:
        index, sidecar = trailing
        return text[:index].rstrip(), sidecar
    return text.strip(), None


def refusal_reason(text: str) -> str | None:
    """The reason when the model declined under the scope contract (``REFUSED: <reason>``)."""
    match = _REFUSED.match(text)
    if match is None:
        return None
    return match.group("reason").strip().splitlines()[0].strip() or "declined by the model"
