"""One pass over a question that tells which of the guard's patterns could occur in it at all.

Every watched pattern needs some literal text to match: ``\\b(?:steal|steals)\\s+…`` cannot match a
question without ``steal`` in it. :class:`Gates` works those literals out from each compiled
pattern once, joins every literal into one Aho-Corasick automaton, and finds them all in a single
scan of the question. A pattern whose literals are all absent is known not to match without running it, so a
question costs one scan plus the few patterns it could trigger, and a question with no watched
literal at all is let through after that scan alone.

Compiling and parsing the guard's few hundred patterns costs a few tenths of a second of CPU, which
every process that judges a question would pay. So each watched pattern is a :class:`LazyPattern`,
compiled the first time it is searched, and the literals each pattern needs are read from a table
shipped beside this module (:data:`TABLE_FILE`, written by ``benchmarks/guard_train.py``), keyed by a
digest of the pattern's source: a question compiles only the patterns its literals let through, and
no pattern is parsed unless its source is missing from the table (then it is parsed on first use).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, reduce
from importlib import resources
from itertools import islice
from operator import itemgetter, or_
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

import ahocorasick

if TYPE_CHECKING:  # the stubs keep the pre-3.11 names of the same modules
    import sre_constants as _const
    import sre_parse as _parser
    from sre_compile import compile as _compile_tree
else:
    from re import _constants as _const
    from re import _parser
    from re._compiler import compile as _compile_tree

_Item = TypeVar("_Item")
#: The table of each pattern's literals, inside this package.
TABLE_FILE = "guard_gates.json"


class LazyPattern:
    """A regular expression compiled the first time it is used.

    Its first search compiles it and puts the compiled pattern's own methods on the instance, so
    every later call goes straight to them, as fast as calling a compiled pattern. There is one
    object per source: the checks of several modules that search for the same words share it, so a
    question's facts (kept by the pattern's ``id``) answer each search once for all of them.
    """

    _made: ClassVar[dict[tuple[type, str], LazyPattern]] = {}
    #: Compiled with ``re.ASCII``: ``\b``, ``\w`` and ``\s`` read as ASCII (:class:`AsciiPattern`).
    ascii_only: ClassVar[bool] = False

    def __new__(cls, pattern: str) -> LazyPattern:
        made = cls._made.get((cls, pattern))
        if made is None:
            made = cls._made.setdefault((cls, pattern), super().__new__(cls))
        return made

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.flags = re.UNICODE  # what re.compile gives a str pattern

    @cached_property
    def ascii(self) -> LazyPattern:
        """The same pattern compiled with ``re.ASCII``, for a text that is all ASCII.

        On such a text it matches exactly where this one does (a normalized question holds no
        whitespace but the space, and ASCII and Unicode agree on every ASCII letter, digit and
        space), and it searches faster: the engine reads a word boundary from a table rather than
        through Unicode's character database. An alternation's twin compiles each alternative so."""
        if self.ascii_only:
            return self
        return (AsciiAlternatives if isinstance(self, LazyAlternatives) else AsciiPattern)(self.pattern)

    def compiled(self) -> re.Pattern[str] | Alternatives:
        """The compiled pattern; its methods replace this object's own from now on."""
        found = self._compile()
        vars(self).update(
            search=found.search, match=found.match, fullmatch=found.fullmatch, finditer=found.finditer,
            findall=found.findall, sub=found.sub, split=found.split,
        )
        return found

    def _compile(self) -> re.Pattern[str] | Alternatives:
        return compile_fast(self.pattern, ascii_only=self.ascii_only)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """:meth:`re.Pattern.search`."""
        return self.compiled().search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """:meth:`re.Pattern.match`."""
        return self.compiled().match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """:meth:`re.Pattern.fullmatch`."""
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        """:meth:`re.Pattern.finditer`."""
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[str]:
        """:meth:`re.Pattern.findall`."""
        return self.compiled().findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        """:meth:`re.Pattern.sub`."""
        return self.compiled().sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        """:meth:`re.Pattern.split`."""
        return self.compiled().split(string, maxsplit)


