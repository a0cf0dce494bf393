"""The request gate every question passes before any model is called.

Layer 1, the sanity floor: an empty, too short or too long question (and, when a cap is set,
too much context) is refused. Layer 2, prohibited use: the phrases in ``ASK_FABLE_ALLOWLIST_FILE``
are set aside, a term from ``ASK_FABLE_DENYLIST_FILE`` refuses, and the intent judge
(:mod:`ask_fable.core.guard_intent`) refuses a question that asks for attack tooling, exploits,
evasion, intrusion, denial of service, covert surveillance, or biological, chemical or weapons
harm. A trained classifier (:mod:`ask_fable.core.guard_classifier`) reads what the judge lets
through and refuses what reads strongly as harmful, unless the question asks how to help, protect,
detect or recover, or what to do now; and it reads again a refusal for what is done to people,
accounts or money, setting it aside only when the whole question and every stretch of it read
as clearly benign (a victim's or a defender's question in the offender's words). Layer 3, the
scope contract, lives in the
model's system prompt (:mod:`ask_fable.core.prompts`). Every refusal names its rule
(:mod:`ask_fable.core.guard_rules`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ask_fable.config import Settings
from ask_fable.core.guard_classifier import load as load_classifier
from ask_fable.core.guard_reading import DEFENSIVE_ASK, HIDDEN_FROM_THEM, RELAYED_ASK, asks_only, normalize
from ask_fable.core.guard_rules import MODEL_REFRAME, RULES, SECOND_READ_RULES

if TYPE_CHECKING:
    from ask_fable.core.guard_intent import Finding

__all__ = [
    "MODEL_REFRAME", "SECOND_READ_RULES", "GuardDecision", "asks_to_defend", "check", "custom_term",
    "refusal",
]


@dataclass(frozen=True)
class GuardDecision:
    """The gate's verdict; a refusal carries its rule id, a reason and rule-specific advice."""

    allowed: bool
    reason: str = ""
    layer: str = ""
    rule: str = ""
    how_to_reframe: str = ""


def refusal(rule_id: str, detail: str, settings: Settings) -> GuardDecision:
    """The refusal under rule ``rule_id``, its reason naming ``detail`` when there is one."""
    rule = RULES[rule_id]
    reason = f"{rule.summary} ({detail})." if detail else f"{rule.summary}."
    advice = rule.how_to_reframe.format(min_len=settings.min_len, max_len=settings.max_len)
    return GuardDecision(False, reason, rule.layer, rule.id, advice)


@lru_cache(maxsize=16)
def _lines_of(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    """The non-comment lines of a list file, read once per version of the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ()
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def _read_lines(path: Path | None) -> tuple[str, ...]:
    if path is None:
        return ()
    resolved = os.path.expanduser(str(path))
    try:
        stat = os.stat(resolved)
    except OSError:
        return ()
    return _lines_of(resolved, stat.st_mtime_ns, stat.st_size)


def _alternation(entries: tuple[str, ...]) -> str | None:
    """The normalized entries as one regex alternation, longest first; None when there are none."""
    ordered = sorted({e for e in map(normalize, entries) if e}, key=len, reverse=True)
    return "|".join(map(re.escape, ordered)) or None


@lru_cache(maxsize=8)
def _term_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    alternatives = _alternation(terms)
    # Plural and verb inflections of a listed term count as the term.
    return re.compile(rf"(?<!\w)(?:{alternatives})(?:s|es|ed|ing|ers?)?(?!\w)") if alternatives else None


@lru_cache(maxsize=8)
def _allow_pattern(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    alternatives = _alternation(phrases)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)") if alternatives else None


def _set_aside_allowed(question: str, settings: Settings) -> str:
    """The normalized question with every ASK_FABLE_ALLOWLIST_FILE phrase blanked out."""
    text = normalize(question)
    allowed = _allow_pattern(_read_lines(settings.allowlist_file))
    return allowed.sub(" ", text) if allowed else text


def custom_term(question: str, settings: Settings) -> str | None:
    """The ASK_FABLE_DENYLIST_FILE term ``question`` contains once allowed phrases are set aside."""
    return _denied_term(_set_aside_allowed(question, settings), settings)


def _denied_term(text: str, settings: Settings) -> str | None:
    pattern = _term_pattern(_read_lines(settings.denylist_file))
    match = pattern.search(text) if pattern is not None else None
    return match.group(0) if match else None


@lru_cache(maxsize=1)
def intent_judge() -> Callable[[str], Finding | None]:
    """The intent judge (:func:`ask_fable.core.guard_intent.judge`), imported on first use.

    A command that judges no question (help, doctor, a listing) never imports it. Importing it and
    reading which literals its patterns need takes a few milliseconds; each pattern compiles the
    first time a question may match it, and the classifier's weights are read the first time the
    judge lets a question through, so a process pays only for what its questions need.
    """
    from ask_fable.core.guard_intent import GATES, judge

    GATES.ready()
    return judge


def asks_to_defend(text: str) -> bool:
    """True when the question asks how to help, protect or recover, or what to do now, and nothing
    else, relays no request of someone else's (what that request asks is still asked) and does not
    ask to keep the act from the person it is done to ("recover the texts from my wife's phone
    without her finding out")."""
    return (asks_only(text, DEFENSIVE_ASK) and RELAYED_ASK.search(text) is None
            and HIDDEN_FROM_THEM.search(text) is None)


def check(question: str, context: str, settings: Settings) -> GuardDecision:
    """Run the sanity floor, the operator's lists, the intent judge and the classifier over a question."""
    stripped = question.strip()
    if not stripped:
        return refusal("empty_question", "", settings)
    if len(stripped) < settings.min_len:
        return refusal("question_too_short", f"{len(stripped)} < {settings.min_len} characters", settings)
    if len(question) > settings.max_len:
        return refusal("question_too_long", f"{len(question)} > {settings.max_len} characters", settings)
    if settings.max_context_len is not None and len(context) > settings.max_context_len:
        detail = f"{len(context)} > {settings.max_context_len} characters"
        return refusal("context_too_long", detail, settings)
    text = _set_aside_allowed(stripped, settings)  # the one normalization of the question
    term = _denied_term(text, settings)
    if term:
        return refusal("custom_denylist", repr(term), settings)
    finding = intent_judge()(text)
    classifier = load_classifier()
    if finding is not None:
        if finding.rule in SECOND_READ_RULES and classifier.clears(text):
            return GuardDecision(True)
        return refusal(finding.rule, finding.label, settings)
    if classifier.refuses(text) and not asks_to_defend(text):
        return refusal(classifier.category(text), "", settings)
    return GuardDecision(True)
