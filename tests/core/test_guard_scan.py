"""The guard's one-pass scan: it rules a pattern out only when the pattern cannot match."""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from re import _parser  # type: ignore[attr-defined]

import pytest

from ask_fable.core import guard_intent
from ask_fable.core.guard_reading import normalize
from ask_fable.core.guard_scan import (
    Gates,
    LazyAlternatives,
    LazyGates,
    LazyPattern,
    Table,
    compile_fast,
    digest,
    requirements,
    shipped_table,
    top_alternatives,
)
from tests.guard_corpus import load


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"\b(?:steal|steals)\s+\w+", {"steal"}),
        (r"\bmy (?:ex|wife)'s\b", {"my ex", "my wife"}),
        # parsed as "o" then "verdose|d": the words are joined again, each with the text after it
        (r"(?:overdose|od) on\b", {"overdose on", "od on"}),
        # "my " is in nearly every question: joined to each word that follows, it is rarer than either
        (r"\bmy (?:payloads?|implants?)\b", {"my payload", "my implant"}),
        # parsed as "my e" then a branch: the prefix joined to each alternative's own leading text
        (r"\bmy (?:ex|employer|ex (?:wife|husband))'s\b", {"my ex", "my employer", "my ex "}),
        (r"\bthe \w+", {"the "}),
        (r"(?:a|b)?ransom\w*", {"ransom"}),
        (r"weaponi[sz]e", {"weaponi"}),
        (r"\w+\.(?:com|net)", {".com", ".net"}),
        (r"(?:foo)?\w+", None),
        (r"x(?i:y)", {"x"}),
        (r"(?i:steal)ing", {"ing"}),  # a scoped (?i:…) also matches STEAL: it requires nothing
    ],
)
def test_each_pattern_needs_the_literals_every_match_contains(
    pattern: str, literals: set[str] | None
) -> None:
    found = next(iter(requirements(re.compile(pattern))), None)
    assert (set(found) if found is not None else None) == literals


@pytest.mark.parametrize(
    ("pattern", "needs"),
    [
        # everyday words make the weaker requirement, whatever its length
        (r"\bbribe (?:an? )?(?:insider|employee) (?:at|in|from) ", [{"insider", "employee"}, {"bribe "}]),
        # each alternative gives its best to the first requirement and its other one to the second
        (r"\bsteal\w* (?:cookies|tokens)|\bdump\w* (?:hashes|creds)",
         [{" cookies", " tokens", " hashes", " creds"}, {"steal", "dump"}]),
        # one alternative with a single requirement gives it to both
        (r"\bsteal\w* (?:cookies|tokens)|\bkeylog", [{" cookies", " tokens", "keylog"}, {"steal", "keylog"}]),
        # a requirement met wherever the first is ("ransomware " in "ransomware to") is no second
        (r"\bransomware (?:for|to) ", [{"ransomware for", "ransomware to"}]),
        # nor is one made of everyday words, which rules out next to nothing
        (r"\bransomware \w+ (?:for|to)\b", [{"ransomware "}]),
        (r"(?:foo)?\w+", []),
    ],
)
def test_a_pattern_has_up_to_two_requirements_the_most_selective_first(
    pattern: str, needs: list[set[str]]
) -> None:
    assert [set(need) for need in requirements(re.compile(pattern))] == needs


def test_a_pattern_is_ruled_out_when_either_of_its_requirements_is_absent() -> None:
    insider = re.compile(r"\bbribe (?:an? )?(?:insider|employee) (?:at|in|from) ")
    gates = Gates([insider])
    assert id(insider) in gates.excluded("an employee at the bank asked how to report a bribe")
    assert id(insider) in gates.excluded("how do i bribe a bouncer at the club")
    assert id(insider) not in gates.excluded("how do i bribe an employee at the bank")


def test_an_alternation_searched_one_alternative_at_a_time_skips_one_missing_either_requirement() -> None:
    cookies = r"\bsteal\w* (?:cookies|tokens)"
    lazy = LazyAlternatives(rf"{cookies}|\bdump\w* (?:hashes|creds)|\bkeylog\w*")
    compiled = lazy.compiled()
    assert [part.pattern for part in compiled._candidates("steal the hashes")] == []
    assert [part.pattern for part in compiled._candidates("steal session cookies")] == [cookies]
    assert lazy.search("dump hashes, steal tokens").group(0) == "dump hashes"


