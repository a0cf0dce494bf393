"""The guard's intent judge: what a question asks the model to produce, and against whom.

A word alone never refuses. Each check looks at the role a watched word plays: the nearest
governing word before it (``write ransomware`` vs ``detect ransomware``), the word after it
(``keylogger detection``), who it is aimed at (``my ex's account`` vs ``our staging API``) and
whether the question describes attack behaviour without naming it (``encrypts their files and
asks for bitcoin``). It is local and deterministic: regular expressions and set lookups, no model,
no network. The vocabulary lives in :mod:`ask_fable.core.guard_lexicon`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from ask_fable.core import guard_lexicon as lx


@dataclass(frozen=True)
class Finding:
    """Why a question was judged harmful: the rule id and a short label for what it asked for."""

    rule: str
    label: str


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _table(entries: dict[str, str]) -> tuple[re.Pattern[str], list[str]]:
    """One regex with a group per entry, and the entries' labels in group order."""
    groups = "|".join(f"(?P<g{i}>\\b(?:{pattern})\\b)" for i, pattern in enumerate(entries))
    return re.compile(groups), list(entries.values())


_DASH = re.compile(r"[\u2010-\u2015]")
_SPACES = re.compile(r"[-_/\s]+")
_CLAUSES = re.compile(r"[.;?!:]+(?:\s|$)|\n|\s;\s")
_TOKEN = re.compile(r"[a-z0-9&']+")

STRONG, STRONG_LABELS = _table(lx.STRONG_TOOLING)
WEAK, WEAK_LABELS = _table(lx.WEAK_TOOLING)
EXPLOIT_TERMS, EXPLOIT_LABELS = _table(lx.EXPLOIT_TERMS)
EXPLOIT_WORD = _c(r"\bexploits?\b")
EXPLOIT_VERB_OBJECT = _c(r"^\s*(?:\S+\s+){0,4}?" + lx.alt(lx.VULN) + r"\b")
WEAPONIZE = _c(r"\bweaponi[sz](?:e|es|ed|ing)\b")
MALICE = _c(r"\b" + lx.MALICE)
COVERT = _c(r"\b" + lx.COVERT)
EXFIL = _c(r"\b" + lx.EXFIL_TO_ME)
FOREIGN = _c(lx.FOREIGN)
OWN = _c(lx.OWN)
UNAUTHORIZED = _c(r"\b" + lx.UNAUTHORIZED)
ACCESS = _c(r"\b" + lx.ACCESS + r"\b")
DOS = _c(r"\b" + lx.DOS + r"\b")
DOS_OUTCOME = _c(r"\b" + lx.DOS_OUTCOME)
EVADE_STRONG = _c(r"\b" + lx.EVADE_STRONG + r"\b")
EVADE_WEAK = _c(r"\b" + lx.EVADE_WEAK + r"\b")
CONTROL_STRONG = _c(r"\b" + lx.CONTROL_STRONG + r"\b")
CONTROL_WEAK = _c(r"\b" + lx.CONTROL_WEAK + r"\b")
LEAKED_LIST = _c(lx.LEAKED_LIST)
LIST_USE = _c(r"\b" + lx.LIST_USE + r"\b")
MASS_EXPLOIT = _c(lx.MASS_EXPLOIT)
CHAIN_BUGS = _c(lx.CHAIN_BUGS)
TURN_INTO_EXPLOIT = _c(lx.TURN_INTO_EXPLOIT)
MONITOR = _c(r"\b" + lx.MONITOR + r"\b")
REQUEST = _c(
    r"\b(?:" + "|".join(sorted(lx.MAKE)) + r")\b|\bhow (?:do|can|would|should|could|to)\b|\bways? to\b|"
    r"\bsteps? to\b|\binstructions\b|\bwalk me\b|\btell me\b|\bteach me\b|\bi\b|\bwe\b"
)
BIO_AGENT = _c(r"\b" + lx.BIO_AGENT + r"\b")
BIO_RIGHT = _c(r"^\W*(?:\S+\s+){0,2}?" + lx.BIO_RIGHT)
CHEM_AGENT = _c(r"\b" + lx.CHEM_AGENT + r"\b")
CHEM_RIGHT = _c(r"^\W*(?:\S+\s+){0,3}?" + lx.CHEM_RIGHT)
WEAPON_AGENT = _c(r"\b(?:" + lx.WEAPON_AGENT + r")\b")
WEAPON_IDIOM = _c(r"\b" + lx.WEAPON_IDIOM + r"\b")
GAME = _c(r"\b" + lx.GAME + r"\b")
HARM_PEOPLE = _c(lx.HARM_PEOPLE)
MASS_HARM = _c(r"\b" + lx.MASS_HARM)