#: Candidate lists an :class:`Alternatives` keeps, one per set of alternatives a text let through.
_CANDIDATE_SETS = 1024
#: What a scan yields with each literal found: its value.
_SECOND = itemgetter(1)


class LazyAlternatives(LazyPattern):
    """A long alternation (``(?:A|B|…)``) searched one alternative at a time, only those that can occur.

    Python's regex engine tries every alternative at every word of the text, so an alternation of
    fifty phrases costs tens of microseconds however few of them the text could hold. Each
    alternative needs some literal text (:func:`requirements`, read from the shipped table
    like a pattern's), so one Aho-Corasick pass over the text says which alternatives could match,
    and only those are searched: the earliest match wins, and of two at the same place the one
    listed first, as in the alternation itself. No alternative may hold a capturing group or match
    empty text (a test checks the guard's). Only the longest alternations, which a question's words
    rule out most of, are worth it: for a short one, finding its candidates costs more than the
    search it saves.
    """

    def alternatives(self) -> list[LazyPattern]:
        """Each alternative, as a pattern of its own; none when it has fewer than a few."""
        parts = top_alternatives(self.pattern)
        kind = AsciiPattern if self.ascii_only else LazyPattern
        return [kind(part) for part in parts] if len(parts) >= _SPLIT_FROM else []

    def _compile(self) -> re.Pattern[str] | Alternatives:
        parts = self.alternatives()
        if not parts:
            return compile_fast(self.pattern, ascii_only=self.ascii_only)
        needs = _parts_needs(self, shipped_table())
        return Alternatives(self.pattern, list(zip(parts, needs, strict=True)), self)

    #: The gates whose scan also finds this alternation's literals, and where its bits lie in what
    #: that scan meets: the first bit and the number of alternatives (:meth:`Gates.excluded`).
    region: tuple[Gates, int, int] | None = None

    def gated_by(self, gates: Gates, base: int, count: int) -> None:
        """Read this alternation's candidates, and its ASCII twin's, from what ``gates`` met in the
        text it scanned last, from bit ``base`` on (the most recent gates to say so are asked)."""
        for form in (self, self.ascii):
            if isinstance(form, LazyAlternatives):
                form.region = (gates, base, count)


class Alternatives:
    """What :class:`LazyAlternatives` compiles to: the alternatives, and the literals each needs."""

    def __init__(
        self, source: str, parts: list[tuple[LazyPattern, _Needs]], owner: LazyAlternatives | None = None
    ) -> None:
        self._source = source
        self._owner = owner
        self._parts = [part for part, _ in parts]
        # Sets of alternatives as bits of an int (:func:`_add_bits`): joining a text's few sets is a few
        # ORs, and the candidate list of each set met so far is kept, in the alternatives' order.
        self._count = len(parts)
        users: dict[str, int] = {}
        self._always = _add_bits(users, [need for _, need in parts])
        self._scan = ahocorasick.Automaton()
        for literal, indexes in users.items():
            self._scan.add_word(literal, indexes)
        self._scan.make_automaton()
        self._by_set: dict[int, list[LazyPattern]] = {}
        self._last: tuple[str, list[LazyPattern]] = ("", [])

    def _candidates(self, string: str) -> list[LazyPattern]:
        """The alternatives whose literals occur in ``string``, in their order (the last answer kept,
        since a question's clauses and windows are searched one after another)."""
        last = self._last
        if last[0] is string:
            return last[1]
        region = self._owner.region if self._owner is not None else None
        if region is not None:
            gates, base, count = region
            seen, met = gates.last  # read once: another thread may scan another text meanwhile
            if seen is string and count == self._count:
                # The gates have just scanned this text for these literals too: the bits are in what
                # they met.
                met >>= base
                return self.remember(string, met & met >> count & (1 << count) - 1)
        met = reduce(or_, map(_SECOND, self._scan.iter(string)), self._always)
        return self.remember(string, met & met >> self._count)

    def remember(self, string: str, found: int) -> list[LazyPattern]:
        """The alternatives whose bits are set in ``found``, kept as ``string``'s candidates."""
        candidates = self._by_set.get(found)
        if candidates is None:
            parts = self._parts
            candidates = [parts[index] for index in range(found.bit_length()) if found >> index & 1]
            if len(self._by_set) < _CANDIDATE_SETS:
                self._by_set[found] = candidates
        self._last = (string, candidates)
        return candidates

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """The earliest match of any alternative, the first listed of those starting there."""
        candidates = self._candidates(string)
        if len(candidates) == 1:
            return candidates[0].search(string, pos, endpos)
        best: re.Match[str] | None = None
        for part in candidates:
            found = part.search(string, pos, endpos)
            if found is not None and (best is None or found.start() < best.start()):
                best = found
        return best

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """The first alternative that matches at ``pos``."""
        found = (part.match(string, pos, endpos) for part in self._candidates(string))
        return next(filter(None, found), None)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """The first alternative that matches all of ``string[pos:endpos]``."""
        found = (part.fullmatch(string, pos, endpos) for part in self._candidates(string))
        return next(filter(None, found), None)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        """Each match in turn, the next searched from where the last ended (no alternative is empty)."""
        candidates = self._candidates(string)
        if len(candidates) < 2:  # one alternative (or none) can match: its own matches are the matches
            return candidates[0].finditer(string, pos, endpos) if candidates else iter(())
        return self._each(string, pos, endpos)

    def _each(self, string: str, pos: int, endpos: int) -> Iterator[re.Match[str]]:
        while (found := self.search(string, pos, endpos)) is not None:
            yield found
            pos = max(found.end(), pos + 1)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[str]:
        """Each match's text (the alternation has no group)."""
        return [found.group(0) for found in self.finditer(string, pos, endpos)]

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        """:meth:`re.Pattern.sub`, with the alternation compiled whole."""
        return re.compile(self._source).sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        """:meth:`re.Pattern.split`, with the alternation compiled whole."""
        return re.compile(self._source).split(string, maxsplit)


