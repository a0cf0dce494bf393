"""The guard's one-pass scan: it rules a pattern out only when the pattern cannot match."""

from __future__ import annotations

import re

import pytest

from ask_fable.core import guard_intent
from ask_fable.core.guard_reading import normalize
from ask_fable.core.guard_scan import Gates, LazyGates, required_literals
from tests.guard_corpus import load


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"\b(?:steal|steals)\s+\w+", {"steal"}),
        (r"\bmy (?:ex|wife)'s\b", {"my ex", "my wife"}),
        # parsed as "o" then "verdose|d": the words are joined again
        (r"(?:overdose|od) on\b", {"overdose", "od"}),
        # "my " is in nearly every question: the rarer requirement is the one that gates
        (r"\bmy (?:payloads?|implants?)\b", {"payload", "implant"}),
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
    found = required_literals(re.compile(pattern))
    assert (set(found) if found is not None else None) == literals


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
    patterns = guard_intent.watched()
    gates = Gates(patterns)
    for question in load("benign") + load("harmful"):
        text = normalize(question)
        excluded = gates.excluded(text)
        wrongly = [p.pattern[:60] for p in patterns if id(p) in excluded and p.search(text)]
        assert not wrongly, (question, wrongly)


def test_gates_are_worked_out_off_the_first_question_s_path_and_rule_nothing_out_until_ready() -> None:
    steal = re.compile(r"\bsteal\w*")
    lazy = LazyGates(lambda: [steal])
    assert lazy.excluded("nothing watched here") == frozenset()  # not ready: every pattern is searched
    assert id(steal) in lazy.ready().excluded("nothing watched here")
    assert lazy.excluded("nothing watched here") == {id(steal)}
