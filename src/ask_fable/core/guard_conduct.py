"""What the thing asked for would do to people, judged without the name of any attack.

A request can describe spyware, a scam or harassment in plain words ("an extension that quietly
posts what people paste to my endpoint"). Each :class:`Frame` here is one harmful combination of
facets: an act the asker wants done (takes data, runs the asker's program elsewhere, contacts
someone over and over, follows where someone is, fakes identities in bulk, passes itself off as
someone), the manner that makes it harmful (hidden, disguised, around a block) and who bears it
(a person, other people). The same act for the asker's own systems, with consent, in a test
environment, or asked about in order to detect or stop it, is engineering and passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ask_fable.core import guard_lexicon as lx
from ask_fable.core import guard_lexicon_crime as cx
from ask_fable.core.guard_reading import Question, examined, past, prevented, tokens, words_before
from ask_fable.core.guard_scan import LazyAlternatives, LazyPattern, Pattern, Plan


def _c(fragment: str) -> LazyPattern:
    return LazyPattern(fragment)


FOREIGN = LazyAlternatives(lx.FOREIGN)
PEOPLE = LazyAlternatives(lx.PEOPLE)
OWN = _c(lx.OWN)
MALICE = _c(r"\b" + lx.MALICE)
COVERT = _c(r"\b" + lx.COVERT)
UNSEEN = _c(r"\b" + lx.UNSEEN)
DISGUISE = LazyAlternatives(r"\b" + lx.DISGUISE)
EXFIL = _c(r"\b" + lx.EXFIL_TO_ME)
CREDENTIAL = _c(r"\b" + lx.CREDENTIAL)
CONSENT = _c(r"\b" + lx.CONSENT)
INTIMATE = _c(lx.INTIMATE)
AROUND_BLOCK = _c(r"\b" + lx.AROUND_BLOCK)
UNAUTHORIZED = _c(r"\b" + lx.UNAUTHORIZED)
AGAINST_WILL = _c(r"\b" + lx.AGAINST_WILL)
HAND_OVER = LazyAlternatives(r"\b" + lx.HAND_OVER)
OWN_SOURCE = _c(lx.OWN_SOURCE)


@dataclass(frozen=True)
class Frame:
    """One harmful combination: an act, and facets of which the question must show one per group.

    The act must be asked for (not detected, blocked or explained); no ``unless`` pattern may occur.
    """

    act: Pattern
    rule: str
    label: str
    needs: tuple[tuple[Pattern, ...], ...] = ()
    unless: tuple[Pattern, ...] = ()
    #: Defending words that, before this act, are part of it ("track my wife's car with a hidden GPS").
    abuse: frozenset[str] = frozenset()

    def fits(self, question: Question) -> bool:
        """True when the question shows a facet of every group and none of the exceptions."""
        return all(question.has_any(*group) for group in self.needs) and not question.has_any(*self.unless)

    def ruled_out(self, excluded: frozenset[int]) -> bool:
        """True when the literal gates show a group of needed facets cannot occur: no search needed."""
        return any(group <= excluded for group in self._need_ids)

    @cached_property
    def _need_ids(self) -> tuple[frozenset[int], ...]:
        return tuple(frozenset(id(p) for p in group) for group in self.needs)


OPENED = _c(cx.OPENED)
TARGETED = (FOREIGN, PEOPLE, OPENED)
HIDDEN = (COVERT, UNSEEN)

FRAMES = (
    Frame(_c(lx.TAKES), "attack_tooling", "covert data theft",
          ((*HIDDEN, DISGUISE), (*TARGETED, EXFIL)), (CONSENT, OWN_SOURCE)),
    Frame(_c(lx.TAKES), "attack_tooling", "credential theft", (TARGETED, (EXFIL,), (CREDENTIAL,)),
          (CONSENT, OWN_SOURCE)),
    # "a captive portal that saves every customer's Google login": another service's logins, kept
    Frame(_c(lx.TAKES), "attack_tooling", "credential theft",
          ((_c(lx.THIRD_PARTY_LOGIN),), (*TARGETED, _c(lx.EVERY_PERSON), _c(lx.ITS_USER))),
          (CONSENT, OWN_SOURCE)),
    # "screenshots the user's banking sessions and sends them to my server": its user's secrets, to the asker
    Frame(_c(lx.TAKES), "attack_tooling", "credential theft", ((_c(lx.ITS_USER),), (EXFIL,), (CREDENTIAL,)),
          (CONSENT, OWN_SOURCE)),
    Frame(_c(r"\b" + lx.PLANT), "attack_tooling", "a program run on other people's computers",
          ((*TARGETED, *HIDDEN, DISGUISE, MALICE),), (CONSENT,)),
    Frame(_c(lx.HIDE_IT), "attack_tooling", "a program hidden on someone else's device", (TARGETED,),
          (CONSENT,)),
    Frame(_c(lx.REDIRECT), "attack_tooling", "payment redirection", ((_c(lx.TO_ME),),)),
    Frame(_c(lx.INSERT_MINE), "fraud", "ads or links injected into other people's pages", (HIDDEN,)),
    Frame(_c(r"\b" + lx.PERSIST), "attack_tooling", "malware that survives removal",
          ((*TARGETED, *HIDDEN, MALICE),)),
    Frame(_c(lx.HOP), "attack_tooling", "self-spreading malware", ((CREDENTIAL, MALICE, *HIDDEN),)),
    Frame(_c(lx.BORROWED_POWER), "attack_tooling", "a cryptojacker", (), (CONSENT,)),
    Frame(DISGUISE, "fraud", "impersonation", ((HAND_OVER, _c(lx.EVERYONE_IN)),)),
    Frame(LazyAlternatives(lx.FAKE_BULK), "fraud", "fake accounts or engagement",
          ((_c(r"\b" + lx.ENGAGEMENT),),), (_c(lx.TEST_USE),)),
    Frame(_c(r"\b" + lx.BARRAGE), "harm_to_people", "harassment",
          ((*TARGETED, AROUND_BLOCK),), (OWN,)),
    Frame(LazyAlternatives(r"\b" + lx.WHEREABOUTS), "covert_surveillance", "",
          (TARGETED, (*HIDDEN, INTIMATE, _c(lx.SINGLED_OUT), AROUND_BLOCK)),
          (CONSENT, _c(lx.SELF_TRACKED)), cx.WATCHING),
    Frame(_c(lx.EXPOSE), "harm_to_people", "exposing a person's details", (TARGETED,)),
    # The widest frame: anything done to a particular person that they are not to know of or agree to.
    Frame(_c(lx.SOMEONE), "harm_to_people", "acting against a person without their knowledge or consent",
          ((*HIDDEN, DISGUISE, UNAUTHORIZED, AROUND_BLOCK, AGAINST_WILL),), (CONSENT,)),
)


#: Defending words that are as often nouns: after a determiner they name a thing ("the document").
_NOUNS = lx.words("document present report reports test tests score check alert rule rules")
#: Words that ask or relate rather than govern ("how do I…", "everything about her").
_NOT_GOVERNING = lx.words("how what what's which why whether about")
_DETERMINERS = lx.words("a an the this that my our your their his her its")
_ATTACKING = lx.words("attack attacks attacking launch launching run running use using")
#: Verbs of receiving: what came "from" someone after them was done to the asker.
_RECEIVED = lx.words("got gets getting received receives receiving")


def asked(
    clause: str, start: int, detail: Callable[[], bool] | None = None, ignore: frozenset[str] = frozenset()
) -> bool:
    """False when a detecting, blocking or explaining word governs the act at ``start``.

    Unlike :func:`~ask_fable.core.guard_reading.requested`, an act with no governing word at all
    counts as asked for: a frame's act is already the description of the thing wanted. With
    ``detail()`` (the question asks for working detail), an explaining word governs nothing; nor does
    a word in ``ignore`` (watching a person is part of finding where she lives, not a defence).
    """
    if prevented(clause, start) or examined(clause, start):
        return False
    words = words_before(clause, start, 14)
    act = tokens(clause[start : start + 30])[:1]
    reported = act and (_past(act[0]) or act[0] in cx.OBSERVED_AUX)
    if reported and len(words) <= 4 and words and words[-1] in cx.THIRD_SUBJECT:
        return False  # "a caller impersonated our CFO", "my ex keeps calling me": what another does, reported
    for i in range(len(words) - 1, -1, -1):
        word = words[i]
        if word in cx.OBSERVED_AUX and i and words[i - 1] in cx.THIRD_SUBJECT:
            return False  # "someone is using…": done by a third party, seen rather than asked for
        if word == "from" and any(w in _RECEIVED for w in words[max(0, i - 5) : i]):
            return False  # "our CFO got a call from a deepfaked CEO": received, not asked for
        if word in cx.THIRD_SUBJECT and len(words) - 4 <= i + 1 < len(words) and _past(words[i + 1]):
            return False  # "someone published a cracked build of it": done by another, reported
        if word in _AFTER and _happened_to_us(words[:i]):
            return False  # "we almost wired money after a deepfaked call": an event we went through
        if word == "to" and i and words[i - 1] == "how":
            return True  # "explain how to clone…": the steps are what is asked for
        if word == "how" and _explains(words[i + 1 : i + 3]):
            # "how does a deepfake CFO scam typically unfold": how it happens, not how to do it
            return detail is not None and detail()
        if word in _NOT_GOVERNING or (word in _NOUNS and i and words[i - 1] in _DETERMINERS):
            continue
        if i + 1 < len(words) and words[i + 1] in ("that", "which"):
            continue  # "a document that fetches…": the head of a relative clause is a noun, not a verb
        if i + 1 < len(words) and words[i + 1] == "me":
            continue  # "each time she blocks me": done to the asker, it governs nothing they ask for
        if word in ignore:
            continue
        if word == "against" and i and words[i - 1] in _ATTACKING:
            return True  # "an attack against their network"
        if word in lx.DEFEND and _named(clause, start, word):
            continue  # "a 'job test' zip": a name in quotes governs nothing
        if word in lx.DEFEND:
            if word in cx.EXPLAINING and detail is not None and detail():
                return True
            # "without tripping the alerts, copy…": the control is what is got around
            return any(w in cx.CIRCUMVENT for w in words[max(0, i - 3) : i])
        if word in lx.MAKE or word in lx.FIRST_PERSON:
            return True
    return True


#: Words that place an act as an event the asker's side went through ("…after a deepfaked call").
_AFTER = lx.words("after following during")
_OURS = lx.words("i we our my us")
_past = past


def _happened_to_us(words: list[str]) -> bool:
    """True when ``words`` end in something the asker's side did ("our finance team almost wired money")."""
    return any(_past(w) for w in words[-3:]) and any(w in _OURS for w in words[-7:])