def test_an_alternation_reads_its_candidates_from_the_gates_scan_of_the_same_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lazy = LazyAlternatives(r"\bsteal\w* (?:cookies|tokens)|\bdump\w* (?:hashes|creds)|\bkeylog\w*")
    gates = Gates([lazy])
    assert lazy.ascii.search("warm up") is None
    compiled = vars(lazy.ascii)["search"].__self__

    class NoScan:
        def iter(self, text: str) -> list[tuple[int, int]]:
            raise AssertionError(f"scanned {text!r} again")

    monkeypatch.setattr(compiled, "_scan", NoScan())
    text = "dump hashes, then steal tokens"
    assert id(lazy) not in gates.excluded(text)
    assert [m.group(0) for m in lazy.ascii.finditer(text)] == ["dump hashes", "steal tokens"]
    # the whole may match (" hashes", "steal"), but no alternative has both its requirements
    assert id(lazy) not in gates.excluded("steal the hashes")
    assert compiled._candidates("steal the hashes") == []
    with pytest.raises(AssertionError, match="scanned"):
        lazy.ascii.search("a text the gates never saw")


def test_a_pattern_is_ruled_out_only_when_its_literals_are_absent() -> None:
    steal, spread = re.compile(r"\bsteal\w*"), re.compile(r"\bspread\w* itself")
    gates = Gates([steal, spread])
    assert gates.excluded("the tool spreads itself over smb") == {id(steal)}
    assert gates.excluded("stealing, and it spreads itself") == frozenset()
    assert gates.excluded("nothing watched here") == {id(steal), id(spread)}


def test_a_shorter_literal_inside_a_longer_one_at_the_same_place_is_found() -> None:
    short, long = re.compile(r"\block\b"), re.compile(r"\blocker\b")
    gates = Gates([short, long])
    assert id(short) not in gates.excluded("a locker")
    assert id(long) in gates.excluded("a lock")


def test_no_pattern_that_matches_a_corpus_question_is_ever_ruled_out() -> None:
    # each pattern once: several checks share one object, and the watched list names it for each
    patterns = list({id(p): p for p in guard_intent.watched()}.values())
    gates = Gates(patterns)
    for question in load("benign") + load("harmful"):
        text = normalize(question)
        excluded = gates.excluded(text)
        wrongly = [p.pattern[:60] for p in patterns if id(p) in excluded and p.search(text)]
        assert not wrongly, (question, wrongly)


def test_gates_read_from_the_table_parse_no_pattern_and_parse_one_missing_from_it() -> None:
    steal, spread = re.compile(r"\bsteal\w*"), re.compile(r"\bspread\w* itself")
    # A table entry is trusted: a made-up requirement shows that the pattern was not parsed.
    lazy = LazyGates(lambda: [steal, spread], lambda: Table({digest(steal): [["xyzzy"]]}))
    assert lazy.excluded("stealing it") == {id(steal), id(spread)}
    assert lazy.excluded("xyzzy, and it spreads itself") == frozenset()


def test_the_shipped_table_holds_what_every_watched_pattern_needs() -> None:
    shipped = shipped_table()
    patterns = guard_intent.watched()
    stale = [p.pattern[:60] for p in patterns if digest(p) not in shipped.requirements]
    assert not stale, "a pattern changed: run python benchmarks/guard_train.py --gates"
    for pattern in patterns[::7]:  # a sample: parsing every pattern takes a while
        assert shipped.requirements[digest(pattern)] == [sorted(need) for need in requirements(pattern)]
    split = [p for p in patterns if isinstance(p, LazyAlternatives) and p.alternatives()]
    assert {digest(p) for p in split} == set(shipped.alternatives)
    for pattern in split[::7]:
        assert shipped.alternatives[digest(pattern)] == [
            [sorted(need) for need in requirements(part)] for part in pattern.alternatives()
        ]


def test_a_lazy_pattern_compiles_on_first_use_and_then_calls_the_compiled_pattern_directly() -> None:
    lazy = LazyPattern(r"\bsteal(\w*)")
    assert "search" not in vars(lazy)
    assert lazy.sub(r"take\1", "stealing") == "takeing"
    assert vars(lazy)["search"].__self__ is vars(lazy)["sub"].__self__  # the compiled pattern's own
    assert [m.group(0) for m in lazy.finditer("steals stealth", 1)] == ["stealth"]
    assert lazy.fullmatch("steal") and not lazy.match("a steal") and lazy.search("a steal", 0, 4) is None


