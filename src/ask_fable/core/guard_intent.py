"""The guard's intent judge: what a question asks the model to produce, and against whom.

A word alone never refuses. Each check looks at the role a watched word plays: the nearest
governing word before it (``write ransomware`` vs ``detect ransomware``), the word after it
(``keylogger detection``), who it is aimed at (``my ex's account`` vs ``our staging API``) and
whether the question describes attack behaviour without naming it (``encrypts their files and
asks for bitcoin``). It is local and deterministic: regular expressions and set lookups, no model,
no network, and time linear in the question's length. The vocabulary lives in
:mod:`ask_fable.core.guard_lexicon`; how a question is read, in :mod:`ask_fable.core.guard_reading`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ask_fable.core import guard_lexicon as lx
from ask_fable.core import guard_lexicon_crime as cx
from ask_fable.core.guard_conduct import conduct
from ask_fable.core.guard_conduct import watched as conduct_watched
from ask_fable.core.guard_crime import offence, own_life
from ask_fable.core.guard_crime import watched as crime_watched
from ask_fable.core.guard_reading import (
    CODE_REQUEST,
    RELAYED_ASK,
    REQUEST,
    Clause,
    Matches,
    Question,
    asks_only,
    neutral_head,
    observed,
    requested,
    role_before,
    tokens,
    words_before,
)
from ask_fable.core.guard_rules import SECOND_READ_RULES
from ask_fable.core.guard_scan import AnyPattern, LazyAlternatives, LazyGates, LazyPattern, Pattern


@dataclass(frozen=True)
class Finding:
    """Why a question was judged harmful: the rule id and, where it adds to the rule, what was asked for."""

    rule: str
    label: str = ""


@dataclass(frozen=True)
class Terms:
    """A table of term patterns: one regex to find any of them, and each one's label."""

    any: Pattern
    each: tuple[tuple[Pattern, str], ...]

    def label(self, match: re.Match[str]) -> str:
        """The label of the term ``match`` found."""
        return next(label for pattern, label in self.each if pattern.fullmatch(match.group(0)))


def _terms(entries: dict[str, str]) -> Terms:
    # One alternation under a single \b is several times faster than a group per entry, and searching
    # only the entries whose literals the question holds is faster still.
    found = LazyAlternatives(r"\b(?:" + "|".join(entries) + r")\b")
    return Terms(found, tuple((LazyPattern(pattern), label) for pattern, label in entries.items()))


def _c(pattern: str) -> LazyPattern:
    return LazyPattern(pattern)


def _word(fragment: str) -> LazyPattern:
    return LazyPattern(r"\b" + fragment + r"\b")


def _words(fragment: str) -> LazyAlternatives:
    # A list searched on nearly every question: only the entries whose literals occur are searched.
    return LazyAlternatives(r"\b" + fragment + r"\b")


