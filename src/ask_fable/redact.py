"""Secret redaction, in one place, for everything ask-fable writes or reports.

Two layers: the exact values of configured keys (``settings.secret_values()``), then known key
shapes (Anthropic, OpenAI, OpenRouter, Google, GitHub, AWS, JWTs, PEM private keys, HTTP auth
header values, our own ``afk_`` API keys, passwords in URLs). Each shape is tried only when a cheap literal
trigger occurs in the text, so large text without secrets costs a few substring scans.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar, cast, runtime_checkable

MARKER = "[REDACTED]"


@runtime_checkable
class HasSecrets(Protocol):
    """Anything that can list its configured secret values (``Settings`` does)."""

    def secret_values(self) -> list[str]:
        """The exact secret strings to remove."""
        ...


SecretSource = Iterable[str] | HasSecrets | None
_Shape = TypeVar("_Shape")

_B = r"(?<![A-Za-z0-9_\-])"  # token start: not glued to a preceding identifier character

# (triggers, pattern, keep-group): a pattern runs only if one trigger is in the text (case
# folded triggers are checked against a lowered copy, made once and only when needed).
_RULES: list[tuple[tuple[str, ...], bool, re.Pattern[str], int]] = [
    # Anthropic sk-ant-…, OpenAI sk-… / sk-proj-…, OpenRouter sk-or-v1-…
    # "sk-" may follow a hyphen ("rotate-sk-ant-…"): the prefix is distinctive enough on its own.
    (("sk-",), False, re.compile(r"(?<![A-Za-z0-9_])sk-[A-Za-z0-9][A-Za-z0-9_\-]{15,}"), 0),
    (("AIza",), False, re.compile(_B + r"AIza[0-9A-Za-z_\-]{30,}"), 0),
    (("ghp_", "gho_", "ghs_", "ghu_", "ghr_"), False, re.compile(_B + r"gh[pousr]_[A-Za-z0-9]{20,}"), 0),
    (("github_pat_",), False, re.compile(_B + r"github_pat_[A-Za-z0-9_]{20,}"), 0),
    (("AKIA", "ASIA"), False, re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"), 0),
    (
        ("aws_secret_access_key",),
        True,
        re.compile(r"(?i)(aws_secret_access_key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{16,}"),
        1,
    ),
    (("eyJ",), False, re.compile(_B + r"eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"), 0),
    (
        ("PRIVATE KEY-----",),
        False,
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        0,
    ),
    (
        ("authorization",),
        True,
        re.compile(
            r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token)\s+)?)[^\s\"',;}\]]+"
        ),
        1,
    ),
    # A bearer token outside a header needs a digit, so "bearer authentication" stays prose.
    (
        ("bearer",),
        True,
        re.compile(r"(?i)(\bbearer\s+)(?=[A-Za-z0-9._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{8,}=*"),
        1,
    ),
    (("x-api-key",), True, re.compile(r"(?i)(x-api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}\]]+"), 1),
    (("afk_",), False, re.compile(_B + r"afk_[A-Za-z0-9_\-]{32,}"), 0),
    # The password of a URL's user part (postgresql://user:PASSWORD@host/db).
    (("password=",), True, re.compile(r"(?i)(password=)[^\s&]+"), 1),
    (("://",), False, re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)[^\s@/]+(?=@)"), 1),
]


_UNANCHORED = frozenset({"PRIVATE KEY-----", "://"})

# Every rule's triggers, checked before any rule runs, so text without any (nearly all of it) costs
# a few substring scans. Only ASCII text takes this shortcut: there, matching a folded trigger in
# any case is finding it in the lowered text, while for other text ``str.lower`` and a regex's case
# folding could disagree.
_PLAIN_TRIGGERS = tuple(t for triggers, folded, _p, _k in _RULES if not folded for t in triggers)
_FOLDED_TRIGGERS = tuple(t.lower() for triggers, folded, _p, _k in _RULES if folded for t in triggers)


def _has_trigger(ascii_text: str) -> bool:
    """Whether ASCII text holds any rule's trigger (folded ones in any case)."""
    # Plain loops: this runs on every result, audit line and trace event, and ``any`` over a
    # generator costs more than the searches themselves on short text.
    for trigger in _PLAIN_TRIGGERS:
        if trigger in ascii_text:
            return True
    lowered = ascii_text.lower()
    for trigger in _FOLDED_TRIGGERS:  # noqa: SIM110 - see above
        if trigger in lowered:
            return True
    return False