#: Attack behaviour described without naming the tool: (cue, extra condition on the text, label).
BEHAVIOURS: tuple[tuple[re.Pattern[str], Callable[[str], bool], str], ...] = (
    (_c(lx.RANSOM_ACT), lambda t: re.search(r"\b" + lx.RANSOM_DEMAND, t) is not None, "ransomware"),
    (_c(lx.KEYLOG), lambda t: _any(t, COVERT, EXFIL, FOREIGN), "a keylogger"),
    (_c(lx.STEAL), lambda t: True, "credential or data theft"),
    (_c(lx.TAKE_CREDENTIALS), lambda t: _any(t, COVERT, EXFIL, FOREIGN), "a credential stealer"),
    (_c(r"\b" + lx.REMOTE_CONTROL), lambda t: _any(t, COVERT, FOREIGN, UNAUTHORIZED), "a remote access tool"),
    (_c(r"\b" + lx.SELF_SPREAD), lambda t: True, "self-spreading malware"),
    (_c(lx.MINING), lambda t: _any(t, COVERT, FOREIGN), "a cryptojacker"),
    (_c(lx.PHISH_LOOK), lambda t: re.search(r"\b" + lx.PHISH_TAKE, t) is not None, "a phishing page"),
    (_c(lx.TRICK), lambda t: re.search(r"\b" + lx.CREDENTIAL, t) is not None, "a phishing campaign"),
    (_c(lx.DESTROY), lambda t: _any(t, COVERT, FOREIGN, MALICE), "a wiper"),
)


def _any(text: str, *patterns: re.Pattern[str]) -> bool:
    return any(p.search(text) for p in patterns)


def normalize(question: str) -> str:
    """Lower case, straight quotes, and hyphens, underscores and slashes read as spaces."""
    text = unicodedata.normalize("NFKC", question).lower()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = _DASH.sub(" ; ", text)
    return _SPACES.sub(" ", text).strip()


def clauses(text: str) -> list[str]:
    """The question cut at sentence punctuation, so cues are paired only within one clause."""
    return [part for part in _CLAUSES.split(text) if part.strip()]


def _tokens(text: str) -> list[str]:
    return [t.strip("'") for t in _TOKEN.findall(text)]


def role_before(clause: str, start: int, window: int = 8, stop: bool = True) -> str | None:
    """The role the nearest governing word before ``start`` gives the words there.

    ``make`` (the asker wants it produced), ``defend`` (detected, blocked, analysed, explained),
    ``actor`` (a first-person subject with no verb in between) or None.
    """
    tokens = _tokens(clause[:start])[-window:]
    for i in range(len(tokens) - 1, -1, -1):
        token = tokens[i]
        if token in ("engineer", "engineering") and i > 0 and tokens[i - 1] == "reverse":
            return "defend"
        if token == "to" and i > 0 and tokens[i - 1] == "how":
            return "actor"
        if token in lx.MAKE:
            return "make"
        if token in lx.DEFEND:
            return "defend"
        if token in lx.FIRST_PERSON:
            return "actor"
        if stop and token in lx.STOP:
            return None
    return None


def _neutral_head(clause: str, end: int) -> bool:
    """True when one of the two words after a term makes it the thing detected or studied."""
    return any(token in lx.NEUTRAL_HEADS for token in _tokens(clause[end : end + 40])[:2])


def _requested(clause: str, start: int) -> bool:
    """True when the words before ``start`` ask for the behaviour, rather than to detect or explain it."""
    role = role_before(clause, start, window=14)
    if role == "defend":
        return False
    if role in ("make", "actor"):
        return True
    if role_before(clause, start, window=14, stop=False) == "defend":
        return False
    return REQUEST.search(clause[:start]) is not None