STRONG = _terms(lx.STRONG_TOOLING)
WEAK = _terms(lx.WEAK_TOOLING)
EXPLOIT_TERMS = _terms(lx.EXPLOIT_TERMS)
EXPLOIT_WORD = _c(r"\bexploits?\b")
EXPLOIT_VERB_OBJECT = _c(r"\s*(?:\S+\s+){0,4}?" + lx.alt(lx.VULN) + r"\b")
#: "exploiting it": the system named in the question before, whoever's it is.
EXPLOIT_IT = _c(r"\s+(?:it|them)\b(?! (?:for|to make|to speed|to improve|to reduce))")
OWNED_TOOLING = _c(lx.OWNED_TOOLING)
WEAPONIZE = _c(r"\bweaponi[sz](?:e|es|ed|ing)\b")
MALICE = _c(r"\b" + lx.MALICE)
COVERT = _c(r"\b" + lx.COVERT)
EXFIL = _c(r"\b" + lx.EXFIL_TO_ME)
FOREIGN = LazyAlternatives(lx.FOREIGN)
PEOPLE = LazyAlternatives(lx.PEOPLE)
OWN = _c(lx.OWN)
UNAUTHORIZED = _c(r"\b" + lx.UNAUTHORIZED)
#: The asker says what they would get into is not theirs.
NOT_MINE = _c(
    r"\b(?:(?:isn'?t|aren'?t|is not|are not|not) mine|(?:i|we) (?:don'?t|do not) own|doesn'?t belong to me)\b"
)
ACCESS = _word(lx.ACCESS)
#: "…a way into it", "how to get in and…": no object of its own, so the system named before in the question.
INTO_IT = _c(r"\s*(?:(?:it|them|there|and|so|then)\b|$)")
AUTHORIZED = _c(cx.AUTHORIZED)
SELF_RUN = _c(cx.SELF_RUN)
ACCOUNTS = _c(r"\s*(?:\S+\s+){0,2}?accounts\b")
DOS = _words(lx.DOS)
POSSESSED = _c(r"\b(?:his|her|their|[a-z]+'s)\b")
DOS_OUTCOME = _c(r"\b" + lx.DOS_OUTCOME)
#: ``ddos`` used as a verb with an object: "DDoSes a server", "ddos their site".
DOS_OBJECT = _c(r"\s+(?:a|an|the|their|his|her|any|this|that|someone|people|\S+'s)\b")
EVADE_STRONG = _words(lx.EVADE_STRONG)
EVADE_WEAK = _word(lx.EVADE_WEAK)
STEALTH = _word(lx.STEALTH)
LEGIT_SOFTWARE = _word(lx.LEGIT_SOFTWARE)
CONTROL_STRONG = _words(lx.CONTROL_STRONG)
CONTROL_WEAK = _words(lx.CONTROL_WEAK)
LEAKED_LIST = _c(lx.LEAKED_LIST)
LIST_USE = _word(lx.LIST_USE)
TRY_EACH = _c(r"\btr(?:y|ies|ying) (?:each one|each of them|them all|all of them|every one)\b")
STILL_WORK = _c(lx.STILL_WORK)
MASS_EXPLOIT = _c(lx.MASS_EXPLOIT)
CHAIN_BUGS = _c(lx.CHAIN_BUGS)
TURN_INTO_EXPLOIT = _c(lx.TURN_INTO_EXPLOIT)
MONITOR = _words(lx.MONITOR)
BIO_AGENT = _words(lx.BIO_AGENT)
#: With a computer in the question, "virus" means malware and is judged as attack tooling.
BIO_AGENT_NOT_COMPUTER = _c(r"\b(?!virus)" + lx.BIO_AGENT + r"\b")
COMPUTER = _word(lx.COMPUTER)
BIO_RIGHT = _c(r"\W*(?:\S+\s+){0,3}?" + lx.BIO_RIGHT)
CHEM_AGENT = _words(lx.CHEM_AGENT)
#: The asker says what software they are building: agents named in a question about it are its data.
BUILDING = _c(
    r"\b(?:we'?re|i'?m|we are|i am) (?:writing|building|developing|designing|making) "
    r"(?:a |an |the |our |my )?(?:\S+ ){0,3}?(?:app|software|system|checker|checklist|tool|database|service|"
    r"sheet|guide|manual|policy|training|handbook|"
    r"dashboard|platform|module|"
    r"feature|simulator|model)s?\b"
)
#: An agent taken where it is kept, unseen.
UNNOTICED_TAKE = _c(
    r"\bwithout (?:being|getting) (?:noticed|caught|seen|detected)|\bwithout (?:anyone|them|security|staff) "
    r"(?:noticing|knowing|seeing)"
)
#: "how is it generated": a question about how an agent comes to be, asked of the agent itself.
HOW_MADE = _c(r"\bhow (?:is|are|was|were|does|do)\b")
CHEM_RIGHT = _c(r"\W*(?:\S+\s+){0,3}?" + lx.CHEM_RIGHT)
WEAPON_AGENT = _c(r"\b(?:" + lx.WEAPON_AGENT + r")\b")
WEAPON_IDIOM = _word(lx.WEAPON_IDIOM)
#: A game's weapon asked for as a real one: "for my game, how do i build a real pipe bomb?"
REAL_WEAPON = _c(
    r"\b(?:real|actual) (?:\w+ ){0,2}?(?:" + lx.WEAPON_AGENT + r")\b|"
    r"\breal ones?\b|\bin real life\b|\birl\b|\bfor real\b"
)
MAKE_IT = _c(lx.MAKE_IT)
GAME = _word(lx.GAME)
SIMULATION = _word(lx.SIMULATION)
PRACTICE = _word(lx.PRACTICE_TARGET)
CVE = _c(r"\bcve \d")
HARM_PEOPLE = _c(lx.HARM_PEOPLE + "|" + lx.FOOD_TAMPERING)
HARASS = _c(lx.HARASS)
LETHAL_DOSE = _c(lx.LETHAL_DOSE)
AROUND_BLOCK = _c(r"\b" + lx.AROUND_BLOCK)
MASS_HARM = _c(r"\b" + lx.MASS_HARM)
DELIVER = _word(lx.DELIVER)
PERSONAL = _word(lx.PERSONAL_DATA)
RANSOM_DEMAND = _c(r"\b" + lx.RANSOM_DEMAND)
PHISH_TAKE = _c(r"\b" + lx.PHISH_TAKE)
CREDENTIAL = _c(r"\b" + lx.CREDENTIAL)
DISGUISE = LazyAlternatives(r"\b" + lx.DISGUISE)