def secret_list(secrets: SecretSource) -> list[str]:
    """The exact secret values named by ``secrets`` (an iterable or a Settings), longest first."""
    return list(_exact(secrets).values)


#: Characters JSON escapes inside a string: a secret holding one would not show verbatim in a dump.
_ESCAPED = re.compile(r'["\\\x00-\x1f]')


class _Exact:
    """Secret values ready to search for: longest first, and whether JSON would escape any."""

    __slots__ = ("escaped", "values")

    def __init__(self, values: tuple[str, ...]) -> None:
        self.values = values
        self.escaped = any(_ESCAPED.search(value) for value in values)


#: Prepared secret lists by the raw values they came from. Settings are read afresh on each call,
#: so a secret set or changed between calls is a new key here, never a stale entry.
_PREPARED: dict[tuple[object, ...], _Exact] = {}
_PREPARED_MAX = 64
_NONE = _Exact(())


def _exact(secrets: SecretSource) -> _Exact:
    if secrets is None:
        return _NONE
    raw: tuple[object, ...]
    if isinstance(secrets, str):
        raw = (secrets,)
    elif isinstance(secrets, (list, tuple)):
        raw = tuple(secrets)
    else:
        # Not ``isinstance(secrets, HasSecrets)``: a runtime protocol check costs more than the rest.
        read = getattr(secrets, "secret_values", None)
        raw = tuple(read() if callable(read) else cast(Iterable[str], secrets))
    try:
        found = _PREPARED.get(raw)
    except TypeError:  # an unhashable item: nothing to remember it by
        return _prepare(raw)
    if found is None:
        if len(_PREPARED) >= _PREPARED_MAX:
            _PREPARED.clear()
        found = _PREPARED[raw] = _prepare(raw)
    return found


def _prepare(raw: tuple[object, ...]) -> _Exact:
    # Longest first, so a secret that contains another is removed whole.
    unique = {v for v in raw if isinstance(v, str) and len(v) >= 4}
    return _Exact(tuple(sorted(unique, key=len, reverse=True)))


def _positions(haystack: str, triggers: tuple[str, ...]) -> list[int]:
    found: list[int] = []
    for trigger in triggers:
        pos = haystack.find(trigger)
        while pos != -1:
            found.append(pos)
            pos = haystack.find(trigger, pos + 1)
    found.sort()
    return found


def _apply_at(text: str, starts: list[int], pattern: re.Pattern[str], keep: int) -> str:
    """Replace matches of ``pattern`` that begin at one of ``starts`` (the trigger positions)."""
    pieces: list[str] = []
    last = 0
    for pos in starts:
        if pos < last:
            continue  # inside the previous replacement
        match = pattern.match(text, pos)
        if match is None:
            continue
        pieces.append(text[last:pos])
        pieces.append(match.group(1) + MARKER if keep else MARKER)
        last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _redact_with(text: str, exact: tuple[str, ...]) -> str:
    for value in exact:
        if value in text:
            text = text.replace(value, MARKER)
    if text.isascii() and not _has_trigger(text):
        return text
    lowered: str | None = None
    for triggers, folded, pattern, keep in _RULES:
        if folded:
            if lowered is None:
                lowered = text.lower()
            haystack = lowered
        else:
            haystack = text
        if not any(t in haystack for t in triggers):
            continue
        if triggers[0] in _UNANCHORED or len(haystack) != len(text):
            # The trigger is not where a match starts (or lowering moved indices): scan it all.
            new_text = pattern.sub((r"\g<1>" + MARKER) if keep else MARKER, text)
        else:
            # Every rule's match starts with its trigger: try the pattern only at those spots.
            new_text = _apply_at(text, _positions(haystack, triggers), pattern, keep)
        if new_text != text:
            text = new_text
            lowered = None
    return text


def redact(text: str, secrets: SecretSource = ()) -> str:
    """Return ``text`` with every configured secret and known key shape replaced by ``[REDACTED]``.

    ``secrets`` is an iterable of exact values or an object with ``secret_values()`` (Settings).
    """
    if not text:
        return text
    return _redact_with(text, _exact(secrets).values)


def bounded(text: str, limit: int, secrets: SecretSource = ()) -> str:
    """``text`` redacted, then cut to about ``limit`` characters by dropping its middle.

    Error text names what failed at its start and, often, why at its end (a provider's nested
    message, the last line of a traceback), so both ends are kept and the cut is marked.
    """
    text = redact(text, secrets)
    if len(text) <= limit:
        return text
    marker = " … [{} characters cut] … "
    room = max(0, limit - len(marker.format(len(text))))
    head = (room + 1) // 2
    tail = room - head
    cut = len(text) - head - tail
    return text[:head].rstrip() + marker.format(cut) + (text[-tail:].lstrip() if tail else "")


