"""The sidecar parser and the scope-refusal detector."""

from __future__ import annotations

from ask_fable.core.sidecar import parse_sidecar, refusal_reason


def test_fenced_sidecar_is_parsed_and_removed_from_the_answer() -> None:
    text = (
        'Use a lock.\n\n```sidecar\n{"recommendation": "apply", "confidence": "high", '
        '"needs_context": []}\n```\n'
    )
    answer, sidecar = parse_sidecar(text)
    assert answer == "Use a lock."
    assert sidecar is not None
    assert (sidecar.recommendation, sidecar.confidence, sidecar.needs_context) == ("apply", "high", [])


def test_values_are_normalized_case_and_spacing() -> None:
    text = (
        '```sidecar\n{"recommendation": "Needs more context", "confidence": "LOW", '
        '"needs_context": "the log"}\n```'
    )
    _, sidecar = parse_sidecar(text)
    assert sidecar is not None
    assert sidecar.recommendation == "needs_more_context"
    assert sidecar.confidence == "low"
    assert sidecar.needs_context == ["the log"]


def test_bare_trailing_json_object_is_accepted() -> None:
    text = (
        'Check {braces} in prose.\n{"recommendation": "investigate", "confidence": "medium", '
        '"needs_context": ["a {b}"]}'
    )
    answer, sidecar = parse_sidecar(text)
    assert answer == "Check {braces} in prose."
    assert sidecar is not None and sidecar.needs_context == ["a {b}"]


def test_missing_or_invalid_sidecar_yields_none_and_keeps_text() -> None:
    assert parse_sidecar("Just prose.") == ("Just prose.", None)
    bad = '```sidecar\n{"recommendation": "maybe"}\n```'
    answer, sidecar = parse_sidecar(bad)
    assert sidecar is None
    assert "maybe" in answer


def test_json_without_recommendation_is_not_a_sidecar() -> None:
    text = 'Return this payload:\n{"id": 3, "name": "x"}'
    assert parse_sidecar(text) == (text, None)


def test_refusal_reason_is_read_from_the_first_line() -> None:
    assert refusal_reason("REFUSED: asks for exploit development\nextra") == "asks for exploit development"
    assert refusal_reason("**REFUSED**: biology") == "biology"
    assert refusal_reason("The word REFUSED: appears later") is None


def test_a_closing_json_fence_is_accepted_but_a_json_example_mid_answer_is_kept() -> None:
    example = '```json\n{"recommendation": "apply"}\n```'
    text = f"The API returns:\n{example}\nThen decide.\n\n```json\n" + (
        '{"recommendation": "investigate", "confidence": "low", "needs_context": []}\n```'
    )
    answer, sidecar = parse_sidecar(text)
    assert sidecar is not None and sidecar.recommendation == "investigate"
    assert example in answer and answer.endswith("Then decide.")