@dataclass(frozen=True)
class Behaviour:
    """Attack behaviour described without naming the tool: a cue, and what else the question must show.

    ``needs`` lists patterns of which at least one must occur in the question (none: the cue is
    enough); every pattern in ``also`` must occur too.
    """

    cue: Pattern
    label: str
    needs: tuple[Pattern, ...] = ()
    also: tuple[Pattern, ...] = ()

    def fits(self, question: Question) -> bool:
        """True when the question shows what this behaviour needs besides its cue."""
        return (not self.needs or question.has_any(*self.needs)) and all(question.has(p) for p in self.also)


BEHAVIOURS = (
    Behaviour(_c(lx.RANSOM_ACT), "ransomware", (RANSOM_DEMAND,)),
    Behaviour(_c(lx.RANSOM_ACT), "ransomware", (FOREIGN, COVERT, MALICE), (_c(r"\b" + lx.PAYMENT_UNLOCK),)),
    Behaviour(_c(lx.KEYLOG), "a keylogger or spyware", (COVERT, EXFIL, FOREIGN)),
    Behaviour(_c(lx.STEAL), "credential or data theft"),
    Behaviour(_c(lx.TAKE_CREDENTIALS), "a credential stealer", (COVERT, EXFIL, FOREIGN)),
    Behaviour(_c(lx.READ_CREDENTIALS), "a credential stealer", (), (EXFIL,)),
    Behaviour(_c(lx.BACKDOOR_ACCOUNT), "a backdoor account", (FOREIGN, COVERT, EXFIL, _c(lx.FOR_ME_ON))),
    Behaviour(
        LazyAlternatives(r"\b" + lx.REMOTE_CONTROL), "a remote access tool",
        (COVERT, FOREIGN, UNAUTHORIZED, PEOPLE, DISGUISE),
    ),
    Behaviour(_c(r"\b" + lx.SELF_SPREAD), "self-spreading malware"),
    Behaviour(_c(lx.MINING), "a cryptojacker", (COVERT, FOREIGN)),
    Behaviour(_c(lx.TAKE_LOOT), "a credential stealer", (COVERT, EXFIL, FOREIGN, _c(lx.OFF_HOST))),
    Behaviour(_c(lx.PHISH_LOOK), "a phishing page", (PHISH_TAKE,)),
    Behaviour(_c(lx.TRICK), "a phishing campaign", (CREDENTIAL,)),
    Behaviour(_c(lx.DESTROY), "a wiper", (COVERT, FOREIGN, MALICE, _c(lx.WIPER_SIGN))),
    Behaviour(_c(r"\b" + lx.EXFIL_TO_ME), "spyware", (COVERT, FOREIGN), (PERSONAL,)),
    Behaviour(_c(r"\b" + lx.EXFIL_TO_ME), "covert data theft", (), (COVERT, FOREIGN)),
)


def _malice_outside(question: Question, clause: Clause, term: re.Match[str]) -> bool:
    """True when a sign of malice occurs in the question apart from ``term`` itself."""
    spans = clause.first_spans(MALICE)
    if any(end <= term.start() or start >= term.end() for start, end in spans) or len(spans) > 1:
        return True
    return question.clauses_with(MALICE) > (1 if spans else 0)


def _undefended(question: Question, pattern: Pattern) -> Matches:
    """Each match of ``pattern`` that the words before it do not put in a detected or explained role."""
    for clause, match in question.distinct(pattern):
        start = match.start()
        text = clause.text
        if role_before(text, start) != "defend" and not _prevented(text, start) and not observed(text, start):
            yield clause, match


def _prevented(clause: str, start: int) -> bool:
    """True when the act at ``start`` is what nobody can do ("so nobody can brute force accounts")."""
    before = words_before(clause, start, 3)
    return "nobody" in before or "never" in before or " ".join(before[-3:]).startswith("no one")


# --- checks, each returning a Finding or None --------------------------------------------------


def exploit_development(question: Question) -> Finding | None:
    """A working exploit, exploit chain or zero-day, or exploiting someone else's system."""
    if question.has_any(MASS_EXPLOIT, CHAIN_BUGS, TURN_INTO_EXPLOIT):
        return Finding("exploit_development", "a working exploit")
    for _ in _undefended(question, WEAPONIZE):
        return Finding("exploit_development", "a weaponized exploit")
    for clause, match in question.distinct(EXPLOIT_TERMS.any):
        if not neutral_head(clause.text, match.end()) and role_before(clause.text, match.start()) == "make":
            return Finding("exploit_development", EXPLOIT_TERMS.label(match))
    for clause, match in question.distinct(EXPLOIT_WORD):
        text = clause.text
        if _exploit_is_noun(text, match):
            practice = clause.has(PRACTICE) and not question.has(CVE)
            made = not neutral_head(text, match.end()) and role_before(text, match.start()) == "make"
            if made and not practice:
                return Finding("exploit_development", "a working exploit")
        elif EXPLOIT_VERB_OBJECT.match(text, match.end()) and (
            clause.has(FOREIGN) or question.has(UNAUTHORIZED)
        ):
            return Finding("exploit_development")
        elif (
            EXPLOIT_IT.match(text, match.end()) and question.has(FOREIGN) and not question.has(OWN)
            and requested(text, match.start())
        ):
            return Finding("exploit_development")  # "a rival's VPN appliance … exploiting it"
    return None


