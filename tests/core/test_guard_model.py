"""Reading a guard model's answer: Llama Guard's and ShieldGemma's own formats, and the fixed one a
prompted model is given."""

from __future__ import annotations

import pytest

from ask_fable.config import load_settings
from ask_fable.core.guard_model import RULES_PROMPT, Verdict, answer_format, parse


@pytest.mark.parametrize(
    ("model", "setting", "expected"),
    [
        ("llama-guard3:8b", "auto", "llama_guard"),
        ("meta-llama/Llama-Guard-4-12B", "auto", "llama_guard"),
        ("shieldgemma:2b", "auto", "shieldgemma"),
        ("gpt-oss:20b", "auto", "rules"),
        ("my-own-classifier", "llama_guard", "llama_guard"),
        ("llama-guard3:1b", "rules", "rules"),
    ],
)
def test_the_format_follows_the_model_s_name_unless_set(model: str, setting: str, expected: str) -> None:
    assert answer_format(load_settings(guard_model_format=setting), model) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("safe", Verdict(True)),
        ("\n\nsafe\n", Verdict(True)),
        ("unsafe\nS1", Verdict(False, "guard_model", "S1 violent crimes", ("S1",))),
        ("unsafe\nS9,S11", Verdict(False, "guard_model",
                                   "S9 indiscriminate weapons, S11 suicide and self-harm", ("S9", "S11"))),
        ("UNSAFE\n s14 ", Verdict(False, "guard_model", "S14 code interpreter abuse", ("S14",))),
        ("unsafe", Verdict(False, "guard_model", "no category given")),
    ],
)
def test_llama_guard_answers(text: str, expected: Verdict) -> None:
    assert parse(text, "llama_guard") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("safe", Verdict(True)),
        ("`safe`", Verdict(True)),
        ("<think>the user owns the system</think>\nsafe", Verdict(True)),
        ("unsafe denial_of_service", Verdict(False, "denial_of_service", "the guard model's verdict",
                                             ("denial_of_service",))),
        ("Unsafe: fraud.", Verdict(False, "fraud", "the guard model's verdict", ("fraud",))),
        ("unsafe gambling", Verdict(False, "guard_model", "gambling")),
    ],
)
def test_prompted_answers(text: str, expected: Verdict) -> None:
    assert parse(text, "rules") == expected


def test_shieldgemma_answers_yes_for_a_violation() -> None:
    assert parse("No", "shieldgemma") == Verdict(True)
    assert parse("Yes", "shieldgemma") == Verdict(False, "guard_model", "its safety policy")


@pytest.mark.parametrize("text", ["", "I cannot help with that.", "The question looks fine to me", "maybe"])
def test_an_answer_outside_the_format_is_no_verdict(text: str) -> None:
    assert parse(text, "rules") is None
    assert parse(text, "llama_guard") is None
    assert parse(text, "shieldgemma") is None


def test_the_prompt_lists_every_intent_rule_and_the_answer_format() -> None:
    for rule in ("attack_tooling", "exploit_development", "security_evasion", "unauthorized_access",
                 "denial_of_service", "covert_surveillance", "fraud", "biological_harm", "chemical_harm",
                 "weapons_harm", "harm_to_people", "piracy", "serious_crime", "self_harm",
                 "sexual_content_minors", "hate_or_extremism"):
        assert f"- {rule}: " in RULES_PROMPT
    assert "guard_model" not in RULES_PROMPT and "`unsafe <rule>`" in RULES_PROMPT