#: "how does a…", "how do scammers…": a question about how a thing happens, unless the asker, "you",
#: "someone" or "people" is the subject (then it asks for the steps).
_EXPLAIN_AUX = lx.words("does do did is are was were")
_STEPS_SUBJECT = lx.words("i we you u someone somebody one people anyone me")


def _explains(after_how: list[str]) -> bool:
    return len(after_how) == 2 and after_how[0] in _EXPLAIN_AUX and after_how[1] not in _STEPS_SUBJECT


def _named(clause: str, start: int, word: str) -> bool:
    """True when ``word``, before ``start``, closes a quoted name ("a 'job test' zip")."""
    before = clause[max(0, start - 120) : start]
    return f"{word}'" in before and f"{word}'s" not in before


def _subject(clause: str, end: int) -> bool:
    """True when the words after a person make them the one who did something ("someone might have
    hidden…", "someone created a profile…", "my dad got a call…"), not the one it is done to."""
    after = [word for word in tokens(clause[end : end + 24]) if not word.isdigit()][:1]
    return bool(after) and (after[0] in cx.OBSERVED_AUX or _past(after[0]))


#: The frames, of which a question takes only those whose act its literals let through.
_PLAN = Plan((frame.act, frame) for frame in FRAMES)


def conduct(question: Question) -> tuple[str, str] | None:
    """The rule and label of the first frame the question asks for, or None."""
    excluded = question.excluded
    for frame in _PLAN.live(excluded):
        if frame.ruled_out(excluded) or not question.has(frame.act):
            continue
        if not frame.fits(question):
            continue
        for clause, match in question.distinct(frame.act):
            wanted = asked(clause.text, match.start(), question.detail, frame.abuse)
            if wanted and not _subject(clause.text, match.end()):
                return frame.rule, frame.label
    return None


def watched() -> list[Pattern]:
    """Every pattern the frames search a question for."""
    patterns: list[Pattern] = []
    for frame in FRAMES:
        patterns += (frame.act, *frame.unless, *(p for group in frame.needs for p in group))
    return patterns