#: What matters when reading a pattern's brackets: an escape, a character class, a bracket or a bar.
_SYNTAX = re.compile(r"\\.|\[\]?(?:\\.|[^\]\\])*\]|[()|]", re.DOTALL)


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the group opened at ``text[start]``, or -1."""
    depth = 0
    for found in _SYNTAX.finditer(text, start):
        token = found.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                return found.start()
    return -1


def _bars(text: str) -> list[str]:
    """``text`` cut at each ``|`` outside brackets and classes."""
    parts, depth, begin = [], 0, 0
    for found in _SYNTAX.finditer(text):
        token = found.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif token == "|" and depth == 0:
            parts.append(text[begin : found.start()])
            begin = found.end()
    parts.append(text[begin:])
    return parts


#: The longest text after an alternation that is copied into each of its alternatives.
_SUFFIX = 40


@lru_cache(maxsize=256)
def top_alternatives(source: str) -> tuple[str, ...]:
    """The alternatives a pattern is an alternation of, each as a pattern of its own, or ``(source,)``.

    ``A|B``, ``(?:A|B)``, ``\\b(?:A|B)`` and ``(?:A|B)C`` (``C`` short and without a ``|``) are the
    alternations ``A|B``, ``A|B``, ``\\bA|\\bB`` and ``AC|BC``: the same matches, in the same order
    of preference. Kept by source: an alternation and its ASCII twin are cut once.
    """
    parts = _bars(source)
    if len(parts) > 1:
        return tuple(parts)
    prefix = r"\b" if source.startswith(r"\b(?:") else ""
    body = source[len(prefix) :]
    if not body.startswith("(?:"):
        return (source,)
    close = _closing(body, 0)
    suffix = body[close + 1 :]
    if close < 0 or len(suffix) > _SUFFIX or len(_bars(suffix)) > 1:
        return (source,)
    inner = _bars(body[3:close])
    return tuple(prefix + part + suffix for part in inner) if len(inner) > 1 else (source,)


#: Alternatives from which an alternation is searched one alternative at a time.
_SPLIT_FROM = 3


def _add_bits(users: dict[str, int], needs: list[_Needs], base: int = 0) -> int:
    """Lay out the requirements of ``needs`` (n items) as bits of an int from bit ``base``: item i's
    requirement of rank r is bit ``base + r * n + i``, added to ``users`` under each of its literals.
    An item is a candidate when all of its bits are set; a rank it lacks is always met, and those
    bits are returned."""
    count, always = len(needs), 0
    for index, need in enumerate(needs):
        for rank in range(_KEPT):
            bit = 1 << (base + rank * count + index)
            if rank >= len(need):
                always |= bit
                continue
            for literal in need[rank]:
                users[literal] = users.get(literal, 0) | bit
    return always


class AsciiPattern(LazyPattern):
    """A :class:`LazyPattern` compiled with ``re.ASCII`` (:attr:`LazyPattern.ascii`). Its ``flags``
    stay the Unicode pattern's: it needs the same literals, and the shipped table knows them by those."""

    ascii_only = True


