"""The request gate every question passes before any model is called.

Layer 1, the sanity floor: an empty, too short or too long question (and, when a cap is set,
too much context) is refused. Layer 2, the prohibited-use denylist: bundled offensive-security
and biology dual-use patterns plus ``ASK_FABLE_DENYLIST_FILE``; benign phrases from the bundled
allowlist and ``ASK_FABLE_ALLOWLIST_FILE`` are neutralized first, so ``request payload`` passes
while a bare ``payload`` elsewhere in the question still trips. Layer 3, the scope contract,
lives in the model's system prompt (see :mod:`ask_fable.core.prompts`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ask_fable.config import Settings

HOW_TO_REFRAME = (
    "Ask about the engineering problem itself (the code, the error, the design decision) rather than "
    "attack tooling or non-software domains. Call ask_fable_help(topic='refusals') for examples."
)

# Attack tooling is refused only when the question asks to make or spread it: "How should our EDR
# detect ransomware?" is defensive engineering, "write ransomware" is not.
MAKING = (
    r"(?:write|build|create|make|develop|code|craft|generate|deploy|spread|implement|design|program|author)"
)
TOOLING: tuple[str, ...] = (
    r"ransomware",
    r"keylogger",
    r"rootkit",
    r"botnet",
    r"shellcode",
    r"reverse shell",
    r"malware",
    r"infostealer",
    r"crypto-?jacker",
    r"credential (?:stealer|harvester)",
    r"phishing (?:kit|page|site)",
    r"c2 (?:server|framework|implant)",
    r"command and control server",
    r"ddos (?:tool|script|bot)",
)

# Each entry is a regex fragment matched on word boundaries, case-insensitively; plural and
# verb inflections are covered by the optional suffix added in _compile.
BUNDLED_DENYLIST: tuple[str, ...] = (
    rf"{MAKING}\b(?:\W+\w+){{0,5}}?\W+(?:{'|'.join(TOOLING)})",
    r"(?:write|build|develop|craft|code) (?:an? |a working |the )?exploit",
    r"(?:script|tool|code) to exploit",
    r"(?:malicious|exploit|reverse[- ]shell) payload",
    r"zero[- ]?day exploit",
    r"exploit (?:code|chain|kit) for",
    r"weaponi[sz]e",
    r"credential stuffing (?:tool|script|attack against)",
    r"(?:evade|bypass) (?:antivirus|edr|av detection)",
    r"antivirus evasion",
    r"bioweapon",
    r"biological weapon",
    r"pathogen enhancement",
    r"gain[- ]of[- ]function",
    r"toxin synthesis",
    r"nerve agent",
    r"weaponi[sz]ed (?:virus|pathogen|anthrax)",
    r"culture anthrax",
)

# Ordinary engineering phrases that contain an ambiguous denylisted word.
BUNDLED_ALLOWLIST: tuple[str, ...] = (
    "request payload",
    "response payload",
    "json payload",
    "payload size",
    "payload schema",
    "payload validation",
    "webhook payload",
    "message payload",
    "event payload",
    "api payload",
    "http payload",
    "jwt payload",
    "malware scanner",
    "malware detection",
    "malware analysis",
    "malware-analysis",
    "malware sandbox",
)


@dataclass(frozen=True)
class GuardDecision:
    """The gate's verdict; ``reason`` is set when refused."""

    allowed: bool
    reason: str = ""
    layer: str = ""


def _read_lines(path: Path | None) -> tuple[str, ...]:
    if path is None:
        return ()
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError:
        return ()
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


@lru_cache(maxsize=8)
def _compile(extra_terms: tuple[str, ...]) -> re.Pattern[str]:
    escaped = tuple(re.escape(term.lower()) for term in extra_terms)
    alternatives = "|".join(f"(?:{p})" for p in (*BUNDLED_DENYLIST, *escaped))
    return re.compile(rf"\b(?:{alternatives})(?:s|es|ed|ing|ers?)?\b", re.IGNORECASE)


@lru_cache(maxsize=8)
def _allow_pattern(extra_phrases: tuple[str, ...]) -> re.Pattern[str]:
    phrases = sorted({p.lower() for p in (*BUNDLED_ALLOWLIST, *extra_phrases)}, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(p) for p in phrases) + r")\b", re.IGNORECASE)


def denylist_hit(question: str, settings: Settings) -> str | None:
    """The prohibited term ``question`` contains after benign phrases are neutralized, if any."""
    allowed = _allow_pattern(_read_lines(settings.allowlist_file))
    neutral = allowed.sub(" ", question)
    match = _compile(_read_lines(settings.denylist_file)).search(neutral)
    return match.group(0) if match else None


def check(question: str, context: str, settings: Settings) -> GuardDecision:
    """Run the sanity floor and the denylist over a question and its context."""
    stripped = question.strip()
    if not stripped:
        return GuardDecision(False, "The question is empty.", "sanity")
    if len(stripped) < settings.min_len:
        return GuardDecision(
            False, f"The question is too short ({len(stripped)} < {settings.min_len} characters).", "sanity"
        )
    if len(question) > settings.max_len:
        return GuardDecision(
            False,
            f"The question is too long ({len(question)} > {settings.max_len} characters); "
            "move material into `context` or `context_ref`.",
            "sanity",
        )
    if settings.max_context_len is not None and len(context) > settings.max_context_len:
        return GuardDecision(
            False,
            f"The context is too long ({len(context)} > {settings.max_context_len} characters).",
            "sanity",
        )
    term = denylist_hit(stripped, settings)
    if term:
        return GuardDecision(False, f"The question matches the prohibited-use list ({term!r}).", "denylist")
    return GuardDecision(True)