def _exploit_is_noun(text: str, match: re.Match[str]) -> bool:
    """True for "an exploit", "exploit chain", "exploit for"; False for the verb ("exploit locality")."""
    before = words_before(text, match.start(), 1)
    after = text[match.end() : match.end() + 20].split()[:1]
    return any(w in lx.EXPLOIT_NOUN_BEFORE for w in before) or any(w in lx.EXPLOIT_NOUN_AFTER for w in after)


def _defends(clause: str, end: int) -> bool:
    """True when the term is followed by what it does and that is defensive ("a bot that warns")."""
    after = tokens(clause[end : end + 40])[:2]
    return len(after) == 2 and after[0] in ("that", "which", "to") and after[1] in lx.DEFEND


#: "immune to", "resistant against", "safe from": what follows is resisted, not made.
_RESISTANT = frozenset(
    ("immune", "resistant", "resilient", "invulnerable", "safe", "protected", "hardened", "proof")
)


def _resisted(clause: str, start: int) -> bool:
    """True when the term at ``start`` is what something is made to withstand ("make our backups immune
    to ransomware")."""
    before = words_before(clause, start, 2)
    return len(before) == 2 and before[0] in _RESISTANT and before[1] in ("to", "from", "against")


def attack_tooling(question: Question) -> Finding | None:
    """Malware or attack tooling the question asks to produce, named or described."""
    for clause, match in question.distinct(STRONG.any):
        if match.group(0).startswith(("virus", "computer virus")) and clause.has(SIMULATION):
            continue
        if neutral_head(clause.text, match.end()) or _resisted(clause.text, match.start()):
            continue
        role = role_before(clause.text, match.start())
        if role == "make" or (role is None and clause.bare_request()):
            return Finding("attack_tooling", STRONG.label(match))
    for clause, match in question.matches(WEAK.any):
        if (
            not neutral_head(clause.text, match.end())
            and not _defends(clause.text, match.end())
            and role_before(clause.text, match.start()) in ("make", "actor")
            and (_malice_outside(question, clause, match) or clause.has(FOREIGN))
        ):
            return Finding("attack_tooling", WEAK.label(match))
    for clause, match in question.distinct(OWNED_TOOLING):
        if not neutral_head(clause.text, match.end()) and requested(clause.text, match.start()):
            return Finding("attack_tooling", "an implant or payload")
    excluded = question.excluded
    for behaviour in BEHAVIOURS:
        if id(behaviour.cue) in excluded or not question.has(behaviour.cue) or not behaviour.fits(question):
            continue
        for clause, match in question.distinct(behaviour.cue):
            if requested(clause.text, match.start(), detail=question.detail):
                return Finding("attack_tooling", behaviour.label)
    return None


_NEGATION = LazyPattern(r"(?:never|not|no|doesn'?t|don'?t|can'?t|cannot|won'?t|isn'?t|stop)\b")


def _evasions(question: Question, pattern: Pattern) -> Matches:
    """Each evasion the words before it do not put in a detected role. A negated one ("monitoring
    never sees") is read from before its subject, which names the control, not a defending verb."""
    for clause, match in question.distinct(pattern):
        start = match.start()
        if _NEGATION.match(clause.text, start):
            before = clause.text.rfind(" ", 0, max(0, start - 1))
            start = before + 1 if before >= 0 else 0
        if role_before(clause.text, start) != "defend" and not observed(clause.text, match.start(), 6):
            yield clause, match  # "if students are using VPNs to bypass…" is seen, not asked for


def security_evasion(question: Question) -> Finding | None:
    """Evading, blinding or disabling security controls, or covering an intrusion's tracks."""
    if not question.has_any(CONTROL_STRONG, CONTROL_WEAK):
        evasions: tuple[tuple[Pattern, bool], ...] = ()  # nothing named that could be evaded
    else:
        evasions = ((EVADE_STRONG, True), (EVADE_WEAK, False))
    for pattern, strong in evasions:
        for clause, evade in _evasions(question, pattern):
            if not clause.has_any(CONTROL_STRONG, CONTROL_WEAK):
                continue
            begin, end = max(0, evade.start() - 60), evade.end() + 60
            strong_control = CONTROL_STRONG.search(clause.text, begin, end) is not None
            if not strong_control and CONTROL_WEAK.search(clause.text, begin, end) is None:
                continue
            # Security turned off on someone else's machine is an intrusion whatever the tool.
            malice = question.has_any(MALICE, UNAUTHORIZED, FOREIGN)
            if malice or (strong and strong_control and not question.has(LEGIT_SOFTWARE)):
                return Finding("security_evasion")
    for _ in _undefended(question, STEALTH):
        if question.has_any(MALICE, UNAUTHORIZED):
            return Finding("security_evasion")
    return None