class AsciiAlternatives(LazyAlternatives):
    """A :class:`LazyAlternatives` whose alternatives are compiled with ``re.ASCII``."""

    ascii_only = True


def compile_fast(source: str, *, ascii_only: bool = False) -> re.Pattern[str]:
    """``re.compile(source)``, with a word boundary that opens the pattern checked after its letter.

    A search tries a pattern at every position of the text unless the pattern opens with a literal
    character, which lets it skip straight to where that character occurs; ``\\b`` before the
    letter hides it. ``\\bpeople`` and ``p(?<!\\w.)eople`` (a "p" not preceded by a word
    character) match the same text at the same places, and the second searches several times
    faster, so a pattern opening with a boundary and a letter is rewritten so when it is compiled
    (its ``pattern`` attribute is then None). An alternation is left as it is: its letters differ,
    and a lookbehind tried in each alternative costs more than one boundary before them all. With
    ``ascii_only``, compiled with ``re.ASCII``.
    """
    flags = re.ASCII if ascii_only else 0
    tree = _parser.parse(source, flags)
    sub = tree
    while len(sub.data) == 1:  # "(?:\\bword …)"
        op, arg = sub.data[0]
        if op is not _const.SUBPATTERN or not isinstance(arg, tuple) or arg[1] or arg[2]:
            break
        inner: object = arg[3]
        if not isinstance(inner, _parser.SubPattern):
            break
        sub = inner
    data = sub.data
    first: tuple[object, object] = data[0] if data else (None, None)
    if len(data) > 1 and first == (_const.AT, _const.AT_BOUNDARY):
        op, code = data[1]
        if op is _const.LITERAL and isinstance(code, int) and (chr(code).isalnum() or chr(code) == "_"):
            data[0:2] = [data[1], _NOT_AFTER_WORD]
            return _compile_tree(tree, flags)
    return re.compile(source, flags)


#: What the guard's checks search with: a pattern compiled on first use, in its ASCII form for an ASCII text.
Pattern = LazyPattern
#: Any pattern the gates know of: also a plain compiled one, searched only as it is.
AnyPattern = LazyPattern | re.Pattern[str]


def digest(pattern: AnyPattern) -> str:
    """The key of a pattern in the table: a digest of its flags (as a number) and source."""
    return hashlib.blake2b(f"{int(pattern.flags)}:{pattern.pattern}".encode(), digest_size=9).hexdigest()


_REPEATS = (_const.MAX_REPEAT, _const.MIN_REPEAT, _const.POSSESSIVE_REPEAT)
#: "Not preceded by a word character", placed after a letter: ``(?<!\\w.)``.
_NOT_AFTER_WORD = _parser.parse(r"x(?<!\w.)", 0).data[1]
_Literals = frozenset[str]
#: What a pattern is known to need, the most selective requirement first: each is a set of literals
#: of which every match contains one, so a text lacking any one of them rules the pattern out.
_Needs = tuple[_Literals, ...]
#: Requirements kept per pattern: a second one rules out many a pattern whose best still occurs
#: ("insider" or "employee" beside " at", " in" or " from").
_KEPT = 2
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


def _selectivity(candidate: _Literals) -> tuple[int, int, int]:
    """How much a requirement rules out: the fewer everyday words, then the longer its shortest
    literal, then the fewer literals, the more."""
    return -sum(map(_everyday, candidate)), min(map(len, candidate)), -len(candidate)