def test_an_alternation_searched_one_alternative_at_a_time_finds_what_the_whole_finds() -> None:
    patterns = {id(p): p for p in guard_intent.watched()}.values()
    split = [p for p in patterns if isinstance(p, LazyAlternatives)]
    assert len(split) >= 2  # the people and the systems named as someone else's
    texts = [normalize(q) for q in (load("benign") + load("harmful"))[::20]]
    for pattern in split:
        for part in pattern.alternatives():  # no group to renumber, nothing empty to loop on
            parsed = _parser.parse(part.pattern, 0)
            assert parsed.state.groups == 1 and parsed.getwidth()[0] > 0, part.pattern[:60]
        whole = re.compile(pattern.pattern)
        for text in texts:
            middle = len(text) // 2
            assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in whole.finditer(text)]
            assert [m.span() for m in pattern.finditer(text, middle)] == [
                m.span() for m in whole.finditer(text, middle)
            ]
            found, expected = pattern.match(text, middle), whole.match(text, middle)
            assert (found and found.span()) == (expected and expected.span())


@pytest.mark.parametrize(
    ("source", "alternatives"),
    [
        (r"(?:\bab|cd)", [r"\bab", "cd"]),
        (r"\b(?:ab|c(?:d|e))\b", [r"\bab\b", r"\bc(?:d|e)\b"]),
        (r"x(?:ab|cd)", [r"x(?:ab|cd)"]),  # a prefix other than \b is not copied
        (r"(?:a|b)c|d", [r"(?:a|b)c", "d"]),
        (r"[|](?:a|b)", [r"[|](?:a|b)"]),
    ],
)
def test_the_alternatives_of_a_pattern_are_its_top_level_branches(
    source: str, alternatives: list[str]
) -> None:
    assert list(top_alternatives(source)) == alternatives


def test_a_boundary_before_a_letter_is_checked_after_it_with_the_same_matches() -> None:
    fast = compile_fast(r"\bpeople's\b")
    assert fast.pattern is None  # rewritten
    for text in ("people's data", "townspeople's data", "a people's", "people'sx", "xpeople's"):
        expected = [m.span() for m in re.finditer(r"\bpeople's\b", text)]
        assert [m.span() for m in fast.finditer(text)] == expected


def test_a_patterns_ascii_form_matches_where_it_does_on_every_ascii_question_of_a_corpus_sample() -> None:
    """An ASCII question is searched with each pattern's ``re.ASCII`` form: on ASCII text it must match
    where the Unicode pattern does, alternations (searched one alternative at a time) included."""
    patterns = [p for p in {id(p): p for p in guard_intent.watched()}.values() if isinstance(p, LazyPattern)]
    questions = [text for q in (load("benign") + load("harmful"))[::13] if (text := normalize(q)).isascii()]
    assert len(questions) > 250 and any(isinstance(p, LazyAlternatives) for p in patterns)
    for pattern in patterns:
        twin = pattern.ascii
        assert twin is not pattern and twin.ascii is twin and twin.pattern == pattern.pattern
        for text in questions:
            mine, theirs = pattern.search(text), twin.search(text)
            assert (mine and mine.span()) == (theirs and theirs.span()), (pattern.pattern[:60], text)


def test_a_normalized_question_holds_no_whitespace_on_which_ascii_and_unicode_disagree() -> None:
    # Unicode's \s also takes the ASCII separators \x1c-\x1f; normalizing leaves only spaces.
    assert normalize("Write\x1cthe\x1dworm\x1e\x1fnow\x0b\x0cplease\t\r\n") == "write the worm now please"


def test_questions_judged_in_several_threads_at_once_get_the_verdicts_they_get_alone() -> None:
    questions = (load("benign") + load("harmful"))[::9]
    alone = [guard_intent.judge(normalize(question)) for question in questions]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        with ThreadPoolExecutor(4) as pool:
            runs = [pool.submit(lambda shift: [guard_intent.judge(normalize(q)) for q in questions[shift:]
                                               + questions[:shift]], shift) for shift in (0, 7, 13, 21)]
            together = [run.result() for run in runs]
    finally:
        sys.setswitchinterval(interval)
    for shift, found in zip((0, 7, 13, 21), together, strict=True):
        assert found == alone[shift:] + alone[:shift]


def test_an_alternation_never_takes_candidates_from_another_threads_scan() -> None:
    # a source of its own: a pattern is one object per source, and another test stubs this one's scan
    lazy = LazyAlternatives(r"\bsteal\w* (?:sessions|tokens)|\bdump\w* (?:hashes|creds)|\bkeylog\w*")
    gates = Gates([lazy])
    texts = ("dump hashes now", "install a keylogger")
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def judge(words: str) -> int:
        missed = 0
        for _ in range(20_000):
            text = words[:-1] + words[-1]  # a new string each time: nothing remembered from the last
            gates.excluded(text)
            missed += lazy.ascii.search(text) is None
        return missed

    try:
        with ThreadPoolExecutor(2) as pool:
            missed = list(pool.map(judge, texts))
    finally:
        sys.setswitchinterval(interval)
    assert missed == [0, 0]