def unauthorized_access(question: Question) -> Finding | None:
    """Getting into accounts, devices or networks that belong to someone else."""
    for clause, match in _undefended(question, ACCESS):
        if question.has(SELF_RUN) and not question.has_any(UNAUTHORIZED, NOT_MINE):
            break  # "reset a user's password on the server I administer"
        if OWN.search(match.group(0)):
            continue  # "get my own photos taken down": the thing got at is the asker's
        if _suffered(clause.text, match):
            continue  # "if a city's water utility got hacked": what was done to it, not what is asked
        aimed = clause.text[match.start() : match.end() + 60]  # "read another person's messages"
        rest = clause.text[match.end() : match.end() + 60]
        if FOREIGN.search(aimed) or PEOPLE.search(aimed) or ACCOUNTS.match(rest):
            return Finding("unauthorized_access")
        if question.has_any(UNAUTHORIZED, NOT_MINE):
            return Finding("unauthorized_access")
        # "find a hospital with exposed remote desktop and tell me how to get in", "my teacher's gmail:
        # what's the fastest way into it": the system named is someone else's and nothing makes it ours
        named = _names_a_system(clause) or (INTO_IT.match(rest) is not None and _names_a_system(question))
        if named and not question.has_any(OWN, AUTHORIZED):
            return Finding("unauthorized_access")
    for clause, match in question.matches(LEAKED_LIST):
        # leaked logins tried out, or sorted by which still work: credential stuffing either way
        # "…a list from a leaked database. Write a script that tries each one": the list, tried
        tried = clause.has(LIST_USE) or clause.has(STILL_WORK) or question.has(TRY_EACH)
        if tried and (requested(clause.text, match.start()) or clause.has_all(LIST_USE, STILL_WORK)):
            return Finding("unauthorized_access", "with leaked credentials")
    return None


#: Words before a participle that make it passive: the one named before it is who it was done to.
_PASSIVE = frozenset(("got", "get", "gets", "getting", "was", "were", "been", "being", "is", "are", "be"))


def _suffered(clause: str, match: re.Match[str]) -> bool:
    """True when the act is a passive participle ("got hacked", "was compromised")."""
    act = match.group(0)
    if not act.endswith("ed") or " " in act:
        return False
    before = words_before(clause, match.start(), 1)
    return bool(before) and before[0] in _PASSIVE


def _names_a_system(text: Question | Clause) -> bool:
    """True when ``text`` names a thing as someone else's, not just "someone" (who may be the one acting)."""
    if not text.has(FOREIGN):
        return False
    return any(not found.group(0).startswith(_ANYONE) for found in FOREIGN.finditer(text.text))


_ANYONE = ("someone", "somebody", "anyone", "whoever")


def denial_of_service(question: Question) -> Finding | None:
    """Knocking someone else's service offline."""
    for clause, match in _undefended(question, DOS):
        after = clause.text[match.end() : match.end() + 60]
        aimed = DOS_OUTCOME.search(after) is not None or (
            match.group(0).startswith(("ddos", "dos")) and DOS_OBJECT.match(after) is not None
        )
        if OWN.search(after, 0, 40) is not None:
            continue  # "let someone DoS our login endpoint": aimed at the asker's own system
        # "make his smart lock stop working": the object, inside the act, is another's
        aimed = aimed or (POSSESSED.search(match.group(0)) is not None and not OWN.search(match.group(0)))
        if clause.has(FOREIGN) or (aimed and not clause.has(OWN)):
            return Finding("denial_of_service")
    return None


def _aimed_at_others(clause: Clause) -> bool:
    """True when the clause names someone else other than as the one who did something ("a tracker
    someone might have hidden in my car" names the one who hid it, not the one followed)."""
    if not clause.has(FOREIGN):
        return False
    for match in FOREIGN.finditer(clause.text):
        after = clause.text[match.end() : match.end() + 20].split()[:1]
        unknown = match.group(0).startswith(("someone", "somebody", "anyone"))
        if not (unknown and after and after[0] in cx.OBSERVED_AUX):
            return True
    return False


def covert_surveillance(question: Question) -> Finding | None:
    """Monitoring a person without their knowledge."""
    if not question.has_any(COVERT, EXFIL):
        return None
    for clause, match in question.distinct(MONITOR):
        if _aimed_at_others(clause) and requested(clause.text, match.start()):
            return Finding("covert_surveillance")
    return None


