"""Harm done with ordinary means, judged by what is taken, from whom, and what it is for.

Each :class:`Offence` is an act named in the asker's words (cash out a card, port a number, clone a
voice, crack a licence check, dump a table, find where she lives, launder money) and the facets
that make it harmful: whose the thing is (a stranger's card, a competitor's site, my ex's phone),
and what the result is for (sold, shared, sent to the victim's bank). The same act on the asker's
own systems, with authorization, in a lab or CTF, or asked about in order to detect, stop or explain
it, is engineering and passes: a detecting or explaining word governing the act, or a defensive noun
right after it ("deepfake detection"), sets it aside.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ask_fable.core import guard_lexicon as lx
from ask_fable.core import guard_lexicon_crime as cx
from ask_fable.core.guard_conduct import asked
from ask_fable.core.guard_reading import Question, neutral_head, requested
from ask_fable.core.guard_scan import LazyAlternatives, LazyPattern, Pattern, Plan


def _c(fragment: str) -> LazyPattern:
    return LazyPattern(fragment)


def _a(fragment: str) -> LazyAlternatives:
    # A long list of acts: only the entries whose literals a question holds are searched.
    return LazyAlternatives(fragment)


FOREIGN = LazyAlternatives(lx.FOREIGN)
PEOPLE = LazyAlternatives(lx.PEOPLE)
COVERT = _c(r"\b" + lx.COVERT)
EXFIL = _c(r"\b" + lx.EXFIL_TO_ME)
TEST_USE = _c(lx.TEST_USE)
UNAUTHORIZED = _c(r"\b" + lx.UNAUTHORIZED)
FOR_ME = _c(cx.FOR_ME)
TERMINAL = _c(
    r"\b(?:gas pump|pump reader|fuel pump|atm|pos terminal|card reader|payment terminal|overlay|"
    r"register|till|"
    r"skimmer)s?\b"
)
LINE_TAKEOVER = _c(cx.LINE_TAKEOVER)
PROFIT_ME = _c(cx.PROFIT_ME)
PUMP = _c(cx.PUMP)
LIKENESS_OF = _c(cx.LIKENESS_OF)
DECEIVE_USE = _c(cx.DECEIVE_USE)
DISTRIBUTE = _c(cx.DISTRIBUTE)
OWN_PROTECTION = _c(cx.OWN_PROTECTION)
AUTHORIZED = _c(cx.AUTHORIZED)
OWNER_UNAWARE = _c(cx.OWNER_UNAWARE)
THIRD_PERSON = _c(cx.THIRD_PERSON)
SELF_SOUGHT = _c(cx.SELF_SOUGHT)
AGREED = _c(cx.AGREED)
CARD_ABUSE = _c(cx.CARD_ABUSE)
FINDS_VALID = _c(cx.FINDS_VALID)
FIRST_PERSON_ACTS = _c(cx.FIRST_PERSON_ACTS)
SPREAD_WIDE = _c(cx.SPREAD_WIDE)
AGAINST_CRIME = _c(cx.AGAINST_CRIME)
INSIDER_MOTIVE = _c(cx.INSIDER_MOTIVE)
CONTACT = _c(cx.CONTACT)
PERSON_TARGET = _c(cx.PERSON_TARGET)
FILTER_EVADE = _c(cx.FILTER_EVADE)

TARGETED = (FOREIGN, PEOPLE)
OWN = _c(lx.OWN)
OPENED = _c(cx.OPENED)
#: A sanctioned exercise: a phishing simulation or awareness training.
DRILL = _c(r"\b(?:simulations?|awareness|training)\b")
SOFT_TARGET = _c(cx.SOFT_TARGET)


@dataclass(frozen=True)
class Offence:
    """An act and the facets that make it harmful: one of each group in ``needs``, none of ``unless``.

    An act described by what it does counts as asked for unless a detecting or explaining word
    governs it; a crime named by its noun (``named``: "fraud", "fullz", "someone's number") must be
    asked for by the words before it, so "what does fullz mean" and "my card was used for fraud" pass.
    """

    act: Pattern
    rule: str
    label: str
    needs: tuple[tuple[Pattern, ...], ...] = ()
    unless: tuple[Pattern, ...] = ()
    named: bool = False
    #: A cheap pattern the act cannot match without, searched first (an act led by "his", "her" or
    #: "their" would otherwise be tried at nearly every word of every question).
    gate: Pattern | None = None
    #: Defending words that, before this act, are part of it ("test stolen cards" is carding; "monitor
    #: her accounts and find out where she lives" is stalking).
    abuse: frozenset[str] = frozenset()

    def fits(self, question: Question) -> bool:
        """True when the question shows a facet of every group and none of the exceptions."""
        return all(question.has_any(*group) for group in self.needs) and not question.has_any(*self.unless)



OFFENCES = (
    Offence(_a(cx.STOLEN_INSTRUMENT), "fraud", "using stolen cards or identities", (),
            (TEST_USE, _c(cx.LAWFUL)), named=True, gate=_c(cx.INSTRUMENT_NOUN), abuse=cx.TRY_OUT),
    Offence(_c(cx.USE_OTHERS_ACCOUNT), "fraud", "service obtained through accounts not the asker's",
            (), (_c(cx.LAWFUL),), named=True, gate=_c(cx.ACCOUNT_NOUN)),
    Offence(_c(cx.FALSE_CLAIM), "fraud", "a false claim", named=True),
    Offence(_c(cx.CHEAT), "fraud", "cheating an exam", named=True),
    Offence(_c(cx.SKIM), "fraud", "card skimming", ((FOR_ME, COVERT, EXFIL, TERMINAL),), (AGREED,),
            gate=_c(cx.CARD_NOUN)),
    Offence(_c(cx.DRAIN), "fraud", "emptying someone's account", (TARGETED,)),
    Offence(_c(cx.SCAM), "fraud", "a scam", named=True),
    Offence(_c(cx.FRAUD_NOUN), "fraud", "", named=True),
    Offence(_c(cx.ENUMERATE), "fraud", "guessing codes until one works", ((FINDS_VALID, *TARGETED),)),
    Offence(_c(cx.HOLDER_POSE), "fraud", "passing as an account's holder"),
    Offence(_c(cx.NEVER_PAY), "fraud", "service taken without paying",
            ((_c(r"\b(?:cards?|trials?|subscriptions?|accounts?|fares?|tolls?|bills?|rent|invoices?|"
            r"service)\b"),),),
            (AGAINST_CRIME,)),
    Offence(_c(cx.SEND_ME_MONEY), "fraud", "getting a person to send the asker money",
            ((SOFT_TARGET,),), gate=SOFT_TARGET),
    Offence(_c(cx.PRIVATE_SPACE_CAMERA), "covert_surveillance",
            "recording people where they undress or sleep", (), (AGREED,), gate=_c(cx.PRIVATE_ROOM)),
    Offence(_c(cx.SIM_SWAP), "fraud", "taking over someone's phone number", ((*TARGETED, _c(cx.MARK)),),
            (_c(cx.OWN_LINE), AGAINST_CRIME), gate=_c(r"\b(?:sim|port\w*|number|line)\b")),
    Offence(_c(cx.SYNTHETIC_ID), "fraud", "identities made up to pass a credit or identity check",
            ((_c(cx.PASS_AS_REAL),),), (TEST_USE,)),
    Offence(_c(cx.NEAR_CHILDREN), "harm_to_people", "access to children behind their parents' backs",
            ((_c(cx.UNSUPERVISED),),), gate=_c(cx.CHILDREN)),
    Offence(_c(cx.GROOM), "sexual_content_minors", "drawing a child into secrecy or sending pictures",
            gate=_c(cx.CHILDREN + r"|\bteen\w*|\bminor\b")),
    Offence(_c(cx.TRADE_PRIVATE), "harm_to_people", "selling or publishing people's private material",
            gate=_c(cx.PRIVATE_MATERIAL)),
    Offence(_c(cx.DISINFO), "fraud", "spreading a false story", ((SPREAD_WIDE,),)),
    Offence(_c(cx.RUMOUR), "fraud", "spreading a false story", ((_c(cx.MANY_VOICES),),)),
    Offence(_c(cx.CARD_CHECK), "fraud", "testing stolen cards", ((_c(cx.FINDS_LIVE),),),
            (TEST_USE, AGAINST_CRIME), gate=_c(r"\b(?:cards?|ccs?|cvv2?s?|bins?|checkers?)\b")),
    Offence(_a(cx.GET_AWAY), "serious_crime", "getting away with it", ((FIRST_PERSON_ACTS,),),
            (AGAINST_CRIME, TEST_USE)),
    Offence(_c(cx.HIDDEN_FROM), "serious_crime", "hiding it from those who look for it",
            ((FIRST_PERSON_ACTS,),), (TEST_USE,), gate=_c(r"\b" + cx.FINDERS), abuse=cx.COVER_UP),
    Offence(_c(cx.FOREIGN_LINE), "fraud", "taking over someone's phone number", ((LINE_TAKEOVER,),),
            named=True, gate=_c(cx.LINE_NOUN)),
    Offence(_c(cx.PREMIUM_LINE), "fraud", "premium-rate call fraud", ((PROFIT_ME,), (PUMP,))),
    Offence(_c(cx.SYNTH_LIKENESS), "fraud", "impersonating a real person with a synthetic voice or video",
            ((LIKENESS_OF,), (DECEIVE_USE,)), (AGREED,)),
    Offence(_c(cx.INSIDER), "fraud", "an insider paid or persuaded to act for the asker"),
    Offence(_a(cx.PIRACY), "piracy", "", ((DISTRIBUTE,),), (OWN_PROTECTION,)),
    Offence(_c(cx.PAID_UNLOCK), "piracy", "", ((DISTRIBUTE,),), (OWN_PROTECTION, _c(lx.OWN))),
    Offence(_a(cx.TECHNIQUE), "unauthorized_access", "", ((*TARGETED, OWNER_UNAWARE, UNAUTHORIZED),),
            (AUTHORIZED, _c(cx.SELF_RUN))),
    Offence(_c(cx.TECHNIQUE_TRAFFIC), "unauthorized_access", "", ((*TARGETED, OWNER_UNAWARE, UNAUTHORIZED),),
            (AUTHORIZED, _c(cx.SELF_RUN)), gate=_c(cx.TRAFFIC_NOUN)),
    Offence(_c(cx.TECHNIQUE_SESSION), "unauthorized_access", "", ((*TARGETED, OWNER_UNAWARE, UNAUTHORIZED),),
            (AUTHORIZED, _c(cx.SELF_RUN)), gate=_c(cx.SESSION_NOUN)),
    Offence(_a(cx.LOCATE), "covert_surveillance", "locating or profiling a person", ((THIRD_PERSON,),),
            (SELF_SOUGHT, AGREED), abuse=cx.WATCHING),
    Offence(_a(cx.CRIME), "serious_crime", "", (), (AGAINST_CRIME, TEST_USE), named=True),
    Offence(_c(cx.FENCE), "serious_crime", "selling stolen goods", (), (AGAINST_CRIME, TEST_USE), named=True,
            gate=_c(r"\bstolen\b")),
    Offence(_c(cx.FREE_KEY), "piracy", "", (), (OWN_PROTECTION, TEST_USE), named=True),
    Offence(_c(cx.MONITOR_TAMPER), "serious_crime", "", (), (AGAINST_CRIME, TEST_USE), named=True,
            gate=_c(cx.MONITOR_NOUN)),
    Offence(_c(cx.SELL_COUNTERFEIT), "serious_crime", "", (), (AGAINST_CRIME, TEST_USE), named=True,
            gate=_c(cx.COUNTERFEIT_NOUN)),
    Offence(_c(cx.DRUG_STEPS), "serious_crime", "", (), (AGAINST_CRIME, TEST_USE), named=True,
            gate=_c(cx.DRUG_NOUN)),
    Offence(_c(cx.FACE_MATCH), "covert_surveillance", "identifying people from their photos",
            ((_c(cx.IDENTIFY),), (_c(cx.PEOPLE_GROUP),)), (AGREED,)),
    Offence(_c(cx.LIST_ADDRESSES), "harm_to_people", "exposing people's home addresses"),
    Offence(_c(cx.HARVEST_PEOPLE), "covert_surveillance", "gathering people's personal details"),
    Offence(_c(cx.TAKE_DATA_OUT), "serious_crime", "taking an employer's data", ((INSIDER_MOTIVE,),),
            gate=_c(cx.DATA_NOUN)),
    Offence(_c(cx.TAKE_DATA_OUT), "unauthorized_access", "taking another business's data", ((FOREIGN,),),
            (AUTHORIZED, OWN, _c(cx.SELF_RUN)), gate=_c(cx.DATA_NOUN)),
    Offence(_c(cx.INTIMIDATE), "harm_to_people", "intimidation",
            ((PERSON_TARGET,), (CONTACT, _c(cx.PRESSURE_OUTCOME)))),
    Offence(_c(cx.DISRUPT), "harm_to_people", "harassment"),
    Offence(_c(cx.LOCK_OPEN), "serious_crime", "breaking into someone's home", ((FOREIGN, PEOPLE),),
            (_c(cx.SELF_RUN), OWN)),
    Offence(_c(cx.LURE_OPEN), "attack_tooling", "getting people to open a file",
            ((FOREIGN, _c(cx.STAFF_AT)),), (AUTHORIZED, OWN, TEST_USE, DRILL)),
    Offence(_c(cx.FAKE_LOGIN), "attack_tooling", "a phishing page", ((FOREIGN, PEOPLE), (_c(cx.LURE),)),
            (AUTHORIZED, OWN, TEST_USE, DRILL)),
    Offence(_c(cx.IMPERSONATE), "fraud", "passing as someone else to get money or logins",
            ((SOFT_TARGET, PEOPLE), (_c(cx.GET_FROM_VICTIM),)), (AGREED, TEST_USE), named=True),
    Offence(_c(cx.SABOTAGE), "harm_to_people", "", ((FOREIGN, PEOPLE, _c(cx.STAGED_ACCIDENT)),)),
    Offence(_c(cx.STAGED_ACCIDENT), "harm_to_people", "", named=True),
    Offence(_c(cx.BOOBY_TRAP), "weapons_harm", "", ((OPENED, _c(cx.TRIGGERED)),), (_c(cx.SIGNAL_ONLY),)),
    Offence(_a(cx.SELF_HARM), "self_harm", "", unless=(_c(cx.SEEKS_SUPPORT),)),
    Offence(_c(cx.SEXUAL_MINOR), "sexual_content_minors", ""),
    Offence(_c(cx.INTIMATE_IMAGE), "harm_to_people", "intimate images of a person", (TARGETED,),
            (AGREED, _c(cx.OWN_IMAGES)),
            named=True),
    Offence(_c(cx.HATE), "hate_or_extremism", "", ((_c(cx.HATE_MARK),),)),
    Offence(_c(cx.DEHUMANIZE), "hate_or_extremism", "", ((_c(cx.HATE_MARK), _c(r"\bgroups?\b")),),
            named=True),
    Offence(_c(cx.SCALP), "fraud", "buying up stock to resell", ((_c(cx.RESELL),),)),
    Offence(_c(cx.TRAFFIC), "serious_crime", "trafficking people"),
    Offence(_c(cx.CASING), "serious_crime", "picking homes to burgle", (), (AGAINST_CRIME,), named=True,
            abuse=cx.SCOUTING),
    Offence(_c(cx.FORENSIC_DEFEAT), "serious_crime", "beating a forensic test", (), (TEST_USE,), named=True),
    Offence(_c(cx.FALSE_BOOKS), "fraud", "false accounts shown to investors or auditors",
            ((_c(cx.SHOWN_TO),),), (AGAINST_CRIME, TEST_USE)),
    Offence(_c(cx.HIJACK_VEHICLE), "harm_to_people", "taking over someone's vehicle", (TARGETED,),
            (AUTHORIZED, TEST_USE, OWN)),
    Offence(_c(cx.EXTORT), "harm_to_people", "extortion", (), (AGAINST_CRIME,), named=True),
    Offence(_c(cx.AGE_CHECK_BYPASS), "fraud", "passing an age or identity check for someone else",
            ((_c(cx.MINOR_OR_OTHER),),)),
    Offence(_c(cx.HIJACKED), "unauthorized_access", "using taken-over accounts or machines", named=True),
    Offence(_c(cx.HIDE_INCOME), "serious_crime", "hiding income", (), (AGAINST_CRIME,), named=True,
            gate=_c(cx.MONEY_NOUN)),
    Offence(_c(cx.FAKE_CHARITY), "fraud", "a fake fundraiser", named=True),
    Offence(_c(cx.SPOOF_PAID), "fraud", "faking a location to be paid", ((_c(cx.PAID),),), named=True),
    Offence(_c(cx.CHEAT_SYSTEMS), "fraud", "cheating a check", (),
            (AGAINST_CRIME, TEST_USE, _c(cx.OWN_CHECK)), named=True),
    Offence(_c(cx.MASS_REPORT), "harm_to_people", "harassment", ((*TARGETED, PERSON_TARGET),)),
    Offence(_c(cx.SLURS), "harm_to_people", "harassment", ((FILTER_EVADE,),)),
)


#: Each offence with the ids its literal gates are checked by: its gate (0 for none) and its groups
#: of needed facets, worked out once rather than on every question; a question takes only the
#: offences whose act its literals let through.
_Entry = tuple[Offence, int, tuple[frozenset[int], ...]]


def _plan(offences: Iterable[Offence]) -> Plan[_Entry]:
    return Plan(
        (found.act, (found, id(found.gate) if found.gate is not None else 0,
                     tuple(frozenset(id(p) for p in group) for group in found.needs)))
        for found in offences
    )


_PLAN = _plan(OFFENCES)
#: Checked before every other rule: a question about ending one's own life gets the crisis advice
#: even when it also reads as acting behind someone's back ("…and hide it from my parents").
_OWN_LIFE = _plan(found for found in OFFENCES if found.rule == "self_harm")


def own_life(question: Question) -> tuple[str, str] | None:
    """The self-harm offence, when the question asks for it; None otherwise."""
    return offence(question, _OWN_LIFE)


def offence(question: Question, plan: Plan[_Entry] = _PLAN) -> tuple[str, str] | None:
    """The rule and label of the first offence the question asks for, or None."""
    excluded = question.excluded
    for found, gate, needs in plan.live(excluded):
        if gate in excluded:
            continue  # the literal gates already rule it out: no call at all
        if needs and any(group <= excluded for group in needs):
            continue  # a needed facet cannot occur
        if gate and found.gate is not None and not question.has(found.gate):
            continue
        if not question.has(found.act) or not found.fits(question):
            continue
        for clause, match in question.distinct(found.act):
            start = match.start()
            if start and clause.text[start - 1] in "\"'" and not question.detail():
                continue  # "a 'kill myself' message": the words are mentioned, not asked for
            if found.named:
                wanted = requested(clause.text, start, found.abuse, question.detail)
            else:
                wanted = asked(clause.text, start, question.detail, found.abuse)
            if wanted and not neutral_head(clause.text, match.end()):
                return found.rule, found.label
    return None


def watched() -> list[Pattern]:
    """Every pattern the offences search a question for."""
    patterns: list[Pattern] = []
    for found in OFFENCES:
        patterns += (found.act, *found.unless, *(p for group in found.needs for p in group))
        if found.gate is not None:
            patterns.append(found.gate)
    return patterns
