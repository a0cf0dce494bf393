"""Repairing escaped lone surrogates in client lines, and nothing else."""

from __future__ import annotations

import json

import pytest

from ask_fable.surface.stdio_input import repair_line


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (rb'{"q": "cut \ud83d"}', rb'{"q": "cut \ufffd"}'),
        (rb'{"q": "\udc00 low first"}', rb'{"q": "\ufffd low first"}'),
        (rb'{"q": "\ud83d\ude00 whole emoji"}', rb'{"q": "\ud83d\ude00 whole emoji"}'),
        (rb'{"q": "literal \\ud83d text"}', rb'{"q": "literal \\ud83d text"}'),
        (rb'{"q": "\u0041 and \n"}', rb'{"q": "\u0041 and \n"}'),
        ('{"q": "caf\u00e9 😀"}'.encode(), '{"q": "caf\u00e9 😀"}'.encode()),
    ],
)
def test_only_lone_surrogate_escapes_change(raw: bytes, expected: bytes) -> None:
    repaired = repair_line(raw)
    assert repaired == expected
    json.loads(repaired).get("q", "").encode("utf-8")  # valid JSON and valid Unicode