def _agent_harm(
    question: Question, agent: Pattern, acts: frozenset[str], right: Pattern,
    *, named_apart: bool = False,
) -> bool:
    """True when a harmful agent is the object of a producing, enhancing or spreading verb; with
    ``named_apart``, also when the question names it and asks elsewhere how to make "it"."""
    for clause, match in question.distinct(agent):
        text = clause.text
        if clause.has(SIMULATION):
            continue
        # Before the neutral head: "more resistant" makes the agent stronger, not something resisted.
        if right.match(text, match.end()) and clause.has_any(REQUEST, HOW_MADE):
            return True
        if neutral_head(text, match.end()):
            continue
        if named_apart and question.has(MAKE_IT):
            return True
        if not (question.has(BUILDING) and not clause.has(REQUEST)):
            # not "what combinations release toxic gas? we're writing a storage safety checker"
            for word in reversed(words_before(text, match.start(), 8)):
                if word in acts:
                    return True
                if word in lx.DEFEND or word in cx.SOFTWARE_PRODUCT:
                    break
        if question.has_any(MASS_HARM, UNNOTICED_TAKE) or _harm_not_a_story(question):
            return True
    return False


def _harm_not_a_story(question: Question) -> bool:
    """True when the question tells of hurting people other than as what a character in a story does
    ("the villain poisons someone" is the plot a writer asks about)."""
    if question.detail():
        return question.has(HARM_PEOPLE)  # "give the exact dose": the steps are asked for, story or not
    return any(not observed(clause.text, match.start()) for clause, match in question.distinct(HARM_PEOPLE))


#: A question that asks why something happens ("why does mixing bleach and ammonia make fumes?",
#: "why does TNT need a detonator?"): a cause is asked for, not a method, unless steps or amounts are too.
WHY_ASKED = _c(r"(?:^|[.?!;] )why (?:does|do|is|are|did|would|can|could|doesn't|don't|isn't)\b")


def _explained(question: Question) -> bool:
    """True when the question asks only why an agent or a weapon does what it does."""
    return (question.has(WHY_ASKED) and not question.has_any(STEPS_ASKED, REAL_AGENT, MAKE_IT)
            and asks_only(question.text, WHY_ASKED))


def biological_harm(question: Question) -> Finding | None:
    """Producing, enhancing or spreading a pathogen or biological toxin."""
    if _explained(question):
        return None
    agent = BIO_AGENT_NOT_COMPUTER if question.has(COMPUTER) else BIO_AGENT
    # Not named_apart: "disease", "virus" and "bacteria" name data sets and models as often as agents.
    if _agent_harm(question, agent, lx.BIO_ACT, BIO_RIGHT):
        return Finding("biological_harm")
    return None


#: A poison or potion that exists only in a story: "the alchemist brews a poison from a made-up flower".
INVENTED_AGENT = _c(
    r"\b(?:novel|story|stories|fantasy|book|game|campaign|screenplay|script|fiction|world ?building|dnd)\b"
    r"[^\n]*\b(?:made ?up|fictional|fictitious|imaginary|invented|magical|enchanted|mythical)\b"
)
#: What makes a story's poison a real one: "a real poison", "the exact recipe", "how many grams".
REAL_AGENT = _c(
    r"\b(?:real|actual|exact|exactly|recipe|quantit\w+|doses?|grams?|mg|ml|real life|in reality)\b"
)


def chemical_harm(question: Question) -> Finding | None:
    """Making or using a chemical agent or poison, unless the agent is invented for a story."""
    if _explained(question):
        return None
    invented = question.has(INVENTED_AGENT) and not question.has_any(REAL_AGENT, STEPS_ASKED)
    if invented and not question.detail():
        return None
    if _agent_harm(question, CHEM_AGENT, lx.CHEM_ACT, CHEM_RIGHT, named_apart=True):
        return Finding("chemical_harm")
    return None


_ACQUIRE = frozenset(("buy", "buying", "obtain", "get", "purchase"))
LEGAL_PURCHASE = _c(r"\b(?:legal(?:ly)?|lawful(?:ly)?|licen[cs]ed|permit|background check)\b")
AROUND_CHECK = _c(
    r"\bwithout (?:a |the |any )?(?:background check|licen[cs]e|permit|paperwork|serial|id)|\b(?:under ?age|"
    r"i'?m 1[0-7]|ghost guns?|untraceable|straw (?:buy|purchase))"
)
_NEGATED = frozenset(("hasn't", "hadn't", "isn't", "wasn't", "weren't", "aren't", "never", "not"))


