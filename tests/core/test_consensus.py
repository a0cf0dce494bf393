"""Server-side signals: council consensus, confidence, next action, and debate resolution rules."""

from __future__ import annotations

import pytest

from ask_fable.core.modes.consensus import (
    cap_confidence,
    council_confidence,
    council_consensus,
    council_next_action,
    debate_resolution,
    downgrade,
    majority_recommendation,
    material_split,
)
from ask_fable.core.modes.debate import Claim, low_effort


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([], ("unknown", False)),
        (["apply"], ("unknown", False)),
        (["apply", None, None], ("unknown", False)),
        (["reject", "apply"], ("divergent", True)),
        (["investigate", "investigate"], ("strong", False)),
        (["apply", "apply", "apply", "reject"], ("divergent", True)),
        (["apply", "apply", "investigate"], ("partial", False)),
        (["apply", "investigate"], ("divergent", False)),
        (["apply", "investigate", "needs_more_context", "apply"], ("divergent", False)),
    ],
)
def test_council_consensus_rules(votes: list[str | None], expected: tuple[str, bool]) -> None:
    assert council_consensus(votes) == expected


def test_material_split_needs_both_apply_and_reject() -> None:
    assert material_split(["apply", "investigate", "reject"])
    assert not material_split(["apply", "investigate", None])


def test_majority_recommendation_is_strict() -> None:
    assert majority_recommendation(["apply", "apply", "reject"]) == "apply"
    assert majority_recommendation(["apply", "reject"]) is None
    assert majority_recommendation([None]) is None


def test_confidence_helpers() -> None:
    assert cap_confidence("high", "medium") == "medium"
    assert cap_confidence(None, "high") == "medium"
    assert downgrade("high") == "medium" and downgrade("low") == "low" and downgrade(None) == "low"


@pytest.mark.parametrize(
    ("consensus", "answered", "asked", "synth", "expected"),
    [
        ("strong", 3, 3, "high", "high"),
        ("strong", 2, 3, "high", "medium"),
        ("partial", 3, 3, "high", "medium"),
        ("divergent", 3, 3, "high", "low"),
        ("unknown", 3, 3, "high", "medium"),
        ("unknown", 1, 3, "high", "low"),
        ("strong", 3, 3, "low", "low"),
    ],
)
def test_council_confidence(consensus: str, answered: int, asked: int, synth: str, expected: str) -> None:
    assert council_confidence(consensus, answered, asked, synth) == expected  # type: ignore[arg-type]


def test_next_action_distinguishes_one_opinion_and_material_splits() -> None:
    assert "one opinion" in council_next_action([None], 4)
    assert "ask_debate" in council_next_action(["apply", "reject", "apply"], 3)
    assert "1 of 3 members did not answer" in council_next_action(["apply", "apply"], 3)


def test_next_action_with_one_recommendation_says_there_is_no_consensus_to_compute() -> None:
    action = council_next_action(["investigate", None, None], 3)
    assert "Only one of the 3 answers carried a recommendation (investigate)" in action
    assert "no consensus to compute" in action and "no machine-readable" not in action
    assert "no machine-readable recommendations" in council_next_action([None, None], 2)


def test_next_action_names_what_to_act_on_with_and_without_a_synthesis() -> None:
    assert council_next_action(["apply", "apply"], 2) == "The panel agrees (apply): act on the synthesis."
    unsynthesized = council_next_action(["apply", "apply", "investigate"], 3, synthesized=False)
    assert "synthesis" not in unsynthesized and "not synthesized" in unsynthesized


@pytest.mark.parametrize(
    ("first", "statuses", "moved", "recs", "expected"),
    [
        (["concede", "concede"], ["conceded", "conceded"], False, ("apply", "apply"), "conceded"),
        (["concede", "contest"], ["conceded", "revised"], True, ("apply", "apply"), "converged"),
        (["contest"], ["withdrawn"], True, ("apply", None), "converged"),
        (["contest"], ["revised"], True, ("apply", "reject"), "adjudicated"),
        (["contest", "contest"], ["contested", "withdrawn"], True, ("apply", "reject"), "adjudicated"),
        (["contest"], ["contested"], False, ("apply", "reject"), "stalemate"),
        (["unaddressed"], ["unaddressed"], False, ("apply", "reject"), "adjudicated"),
    ],
)
def test_debate_resolution_rules(
    first: list[str], statuses: list[str], moved: bool, recs: tuple[str | None, str | None], expected: str
) -> None:
    got = debate_resolution(first, statuses, moved=moved, proposer_recommendation=recs[0],
                            opponent_recommendation=recs[1])
    assert got == expected


def test_low_effort_opposition_rules() -> None:
    long_reason = "because the benchmark shows it"
    assert low_effort([Claim("C1", "x", "concede", "")], True, "")
    assert not low_effort([Claim("C1", "x", "concede", long_reason)], True, "")
    assert low_effort([Claim("C1", "x", "contest", "it might fail")], True, "")
    assert not low_effort([Claim("C1", "x", "contest", "a" * 60)], True, "")
    assert low_effort([Claim("C1", "x")], False, "nope")
    assert not low_effort([Claim("C1", "x")], False, "long prose " * 40)
