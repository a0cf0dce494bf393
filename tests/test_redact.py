"""Redaction of configured secrets and known key shapes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_fable.config import load_settings
from ask_fable.redact import (
    MARKER,
    bounded,
    redact,
    redact_obj,
    redact_obj_dumped,
    redacted_json,
    redacted_json_all,
    secret_list,
)

SHAPES = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrSt1234567890",
    "openai_legacy": "sk-AbCdEfGhIjKlMnOpQrStUvWx12345678",
    "openrouter": "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef",
    "google": "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
    "github_classic": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github_oauth": "gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github_server": "ghs_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "aws_access": "AKIAIOSFODNN7EXAMPLE",
    "aws_session": "ASIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "ours": "afk_" + "Q" * 16 + "z9" * 8,
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_known_key_shapes_are_removed(name: str) -> None:
    secret = SHAPES[name]
    out = redact(f"before {secret} after")
    assert secret not in out
    assert out == f"before {MARKER} after"


def test_header_values_are_removed_keeping_the_header_name() -> None:
    text = (
        "Authorization: Bearer abc.def-ghi_jkl123456\n"
        "authorization=Basic dXNlcjpwYXNzd29yZA==\n"
        'headers={"x-api-key": "plainvalue123", "X-Api-Key": "Other-Value-9"}\n'
        "curl -H 'Bearer tok3n-value-xyz'"
    )
    out = redact(text)
    for value in ("abc.def-ghi_jkl123456", "dXNlcjpwYXNzd29yZA==", "plainvalue123", "Other-Value-9",
                  "tok3n-value-xyz"):
        assert value not in out
    assert "Authorization: Bearer [REDACTED]" in out
    assert '"x-api-key": "[REDACTED]"' in out


def test_aws_secret_access_key_value_is_removed() -> None:
    text = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion=us-east-1"
    out = redact(text)
    assert "wJalrXUtnFEMI" not in out
    assert "aws_secret_access_key = [REDACTED]" in out
    assert "region=us-east-1" in out


def test_private_key_blocks_are_removed_even_unterminated() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----"
    assert redact(f"x\n{block}\ny") == f"x\n{MARKER}\ny"
    assert "MIIE" not in redact("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg")


def test_exact_configured_values_are_removed() -> None:
    settings = load_settings(glm_api_key="zai.custom-Key-value-42", deepseek_api_key="ds-plain-777777")
    out = redact("keys zai.custom-Key-value-42 and ds-plain-777777 here", settings)
    assert out == f"keys {MARKER} and {MARKER} here"
    assert redact("x my-exact-secret y", ["my-exact-secret"]) == f"x {MARKER} y"


def test_redaction_follows_the_secrets_as_they_are_now_not_as_they_were_first_seen() -> None:
    """Secret lists are prepared once per distinct set of values: a changed setting, or a list
    changed in place between calls, redacts its new values (and no longer its old ones)."""
    first = load_settings(glm_api_key="zai-first-value-1111")
    rotated = load_settings(glm_api_key="zai-next-22222")
    text = "zai-first-value-1111 then zai-next-22222"
    assert redact(text, first) == f"{MARKER} then zai-next-22222"
    assert redact(text, rotated) == f"zai-first-value-1111 then {MARKER}"
    assert redact_obj({"a": [text]}, rotated) == {"a": [f"zai-first-value-1111 then {MARKER}"]}
    secrets = ["zai-first-value-1111"]
    assert redact_obj({"a": text}, secrets) == {"a": f"{MARKER} then zai-next-22222"}
    secrets.append("zai-next-22222")
    assert redact_obj({"a": text}, secrets) == {"a": f"{MARKER} then {MARKER}"}
    assert secret_list(secrets) == ["zai-first-value-1111", "zai-next-22222"]
    secret_list(secrets).clear()  # a caller's copy: the next one is whole
    assert secret_list(secrets) == ["zai-first-value-1111", "zai-next-22222"]


def test_ordinary_text_is_untouched() -> None:
    text = ("Use scikit-learn and sk-learn; ask-fable maps tasks. Bearer of bad news, bearer authentication. "
            "The JWT spec says eyJ... prefix. AKIA is a prefix. Authorization header docs. "
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
    assert redact(text) == text


def test_redact_obj_walks_nested_structures_without_touching_other_types() -> None:
    secret = SHAPES["anthropic"]
    obj = {"a": [secret, {"b": f"x {secret}"}], "n": 3, "t": (secret,), "none": None, "ok": True}
    out = redact_obj(obj)
    assert out == {"a": [MARKER, {"b": f"x {MARKER}"}], "n": 3, "t": (MARKER,), "none": None, "ok": True}
    assert obj["a"][0] == secret  # input unchanged


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60),
    after=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60),
    name=st.sampled_from(sorted(SHAPES)),
)
def test_a_key_between_arbitrary_separated_text_never_survives(before: str, after: str, name: str) -> None:
    secret = SHAPES[name]
    out = redact(f"{before} {secret} {after}")
    assert secret not in out


_PIECES = st.one_of(
    st.text(max_size=20),
    st.sampled_from([*SHAPES.values(), 'pa"ss\\wo\nrd-9', "plain-secret-1234",
                     "Authorization: Bearer abc12345678", "postgresql://u:pw@h/db", "\u212aey"]),
)
_STRINGS = st.lists(_PIECES, max_size=4).map(" ".join)
_SHAPED = st.recursive(
    st.one_of(_STRINGS, st.integers(), st.none(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_STRINGS, inner, max_size=4)),
    max_leaves=12,
)


def _each_string_redacted(obj: object, secrets: list[str]) -> object:
    if isinstance(obj, str):
        return redact(obj, secrets)
    if isinstance(obj, dict):
        return {_each_string_redacted(k, secrets): _each_string_redacted(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_each_string_redacted(v, secrets) for v in obj]
    return obj


@settings(max_examples=300, deadline=None)
@given(obj=_SHAPED)
def test_redact_obj_redacts_every_string_inside_as_redact_does_it(obj: object) -> None:
    """However deep, and whatever the strings hold (secrets JSON would escape, non-ASCII text, key
    shapes), ``redact_obj`` gives what redacting each string on its own gives."""
    secrets = ['pa"ss\\wo\nrd-9', "plain-secret-1234"]
    assert redact_obj(obj, secrets) == _each_string_redacted(obj, secrets)


@settings(max_examples=300, deadline=None)
@given(obj=_SHAPED)
def test_redact_obj_dumped_gives_the_dump_only_when_it_is_the_redacted_objects_json(obj: object) -> None:
    """A served result's text reuses the dump that found nothing to redact: given, it is exactly the
    JSON of the (unchanged) result; a result with anything to redact comes back redacted, dump-less."""
    for secrets in (['pa"ss\\wo\nrd-9', "plain-secret-1234"], ["plain-secret-1234"]):
        shown, dumped = redact_obj_dumped(obj, secrets)
        assert shown == _each_string_redacted(obj, secrets)
        if dumped is not None:
            assert shown is obj
            assert dumped == json.dumps(obj, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(obj=_SHAPED, compact=st.booleans())
def test_redacted_json_is_the_dump_of_each_string_redacted(obj: object, compact: bool) -> None:
    """The JSON text a trace event or audit line is stored as is exactly the dump of the object with
    each string redacted on its own, whether it took the one-dump way or the string-by-string way."""
    secrets = ['pa"ss\\wo\nrd-9', "plain-secret-1234"]
    separators = (",", ":") if compact else None
    expected = json.dumps(_each_string_redacted(obj, secrets), ensure_ascii=False, separators=separators)
    assert redacted_json(obj, secrets, separators=separators) == expected
    assert redacted_json(obj, ["plain-secret-1234"], separators=separators) == json.dumps(
        _each_string_redacted(obj, ["plain-secret-1234"]), ensure_ascii=False, separators=separators)


@settings(max_examples=200, deadline=None)
@given(objs=st.lists(_SHAPED, max_size=6))
def test_redacted_json_of_several_objects_is_each_one_redacted_on_its_own(objs: list[object]) -> None:
    """A trace's events are checked together, in one search over all their dumps; each is still
    written exactly as it would be alone, a secret in one of them or split across two included."""
    secrets = ['pa"ss\\wo\nrd-9', "plain-secret-1234"]
    assert redacted_json_all(objs, secrets) == [redacted_json(obj, secrets) for obj in objs]
    assert redacted_json_all(objs, ["plain-secret-1234"]) == [
        json.dumps(_each_string_redacted(obj, ["plain-secret-1234"]), ensure_ascii=False) for obj in objs]
    split = ["… plain-secret", "-1234 …"]  # the secret only exists across the two dumps
    expected = [json.dumps(piece, ensure_ascii=False) for piece in split]
    assert redacted_json_all(split, ["plain-secret-1234"]) == expected


def test_redacted_json_redacts_what_json_writes_as_text() -> None:
    """A value JSON cannot write (a path, an exception) is written as its text, and that text is
    redacted like any string."""

    class Holder:
        def __str__(self) -> str:
            return "token plain-secret-1234 and sk-AbCdEfGhIjKlMnOpQrStUvWx12345678"

    text = redacted_json({"where": Holder(), "n": 3}, ["plain-secret-1234"])
    assert json.loads(text) == {"where": f"token {MARKER} and {MARKER}", "n": 3}


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=300))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text, ["exact-secret"])
    assert redact(once, ["exact-secret"]) == once


def test_bounded_keeps_both_ends_marks_the_cut_and_redacts_first() -> None:
    secret = "exact-secret-value-42"
    text = "GLM HTTP 400: rejected " + "padding " * 200 + f"key {secret} CAUSE: quota exhausted"
    out = bounded(text, 300, [secret])
    assert out.startswith("GLM HTTP 400: rejected") and out.endswith("CAUSE: quota exhausted")
    assert "characters cut" in out and len(out) <= 300
    assert secret not in out and "exact-secret" not in out
    assert bounded("short and whole", 300) == "short and whole"