def weapons_harm(question: Question) -> Finding | None:
    """Making explosives or weapons, outside a game or simulation."""
    if (question.has(GAME) and not question.has(REAL_WEAPON)) or not question.has(WEAPON_AGENT) \
            or _explained(question):
        return None
    for clause in question.clauses:
        text = WEAPON_IDIOM.sub(" ", clause.text)
        for match in WEAPON_AGENT.finditer(text):
            if neutral_head(text, match.end()):
                continue
            if question.has(MAKE_IT):
                return Finding("weapons_harm")
            before = words_before(text, match.start(), 8)
            for index in range(len(before) - 1, -1, -1):
                word = before[index]
                if word in lx.WEAPON_ACT or word in lx.MAKE:
                    if not _NEGATED.isdisjoint(before[max(0, index - 3) : index]):
                        continue  # "verify a rifle hasn't been converted": the act is what did not happen
                    if word in _ACQUIRE and question.has(LEGAL_PURCHASE) and not question.has(AROUND_CHECK):
                        break  # "the legal steps to buy a handgun, including the background check"
                    return Finding("weapons_harm")
                if word in lx.DEFEND or word in cx.SOFTWARE_PRODUCT:
                    break  # "inventory software for explosives": the software is what is made
            if question.has_any(HARM_PEOPLE, MASS_HARM):
                return Finding("weapons_harm")
    return None


def harm_to_people(question: Question) -> Finding | None:
    """Hurting people directly, asking for a lethal dose, or delivering anything onto a crowd."""
    if question.has(LETHAL_DOSE):
        return Finding("harm_to_people")
    for clause, match in question.distinct(HARM_PEOPLE):
        if requested(clause.text, match.start()):
            return Finding("harm_to_people")
    for clause, match in question.distinct(HARASS):
        if (clause.has(FOREIGN) or question.has(AROUND_BLOCK)) and requested(clause.text, match.start()):
            return Finding("harm_to_people", "harassment")
    crowds = (clause for clause, _ in question.matches(MASS_HARM))
    if any(clause.has(DELIVER) for clause in crowds):
        return Finding("harm_to_people")
    return None


def conduct_toward_people(question: Question) -> Finding | None:
    """Spyware, scams, harassment or stalking described by what it does rather than by name."""
    found = conduct(question)
    return Finding(*found) if found else None


def ordinary_means(question: Question) -> Finding | None:
    """Fraud, piracy, intrusion, locating a person or another crime, by what is taken from whom and why."""
    found = offence(question)
    return Finding(*found) if found else None


def self_harm(question: Question) -> Finding | None:
    """Ending or hurting one's own life, judged first so that its refusal carries the crisis advice."""
    found = own_life(question)
    return Finding(*found) if found else None


CHECKS: tuple[Callable[[Question], Finding | None], ...] = (
    self_harm,
    exploit_development,
    biological_harm,
    security_evasion,
    attack_tooling,
    covert_surveillance,
    unauthorized_access,
    harm_to_people,
    denial_of_service,
    chemical_harm,
    weapons_harm,
    conduct_toward_people,
    ordinary_means,
)


def watched() -> list[AnyPattern]:
    """Every pattern the judge searches a whole question or clause for."""
    patterns: list[AnyPattern] = [REQUEST, CODE_REQUEST]
    for value in globals().values():
        if isinstance(value, LazyPattern | re.Pattern):
            patterns.append(value)
        elif isinstance(value, Terms):
            patterns.append(value.any)
    for behaviour in BEHAVIOURS:
        patterns += (behaviour.cue, *behaviour.needs, *behaviour.also)
    return patterns + conduct_watched() + crime_watched()


#: The literals every watched pattern needs, worked out in the background after the first question.
GATES = LazyGates(watched)