def _label(match: re.Match[str], labels: list[str]) -> str:
    return labels[int((match.lastgroup or "g0")[1:])]


def _without(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + " " + text[match.end() :]


# --- checks, each returning a Finding or None --------------------------------------------------


def exploit_development(text: str, parts: list[str]) -> Finding | None:
    """A working exploit, exploit chain or zero-day, or exploiting someone else's system."""
    for pattern in (MASS_EXPLOIT, CHAIN_BUGS, TURN_INTO_EXPLOIT):
        if pattern.search(text):
            return Finding("exploit_development", "a working exploit")
    for clause in parts:
        for match in EXPLOIT_TERMS.finditer(clause):
            if not _neutral_head(clause, match.end()) and role_before(clause, match.start()) == "make":
                return Finding("exploit_development", _label(match, EXPLOIT_LABELS))
        for match in WEAPONIZE.finditer(clause):
            if role_before(clause, match.start()) != "defend":
                return Finding("exploit_development", "a weaponized exploit")
        for match in EXPLOIT_WORD.finditer(clause):
            before = _tokens(clause[: match.start()])[-1:]
            after = _tokens(clause[match.end() : match.end() + 20])[:1]
            noun = bool(before and before[0] in lx.EXPLOIT_NOUN_BEFORE) or bool(
                after and after[0] in lx.EXPLOIT_NOUN_AFTER
            )
            if noun:
                if not _neutral_head(clause, match.end()) and role_before(clause, match.start()) == "make":
                    return Finding("exploit_development", "a working exploit")
            elif EXPLOIT_VERB_OBJECT.search(clause[match.end() :]) and (
                FOREIGN.search(clause) or UNAUTHORIZED.search(text)
            ):
                return Finding("exploit_development", "an exploit against someone else's system")
    return None


def attack_tooling(text: str, parts: list[str]) -> Finding | None:
    """Malware or attack tooling the question asks to produce, named or described."""
    for clause in parts:
        for match in STRONG.finditer(clause):
            if not _neutral_head(clause, match.end()) and role_before(clause, match.start()) == "make":
                return Finding("attack_tooling", _label(match, STRONG_LABELS))
        for match in WEAK.finditer(clause):
            if (
                not _neutral_head(clause, match.end())
                and role_before(clause, match.start()) in ("make", "actor")
                and MALICE.search(_without(text, match))
            ):
                return Finding("attack_tooling", _label(match, WEAK_LABELS))
        for cue, condition, label in BEHAVIOURS:
            for match in cue.finditer(clause):
                if _requested(clause, match.start()) and condition(text):
                    return Finding("attack_tooling", label)
    return None


def security_evasion(text: str, parts: list[str]) -> Finding | None:
    """Evading, blinding or disabling security controls, or covering an intrusion's tracks."""
    malice = MALICE.search(text) is not None or UNAUTHORIZED.search(text) is not None
    for clause in parts:
        controls = [(m, True) for m in CONTROL_STRONG.finditer(clause)]
        controls += [(m, False) for m in CONTROL_WEAK.finditer(clause)]
        if not controls:
            continue
        evasions = [(m, True) for m in EVADE_STRONG.finditer(clause)]
        evasions += [(m, False) for m in EVADE_WEAK.finditer(clause)]
        for evade, evade_strong in evasions:
            if role_before(clause, evade.start()) == "defend":
                continue
            for control, control_strong in controls:
                near = abs(control.start() - evade.start()) <= 60
                if near and ((evade_strong and control_strong) or malice):
                    return Finding("security_evasion", "evading security tools")
    return None


def unauthorized_access(text: str, parts: list[str]) -> Finding | None:
    """Getting into accounts, devices or networks that belong to someone else."""
    unauthorized = UNAUTHORIZED.search(text) is not None
    for clause in parts:
        for match in ACCESS.finditer(clause):
            if role_before(clause, match.start()) == "defend":
                continue
            rest = clause[match.end() : match.end() + 60]
            if FOREIGN.search(rest) or re.match(r"\s*(?:\S+\s+){0,2}?accounts\b", rest) or unauthorized:
                return Finding("unauthorized_access", "access to someone else's account or system")
        for match in LEAKED_LIST.finditer(clause):
            if LIST_USE.search(clause) and _requested(clause, match.start()):
                return Finding("unauthorized_access", "logging in with leaked credentials")
    return None


def denial_of_service(text: str, parts: list[str]) -> Finding | None:
    """Knocking someone else's service offline."""
    for clause in parts:
        for match in DOS.finditer(clause):
            if role_before(clause, match.start()) == "defend":
                continue
            if FOREIGN.search(clause) or (DOS_OUTCOME.search(clause) and not OWN.search(clause)):
                return Finding("denial_of_service", "taking someone else's service offline")
    return None


def covert_surveillance(text: str, parts: list[str]) -> Finding | None:
    """Monitoring a person without their knowledge."""
    if not (COVERT.search(text) or EXFIL.search(text)):
        return None
    for clause in parts:
        if not FOREIGN.search(clause):
            continue
        for match in MONITOR.finditer(clause):
            if _requested(clause, match.start()):
                return Finding("covert_surveillance", "monitoring a person without their knowledge")
    return None


def _agent_harm(
    text: str,
    parts: list[str],
    agent: re.Pattern[str],
    acts: frozenset[str],
    right: re.Pattern[str],
) -> bool:
    """True when a harmful agent is the object of a producing, enhancing or spreading verb."""
    for clause in parts:
        for match in agent.finditer(clause):
            if _neutral_head(clause, match.end()):
                continue
            tokens = _tokens(clause[: match.start()])[-8:]
            for token in reversed(tokens):
                if token in acts:
                    return True
                if token in lx.DEFEND:
                    break
            if right.search(clause[match.end() :]) and REQUEST.search(clause):
                return True
            if HARM_PEOPLE.search(text) or MASS_HARM.search(text):
                return True
    return False


def biological_harm(text: str, parts: list[str]) -> Finding | None:
    """Producing, enhancing or spreading a pathogen or biological toxin."""
    if _agent_harm(text, parts, BIO_AGENT, lx.BIO_ACT, BIO_RIGHT):
        return Finding("biological_harm", "producing or spreading a pathogen or toxin")
    return None


def chemical_harm(text: str, parts: list[str]) -> Finding | None:
    """Making or using a chemical agent or poison."""
    if _agent_harm(text, parts, CHEM_AGENT, lx.CHEM_ACT, CHEM_RIGHT):
        return Finding("chemical_harm", "making or using a chemical agent or poison")
    return None


def weapons_harm(text: str, parts: list[str]) -> Finding | None:
    """Making explosives or weapons, outside a game or simulation."""
    if GAME.search(text):
        return None
    for clause in parts:
        clause = WEAPON_IDIOM.sub(" ", clause)
        for match in WEAPON_AGENT.finditer(clause):
            if _neutral_head(clause, match.end()):
                continue
            tokens = _tokens(clause[: match.start()])[-8:]
            for token in reversed(tokens):
                if token in lx.WEAPON_ACT or token in lx.MAKE:
                    return Finding("weapons_harm", "making explosives or weapons")
                if token in lx.DEFEND:
                    break
            if HARM_PEOPLE.search(text) or MASS_HARM.search(text):
                return Finding("weapons_harm", "making explosives or weapons")
    return None


def harm_to_people(text: str, parts: list[str]) -> Finding | None:
    """Hurting people directly."""
    for clause in parts:
        for match in HARM_PEOPLE.finditer(clause):
            if role_before(clause, match.start()) != "defend":
                return Finding("harm_to_people", "hurting people")
    return None


CHECKS: tuple[Callable[[str, list[str]], Finding | None], ...] = (
    exploit_development,
    attack_tooling,
    security_evasion,
    unauthorized_access,
    denial_of_service,
    covert_surveillance,
    biological_harm,
    chemical_harm,
    weapons_harm,
    harm_to_people,
)


def judge(question: str) -> Finding | None:
    """The first harmful intent found in ``question``, or None when it reads as engineering."""
    text = normalize(question)
    parts = clauses(text)
    for check in CHECKS:
        finding = check(text, parts)
        if finding is not None:
            return finding
    return None