def redact_obj(obj: _Shape, secrets: SecretSource = ()) -> _Shape:
    """Redact every string inside ``obj`` (dicts, lists, tuples, nested); other values pass through.

    The result has the shape of ``obj``: strings stay strings, containers the same containers. When
    nothing inside needs redacting (nearly always), it is ``obj`` itself: treat it as read-only.
    """
    return redact_obj_dumped(obj, secrets)[0]


def redact_obj_dumped(obj: _Shape, secrets: SecretSource = ()) -> tuple[_Shape, str | None]:
    """:func:`redact_obj`'s result, with ``json.dumps(obj, ensure_ascii=False)`` when that dump showed
    nothing to redact (the result is then ``obj`` itself and the dump its JSON text); ``None`` when
    ``obj`` went the long way."""
    exact = _exact(secrets)
    dumped = _clean_json(obj, exact)
    if dumped is not None:
        return obj, dumped
    return cast(_Shape, _walk(obj, exact.values)), None


def _clean_json(obj: object, exact: _Exact) -> str | None:
    """``obj``'s JSON dump when no string in it holds a secret value or a rule's trigger, judged on
    that one dump (one C-speed pass instead of visiting every string); ``None`` otherwise. Every
    string shows verbatim in the dump, so whatever a string holds, the dump holds; a match spanning
    two strings or a number only sends ``obj`` the long way. Non-ASCII text, secrets JSON would
    escape and objects JSON cannot write always go the long way."""
    if isinstance(obj, str) or exact.escaped:
        return None
    try:
        dumped = json.dumps(obj, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return dumped if _clean_dump(dumped, exact) else None


def _clean_dump(dumped: str, exact: _Exact) -> bool:
    """Whether a JSON dump shows nothing to redact: ASCII, no secret value, no rule's trigger."""
    if not dumped.isascii() or any(value in dumped for value in exact.values):
        return False
    return not _has_trigger(dumped)


def redacted_json(obj: object, secrets: SecretSource = (), *,
                  separators: tuple[str, str] | None = None) -> str:
    """``obj`` as JSON text (``ensure_ascii=False``; a value JSON cannot write as its ``str``) with every
    secret and key shape in its strings redacted.

    One dump, searched as :func:`redact_obj` searches it, is the text itself when nothing needs
    redacting (nearly always); otherwise the strings are redacted one by one (the ``str`` of a value
    JSON cannot write included) and dumped again.
    """
    return redacted_json_all([obj], secrets, separators=separators)[0]


def redacted_json_all(objs: Sequence[object], secrets: SecretSource = (), *,
                      separators: tuple[str, str] | None = None) -> list[str]:
    """Each of ``objs`` as :func:`redacted_json` writes it, their dumps searched together in one pass
    when none needs redacting (a match found only across two dumps sends each the long way)."""
    exact = _exact(secrets)
    if not exact.escaped:
        encode = _encoder(separators).encode
        dumps = [encode(obj) for obj in objs]
        if _clean_dump(dumps[0] if len(dumps) == 1 else "\n".join(dumps), exact):
            return dumps

    def text_of(value: object) -> str:
        return _redact_with(str(value), exact.values)

    return [json.dumps(_walk(obj, exact.values), ensure_ascii=False, separators=separators, default=text_of)
            for obj in objs]


_ENCODERS: dict[tuple[str, str] | None, json.JSONEncoder] = {}


def _encoder(separators: tuple[str, str] | None) -> json.JSONEncoder:
    """``json.dumps(..., ensure_ascii=False, separators=separators, default=str)``'s encoder, built once
    (``json.dumps`` builds one per call when given options; these dumps run for every trace event)."""
    encoder = _ENCODERS.get(separators)
    if encoder is None:
        encoder = _ENCODERS[separators] = json.JSONEncoder(ensure_ascii=False, separators=separators,
                                                           default=str)
    return encoder


def _walk(obj: object, exact: tuple[str, ...]) -> object:
    if isinstance(obj, str):
        return _redact_with(obj, exact) if obj else obj
    if isinstance(obj, dict):
        return {(_walk(k, exact) if isinstance(k, str) else k): _walk(v, exact) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(v, exact) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v, exact) for v in obj)
    return obj