#: "Get into" a field is to take it up ("my son wants to get into ethical hacking"), not to break in.
TAKE_UP = re.compile(
    r"\b(?:get|gets|getting|got) into (?=(?:ethical hacking|hacking|(?:cyber ?|info ?|it )?security|infosec|"
    r"pen ?testing|penetration testing|bug bount\w*|ctfs?|red team\w*|reverse engineering|malware analysis|"
    r"programming|coding|tech)\b)"
)
#: A terse request that ends in "how" ("swatting service anonymous, how"): the words before it are asked for.
TRAILING_HOW = re.compile(
    r"^(?!\s*(?:how|what|why|where|which|who|when|can|could|is|are|do|does|should)\b)(.+?)[\s,;:.]+how\s*[?.!]*\s*$"
)
#: The asker's side closing what it suffers: "…inflate our bill. How do we stop it?", "…so we can close the
#: gaps". The act named before it is what is defended against.
DEFENDED_OWN = _c(
    r"\b(?:how (?:do|can|should|could) we (?:stop|prevent|block|close|fix|mitigate|reduce|detect|catch|"
    r"handle|defend against)|so (?:that )?we can (?:close|stop|block|prevent|patch|fix|detect|catch)) (?:it|"
    r"this|that|them|these|those|the gaps?|the holes?|the loopholes?)\s*(?:[?.!]|$)|"
    # "how do I warn my employees", "how should our family set up a safe word", "verify that the email
    # isn't a scam", "what should a company's policy be for…": guarding people of one's own against it
    r"\bhow (?:do|can|should|could) (?:i|we|our \w+) (?:best )?(?:warn|protect|train|educate|prepare|brief) "
    r"(?:my|our|the) (?:\w+ )?(?:employees|staff|team|users|family|kids|children|parents|customers|members|"
    r"colleagues|students)\b|\bset up a (?:family )?(?:safe|code|secret) ?word\b|\b(?:verify|check|confirm|"
    r"tell|know) (?:that |whether |if )?(?:\S+ ){0,8}?(?:is|isn'?t|is not) (?:a |an )?(?:\S+ ){0,4}?(?:scam|"
    r"fraud|phishing|fake|compromise)\b|\bwhat should (?:a |an |our |the |my )?(?:\w+'s |\w+ )?"
    r"polic(?:y|ies) "
    r"be\b"
)
#: A question about what the law does to an act ("what penalties exist for making counterfeit IDs"),
#: with no steps asked for: the act is what the law is asked about.
ABOUT_THE_LAW = _c(
    r"\b(?:(?:legal )?penalt(?:y|ies)|punishments?|sentences?|sentencing|jail time|prison time|fines?|"
    r"criminal charges|legal consequences|consequences) (?:\S+ ){0,4}?for\b"
)
STEPS_ASKED = _c(
    r"\bhow to\b|\bhow (?:do|can|could|would|should) (?:i|we|you|one|someone|u)\b|\bsteps?\b|"
    r"\binstructions\b|"
    r"\brecipe\b|\bwalk me\b|\bwithout (?:getting|being) caught\b"
)
_LAW_RULES = frozenset(("serious_crime", "fraud", "piracy"))
#: A victim's or a defender's question about the act it names: how to detect, prevent, report,
#: document or lock down against it, what to do now, whom to report it to.
DEFENDER_ASKS = _c(
    r"\b(?:how|what) (?:do|can|should|could|would) (?:i|we|she|he|they|you|our \w+) (?:best )?(?:detect|"
    r"prevent|report|protect|secure|lock down|document|warn|recover|spot|flag|block|defend|respond)\b|"
    r"\bwhat (?:should|do|can) (?:i|we|she|he|they) (?:actually )?do(?: now| next| about (?:it|this|that|"
    r"him|her|them))?\s*(?:[?.!]|$)|\bwhat now\b|"
    r"\bwho (?:do|can|should) (?:i|we) (?:report|contact|call|tell)\b"
)
#: Whether an act is legal: "is it legal to record a call with my landlord?", "is it a crime to…?".
LEGALITY_ASKED = _c(r"\bis it (?:legal|illegal|a crime|against the law|lawful|okay|ok|allowed|a felony)\b")
#: The asker states a plan of their own ("I want to…", "I'm going to…"): a question after it asks how
#: to carry the plan out, not how to defend against it.
OWN_PLAN = _c(
    r"\b(?:i|we) (?:" + lx.PLAN_VERBS + r") to\b|"
    r"\bi'?m (?:going|planning|trying) to\b"
)
#: "Report them falsely", "a false claim": the report or claim is itself the act.
FALSELY = _c(r"\bfalse(?:ly)?\b")
#: Rules whose acts a victim or a defender names when asking what to do about them; a question about
#: weapons, agents, exploits or self-harm is judged by what it asks whoever asks it.
_VICTIM_RULES = SECOND_READ_RULES | {"attack_tooling"}


def _asked_by_victim_or_defender(question: Question) -> bool:
    """True when the question asks whether the act is legal, with no steps asked, or how to detect,
    prevent, report or recover from it, or what to do now, and asks for nothing else; never when it
    relays someone else's request, states the asker's own plan or makes a false report."""
    if question.has(DEFENDER_ASKS):
        asked = asks_only(question.text, DEFENDER_ASKS)
    else:
        asked = (question.has(LEGALITY_ASKED) and not question.has(STEPS_ASKED)
                 and asks_only(question.text, LEGALITY_ASKED))
    return asked and not question.has_any(RELAYED_ASK, OWN_PLAN, FALSELY)


#: Rules whose acts a defender's question names as what it guards against.
_DEFENDED_RULES = frozenset(
    ("fraud", "security_evasion", "unauthorized_access", "denial_of_service", "piracy")
)


def judge(text: str) -> Finding | None:
    """The first harmful intent found in ``text`` (a normalized question), or None when it reads as
    engineering. Only the patterns whose literals occur in the question are ever run."""
    if " into " in text:
        text = TAKE_UP.sub("learn ", text)
    if text.endswith(("how", "how?")):
        text = TRAILING_HOW.sub(r"how do i \1?", text)
    read = Question(text, GATES.excluded(text))
    for check in CHECKS:
        finding = check(read)
        if finding is not None:
            if finding.rule in _DEFENDED_RULES and read.has(DEFENDED_OWN) and asks_only(text, DEFENDED_OWN):
                return None
            if finding.rule in _LAW_RULES and read.has(ABOUT_THE_LAW) and not read.has(STEPS_ASKED):
                return None
            if finding.rule in _VICTIM_RULES and _asked_by_victim_or_defender(read):
                return None
            return finding
    return None