def _best(candidates: list[_Literals]) -> _Literals | None:
    """The most selective requirement (:func:`_selectivity`), the first of equals; None for none."""
    return max(candidates, key=_selectivity) if candidates else None


def _rank(candidates: Iterable[_Literals]) -> _Needs:
    """The most selective requirement (as :func:`_best`), then the most selective of the others that a
    text meeting the first may still miss ("cookies" is met wherever " cookies" is)."""
    ordered = sorted(dict.fromkeys(candidates), key=_selectivity, reverse=True)
    if not ordered:
        return ()
    first = ordered[0]
    others = (need for need in ordered[1:] if not _implied(first, need))
    return (first, *islice(others, _KEPT - 1))


def _implied(first: _Literals, need: _Literals) -> bool:
    """True when every literal of ``first`` holds one of ``need``: a text meeting one meets both."""
    return all(any(part in literal for part in need) for literal in first)


def _either(each: list[_Needs]) -> _Needs:
    """What a match of one of several alternatives needs: the union of their best requirements, and
    the union of their last ones (an alternative with one requirement gives it to both); nothing
    when one alternative needs nothing."""
    if not each or not all(each):
        return ()
    first = frozenset().union(*(needs[0] for needs in each))
    second = frozenset().union(*(needs[-1] for needs in each))
    return (first,) if second == first else (first, second)


def _required(items: Iterable[tuple[object, object]]) -> _Needs:
    """Requirements every match of the sequence ``items`` meets, the most selective first."""
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
        elif run:
            # "ex|ex (?:wife|…)|employer" is parsed as "e" then a branch: each alternative needs the prefix
            # joined to its own leading text, or what it needs itself, whichever rules out more
            prefixed = _prefixed("".join(run), op, arg)
            if prefixed is not None:
                candidates.append(prefixed)
        close_run()
        candidates.extend(_required_item(op, arg))
    close_run()
    return _rank(candidates)


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


def _prefixed(prefix: str, op: object, arg: object) -> _Literals | None:
    """What a branch after the literal ``prefix`` needs: per alternative, the prefix joined to the
    alternative's leading literal text, or the alternative's own requirement if that is better."""
    if op is not _const.BRANCH or not isinstance(arg, tuple | list):
        return None
    union: set[str] = set()
    for alternative in arg[1]:
        if not isinstance(alternative, _parser.SubPattern):
            return None
        lead = ""
        for kind, code in alternative.data:
            if kind is not _const.LITERAL or not isinstance(code, int):
                break
            lead += chr(code)
        found = _best([frozenset((prefix + lead,)), *_of(alternative)])
        if found is not None:
            union |= found
    return frozenset(union)


def _of(value: object) -> _Needs:
    """The requirements of a parsed sub-pattern; none for anything else."""
    return _required(value.data) if isinstance(value, _parser.SubPattern) else ()


def _required_item(op: object, arg: object) -> _Needs:
    if op is _const.ATOMIC_GROUP:
        return _of(arg)
    if not isinstance(arg, tuple | list):
        return ()
    if op is _const.SUBPATTERN:
        # (group, flags added, flags removed, body): a scoped (?i:…) matches other casings of its text.
        return () if arg[1] & re.IGNORECASE else _of(arg[-1])
    if op is _const.BRANCH:
        return _either([_of(alternative) for alternative in arg[1]])
    if op in _REPEATS:
        return _of(arg[2]) if arg[0] >= 1 else ()
    if op is _const.IN and len(arg) <= 4 and all(kind is _const.LITERAL for kind, _ in arg):
        # A small class of plain characters, like [sz], is one literal per character.
        return (frozenset(chr(code) for _, code in arg),)
    return ()


def requirements(pattern: AnyPattern) -> _Needs:
    """Up to :data:`_KEPT` sets of literals, each holding a literal of every match of ``pattern``, the
    most selective first; a second made of loose or everyday literals, which rules out next to
    nothing, is left out."""
    if pattern.flags & re.IGNORECASE:
        return ()
    found = _of(_parser.parse(pattern.pattern, pattern.flags))
    parts = top_alternatives(pattern.pattern)
    if len(parts) > 1:
        # The parser factors the alternatives' common prefixes ("ex|employer" becomes "e" then a branch),
        # which can leave a looser requirement than the alternatives' own, joined.
        joined = _either([_of(_parser.parse(part, pattern.flags)) for part in parts])
        found = _rank([*joined, *found])
    return found[:1] + tuple(need for need in found[1:] if not _loose(need))


