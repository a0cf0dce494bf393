"""The fields an error carries are declared once, typed, and become its result as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from ask_fable.errors import BadArgs, QuotaExceeded, Unavailable, hinted
from tests.type_probe import type_check


def test_an_errors_result_is_its_kind_detail_and_the_fields_it_carries() -> None:
    refusal = QuotaExceeded("over the limit", hint="retry later", retry_after_s=12.5)
    assert refusal.to_result() == {"status": "error", "kind": "quota_exceeded", "detail": "over the limit",
                                   "hint": "retry later", "retry_after_s": 12.5}
    assert BadArgs("no such window", **hinted(None)).to_result() == {
        "status": "error", "kind": "bad_args", "detail": "no such window"}
    assert Unavailable("down").to_result()["hint"].startswith("the database is unreachable")


@pytest.mark.slow
def test_a_misspelled_or_mistyped_error_field_fails_the_type_check(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The strict type check the project runs refuses a field no error carries, or one of the wrong type."""
    out, status = type_check("from ask_fable.errors import BadArgs, QuotaExceeded\n\n"
                             "fine = BadArgs('bad window', hint='use 1h', allowed=['1h', '24h'])\n"
                             "typo = BadArgs('bad window', hnit='use 1h')\n"
                             "wrong = QuotaExceeded('over', retry_after_s='soon')\n", tmp_path, monkeypatch)
    assert status == 1
    assert 'probe.py:4: error: Unexpected keyword argument "hnit" for "BadArgs"' in out
    assert 'probe.py:5: error: Argument "retry_after_s" to "QuotaExceeded" has incompatible type "str"' in out
    assert "probe.py:3" not in out
