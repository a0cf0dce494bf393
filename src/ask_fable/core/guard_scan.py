"""One pass over a question that tells which of the guard's patterns could occur in it at all.

Every watched pattern needs some literal text to match: ``\\b(?:steal|steals)\\s+…`` cannot match a
question without ``steal`` in it. :class:`Gates` works those literals out from each compiled
pattern once, joins every literal into one Aho-Corasick automaton, and finds them all in a single
scan of the question. A pattern whose literals are all absent is known not to match without running it, so a
question costs one scan plus the few patterns it could trigger, and a question with no watched
literal at all is let through after that scan alone. :class:`LazyGates` works them out off the
caller's path.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import ahocorasick

if TYPE_CHECKING:  # the stubs keep the pre-3.11 names of the same modules
    import sre_constants as _const
    import sre_parse as _parser
else:
    from re import _constants as _const
    from re import _parser

_REPEATS = (_const.MAX_REPEAT, _const.MIN_REPEAT, _const.POSSESSIVE_REPEAT)
_Literals = frozenset[str]
#: Literals shorter than this gate nothing (a space or a letter occurs in nearly every question).
_SHORTEST = 2


#: Words in nearly every question: a requirement made only of them rules nothing out, so another one
#: of the same pattern ("payload" rather than "my " in ``\bmy (?:payloads?|implants?)``) is chosen.
_COMMON = frozenset(
    (
        "a", "an", "the", "my", "our", "your", "i", "we", "you", "me", "to", "of", "in", "on", "for", "and",
        "or", "is", "it", "be", "do", "how", "what", "can", "that", "this", "with", "from", "at", "as", "are",
        "by", "not",
    )
)


def _everyday(literal: str) -> bool:
    return literal.strip() in _COMMON


def _best(candidates: list[_Literals]) -> _Literals | None:
    """The most selective requirement: not made only of everyday words, then the one whose shortest
    literal is longest, then the smallest."""
    if not candidates:
        return None
    return max(candidates, key=lambda c: (not all(map(_everyday, c)), min(map(len, c)), -len(c)))


def _required(items: Iterable[tuple[object, object]]) -> _Literals | None:
    """Literals of which every match of the sequence ``items`` contains at least one, or None."""
    candidates: list[_Literals] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            candidates.append(frozenset(("".join(run),)))
            run.clear()

    for op, arg in items:
        if op is _const.LITERAL and isinstance(arg, int):
            run.append(chr(arg))
            continue
        spelled = _spelled_out(op, arg) if run else None
        if spelled:
            # "overdose|od" is parsed as "o" then "verdose|d": joined again, each word is the requirement
            candidates.append(frozenset("".join(run) + rest for rest in spelled))
        close_run()
        found = _required_item(op, arg)
        if found is not None:
            candidates.append(found)
    close_run()
    return _best(candidates)


def _spelled_out(op: object, arg: object) -> list[str] | None:
    """The alternatives of a branch whose every alternative is plain text, or None."""
    if op is not _const.BRANCH or not isinstance(arg, tuple | list):
        return None
    words: list[str] = []
    for alternative in arg[1]:
        data = alternative.data if isinstance(alternative, _parser.SubPattern) else None
        if not data:
            return None
        word = ""
        for kind, code in data:
            if kind is not _const.LITERAL or not isinstance(code, int):
                return None
            word += chr(code)
        words.append(word)
    return words


def _of(value: object) -> _Literals | None:
    """The requirement of a parsed sub-pattern; None for anything else."""
    return _required(value.data) if isinstance(value, _parser.SubPattern) else None


def _required_item(op: object, arg: object) -> _Literals | None:
    if op is _const.ATOMIC_GROUP:
        return _of(arg)
    if not isinstance(arg, tuple | list):
        return None
    if op is _const.SUBPATTERN:
        # (group, flags added, flags removed, body): a scoped (?i:…) matches other casings of its text.
        return None if arg[1] & re.IGNORECASE else _of(arg[-1])
    if op is _const.BRANCH:
        union: set[str] = set()
        for alternative in arg[1]:
            found = _of(alternative)
            if found is None:
                return None
            union |= found
        return frozenset(union)
    if op in _REPEATS:
        return _of(arg[2]) if arg[0] >= 1 else None
    if op is _const.IN and len(arg) <= 4 and all(kind is _const.LITERAL for kind, _ in arg):
        # A small class of plain characters, like [sz], is one literal per character.
        return frozenset(chr(code) for _, code in arg)
    return None


def required_literals(pattern: re.Pattern[str]) -> _Literals | None:
    """Literals of which every match of ``pattern`` contains one; None when no such set is known."""
    if pattern.flags & re.IGNORECASE:
        return None
    return _of(_parser.parse(pattern.pattern, pattern.flags))


class Gates:
    """The literals each registered pattern needs, found for a whole question in one scan."""

    def __init__(self, patterns: Iterable[re.Pattern[str]]) -> None:
        # Keyed by id: equal patterns compiled in different modules are each gated.
        needs: dict[int, tuple[re.Pattern[str], _Literals]] = {}
        # The same source is often compiled in several modules: parse it once.
        by_source: dict[tuple[str, int], _Literals | None] = {}
        for pattern in patterns:
            if id(pattern) in needs:
                continue
            source = (pattern.pattern, pattern.flags)
            if source not in by_source:
                by_source[source] = required_literals(pattern)
            found = by_source[source]
            # A requirement as loose as one letter or a space is met by nearly any text.
            if found and min(map(len, found)) >= _SHORTEST:
                needs[id(pattern)] = (pattern, found)
        # Patterns are known by id (hashing one hashes its whole source); holding them keeps ids unique.
        self._patterns = tuple(pattern for pattern, _ in needs.values())
        self._gated = frozenset(needs)
        # Every literal, found wherever it occurs (inside another one too) in one Aho-Corasick pass.
        users: dict[str, set[int]] = {}
        for key, (_, need) in needs.items():
            for literal in need:
                users.setdefault(literal, set()).add(key)
        self._scan: ahocorasick.Automaton | None = None
        if users:
            self._scan = ahocorasick.Automaton()
            for literal, keys in users.items():
                self._scan.add_word(literal, frozenset(keys))
            self._scan.make_automaton()

    def excluded(self, text: str) -> frozenset[int]:
        """The ids of registered patterns that cannot match ``text``: none of their literals occurs."""
        if self._scan is None:
            return frozenset()
        return self._gated.difference(*[keys for _, keys in self._scan.iter(text)])


class LazyGates:
    """Gates worked out once, off the caller's path.

    Working out what ~200 patterns need parses each of them (a tenth of a second or more), which a
    one-shot command would pay for a single question. So the first question starts that work on a
    background thread and is judged without gates, as is every question until they are ready:
    gates only skip searches that cannot match, so the verdicts are the same either way.
    """

    def __init__(self, patterns: Callable[[], list[re.Pattern[str]]]) -> None:
        self._patterns = patterns
        self._gates: Gates | None = None
        self._start = threading.Lock()
        self._build = threading.Lock()
        self._started = False

    def excluded(self, text: str) -> frozenset[int]:
        """What :meth:`Gates.excluded` says once the gates are ready; nothing before."""
        gates = self._gates
        if gates is not None:
            return gates.excluded(text)
        with self._start:
            start, self._started = not self._started, True
        if start:
            threading.Thread(target=self.ready, name="guard-gates", daemon=True).start()
        return frozenset()

    def ready(self) -> Gates:
        """The gates, worked out now on this thread if they are not yet."""
        with self._build:
            if self._gates is None:
                self._gates = Gates(self._patterns())
            return self._gates