def _loose(need: _Literals) -> bool:
    return min(map(len, need)) < _SHORTEST or any(map(_everyday, need))


class Gates:
    """The literals each registered pattern needs, found for a whole question in one scan.

    A pattern may have two requirements (:func:`requirements`); it is ruled out when the text meets
    either one not at all. Requirements are bits of an int, the first of pattern i bit i and its
    second bit n + i (always set for a pattern with one): the scan's findings are joined by a few ORs,
    and the patterns that may match are those with both bits set, a few out of hundreds.
    """

    def __init__(self, patterns: Iterable[AnyPattern], table: Table | None = None) -> None:
        # Keyed by id: equal patterns compiled in different modules are each gated.
        needs: dict[int, tuple[AnyPattern, _Needs]] = {}
        # The same source is often compiled in several modules: parse it once.
        by_source: dict[tuple[str, int], _Needs] = {}
        for pattern in patterns:
            if id(pattern) in needs:
                continue
            source = (pattern.pattern, pattern.flags)
            if source not in by_source:
                by_source[source] = _needs(pattern, table)
            # A requirement as loose as one letter or a space is met by nearly any text.
            found = tuple(need for need in by_source[source] if min(map(len, need)) >= _SHORTEST)
            if found:
                needs[id(pattern)] = (pattern, found)
        # Patterns are known by id (hashing one hashes its whole source); holding them keeps ids unique.
        self._patterns = tuple(pattern for pattern, _ in needs.values())
        self._gated = frozenset(needs)
        self._ids = tuple(needs)
        count = self._count = len(needs)
        self._mask = (1 << count) - 1
        self._width = (count + 7) // 8
        # The ids that byte value b at byte i of the patterns' bits stands for, at 256 * i + b, filled in
        # as met.
        self._by_byte: list[tuple[int, ...] | None] = [None] * (256 * self._width)
        # Every literal, found wherever it occurs (inside another one too) in one Aho-Corasick pass.
        users: dict[str, int] = {}
        self._always = _add_bits(users, [need for _, need in needs.values()])
        # A long alternation's own alternatives follow, each alternation's in a region of its own, so
        # the same pass tells it which of them the text may hold (:attr:`LazyAlternatives.region`).
        base = _KEPT * count
        for pattern, _ in needs.values():
            if isinstance(pattern, LazyAlternatives) and (parts := _parts_needs(pattern, table)):
                self._always |= _add_bits(users, parts, base)
                pattern.gated_by(self, base, len(parts))
                base += _KEPT * len(parts)
        #: The text scanned last and what its literals met.
        self.last: tuple[str, int] = ("", 0)
        self._scan: ahocorasick.Automaton | None = None
        if users:
            self._scan = ahocorasick.Automaton()
            for literal, bits in users.items():
                self._scan.add_word(literal, bits)
            self._scan.make_automaton()

    def excluded(self, text: str) -> frozenset[int]:
        """The ids of registered patterns that cannot match ``text``: no literal of one of their
        requirements occurs. What the scan met is kept (:attr:`last`), so that a long alternation's
        first search of the same text runs no scan of its own."""
        if self._scan is None:
            return frozenset()
        met = reduce(or_, map(_SECOND, self._scan.iter(text)), self._always)
        self.last = (text, met)
        both = met & met >> self._count & self._mask
        by_byte = self._by_byte
        possible: list[int] = []
        # Byte by byte: a few dozen bits are set out of hundreds, and most bytes are zero.
        for at, byte in enumerate(both.to_bytes(self._width, "little")):
            if byte:
                ids = by_byte[256 * at + byte]
                possible += ids if ids is not None else self._ids_at(at, byte)
        return self._gated.difference(possible)

    def _ids_at(self, at: int, byte: int) -> tuple[int, ...]:
        ids = self._by_byte[256 * at + byte] = tuple(
            self._ids[8 * at + bit] for bit in range(8) if byte >> bit & 1
        )
        return ids


@dataclass(frozen=True)
class Table:
    """What :data:`TABLE_FILE` holds, by :func:`digest` of each pattern's source: its requirements
    (:func:`requirements`) as sorted lists, and for a :class:`LazyAlternatives` its alternatives'
    in their order, so that neither the gates nor the alternation cut its source to find them."""

    requirements: Mapping[str, list[list[str]]] = field(default_factory=dict)
    alternatives: Mapping[str, list[list[list[str]]]] = field(default_factory=dict)


def _needs(pattern: AnyPattern, table: Table | None) -> _Needs:
    """What ``pattern`` needs: from the table when its source is there, else parsed now."""
    found = table.requirements.get(digest(pattern)) if table is not None else None
    return tuple(map(frozenset, found)) if found is not None else requirements(pattern)


def _parts_needs(pattern: LazyAlternatives, table: Table | None) -> list[_Needs]:
    """What each alternative of ``pattern`` needs: from the table when its source is there, else
    cut and parsed now."""
    found = table.alternatives.get(digest(pattern)) if table is not None else None
    if found is not None:
        return [tuple(map(frozenset, needs)) for needs in found]
    return [requirements(part) for part in pattern.alternatives()]


def table(patterns: Iterable[AnyPattern]) -> Table:
    """The table of what each pattern and each alternative of a :class:`LazyAlternatives` needs, as
    :data:`TABLE_FILE` holds it."""
    needs: dict[str, list[list[str]]] = {}
    alternatives: dict[str, list[list[list[str]]]] = {}
    for pattern in patterns:
        needs[digest(pattern)] = [sorted(need) for need in requirements(pattern)]
        if isinstance(pattern, LazyAlternatives) and (parts := pattern.alternatives()):
            alternatives[digest(pattern)] = [[sorted(need) for need in requirements(part)] for part in parts]
    return Table(dict(sorted(needs.items())), dict(sorted(alternatives.items())))


@lru_cache(maxsize=1)
def shipped_table() -> Table:
    """The table shipped in this package (empty when it is missing)."""
    try:
        text = resources.files("ask_fable.core").joinpath(TABLE_FILE).read_text(encoding="utf-8")
    except OSError:
        return Table()
    found = json.loads(text)
    return Table(found["requirements"], found["alternatives"])


class Plan(Generic[_Item]):
    """Items (offences, frames) each started by one pattern, in order, from which a question takes only
    those whose pattern its literals let through: one set difference, not a test per item."""

    def __init__(self, items: Iterable[tuple[Pattern, _Item]]) -> None:
        self._items = tuple(items)
        self._acts = frozenset(id(act) for act, _ in self._items)
        by_act: dict[int, list[int]] = {}
        for index, (act, _) in enumerate(self._items):
            by_act.setdefault(id(act), []).append(index)
        self._by_act = by_act

    def live(self, excluded: frozenset[int]) -> list[_Item]:
        """The items whose pattern is not in ``excluded``, in their order."""
        by_act, items = self._by_act, self._items
        indexes = [index for act in self._acts.difference(excluded) for index in by_act[act]]
        return [items[index][1] for index in sorted(indexes)]


class LazyGates:
    """Gates worked out on first use, from the shipped table of what each pattern needs.

    Reading the table and building the automaton takes a few milliseconds; only a pattern whose
    source is not in the table (changed since the table was written) is parsed, which is slower but
    gives the same gates.
    """

    def __init__(
        self, patterns: Callable[[], list[AnyPattern]],
        literals: Callable[[], Table] = shipped_table,
    ) -> None:
        self._patterns = patterns
        self._literals = literals
        self._gates: Gates | None = None
        self._build = threading.Lock()

    def excluded(self, text: str) -> frozenset[int]:
        """What :meth:`Gates.excluded` says, the gates worked out first if they are not yet."""
        gates = self._gates
        return (gates if gates is not None else self.ready()).excluded(text)

    def ready(self) -> Gates:
        """The gates, worked out now if they are not yet."""
        with self._build:
            if self._gates is None:
                self._gates = Gates(self._patterns(), self._literals())
            return self._gates
