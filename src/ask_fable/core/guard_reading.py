"""How the guard reads a question: normalized text, clauses, and the role of the words before a term.

Every helper looks at a bounded window around a position, and whole-question facts are computed
at most once per question, so judging a question takes time linear in its length whatever it
repeats.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from itertools import pairwise
from operator import attrgetter

from ask_fable.core import guard_lexicon as lx
from ask_fable.core import guard_lexicon_crime as cx
from ask_fable.core.guard_scan import LazyPattern, Pattern

#: Dashes that separate clauses (en, em, figure dash, horizontal bar); hyphens join words.
_DASH = re.compile(r"[\u2012-\u2015]")
_INVISIBLE = re.compile(r"[\u00ad\u200b-\u200d\u2060\ufeff]")
#: Hyphens, underscores and slashes, each made a space (whitespace runs then collapse to one space).
_TO_SPACE = str.maketrans(dict.fromkeys("-\u2010\u2011_/", " "))
_CLAUSES = re.compile(r"[.;?!:]+(?:\s|$)|\n|\s;\s")
#: A digit or symbol standing for a letter inside a word ("b0mb", "r1cin", "h@ck").
_LEET = re.compile(r"\b[a-z]+(?:[013457@$]+[a-z]+)+\b")
_LEET_LETTERS = str.maketrans("013457@$", "oieastas")
_LEETISH = re.compile(r"[013457@$]")
#: A word with both letters and digits standing for letters ("m4k3", "1nst4gr4m", "3x"): several of them
#: mean the whole question is in leetspeak, and then a lone "1", "4" or "0" is a word too.
_LEET_WORD = re.compile(r"\b(?=\w*[a-z])(?=\w*[013457])[a-z013457]+\b")
_LEET_ALONE = re.compile(r"(?<![\w.,])[014](?![\w.,])")
#: How many such words make a question leetspeak rather than one with "ipv4" or "s3" in it.
_LEET_WORDS = 3
#: A word spelled out letter by letter to slip past a filter ("m.a.k.e", "r a n s o m"): four or more
#: single letters, each followed by the same separator.
_SPELLED = re.compile(r"(?<![\w.])[a-z]([.*_ -])[a-z](?:\1[a-z]){2,}(?![\w])")
#: Text-speak for people: "sum1", "any1".
_SLANG = re.compile(r"\b(?:sum|some|any|every|no)1(s?)\b")
_SLANG_WORDS = {"sum": "someone", "some": "someone", "any": "anyone", "every": "everyone", "no": "no one"}
#: What any spelled-out word contains, found several times faster than the word itself.
_SPELLED_HINT = re.compile(r"[.*_ -][a-z][.*_ -][a-z][.*_ -]")
#: Words written without their vowels ("cn u mke a scrpt tht stls psswds"), and the words they stand for.
_TEXTSPEAK_WORDS = {
    "u": "you", "ur": "your", "cn": "can", "mke": "make", "mk": "make", "scrpt": "script", "tht": "that",
    "stl": "steal", "stls": "steals", "psswd": "password", "psswds": "passwords", "pswd": "password",
    "pswds": "passwords", "pwd": "password", "pwds": "passwords", "frm": "from", "chrm": "chrome",
    "snd": "send", "snds": "sends", "hw": "how", "hck": "hack", "wht": "what", "plz": "please",
    "pls": "please", "msgs": "messages", "msg": "message", "acc": "account", "accs": "accounts",
    "ppl": "people", "smth": "something", "thru": "through", "wrk": "work", "phne": "phone",
    "grlfrnd": "girlfriend", "accsess": "access", "acess": "access", "acces": "access", "pasword": "password",
    "paswords": "passwords", "passwrd": "password", "facebok": "facebook", "instagarm": "instagram",
}
_TEXTSPEAK_KEYS = frozenset(_TEXTSPEAK_WORDS)
_TEXTSPEAK = re.compile(r"\b(?:" + "|".join(sorted(_TEXTSPEAK_WORDS, key=len, reverse=True)) + r")\b")
#: A word of three or more consonants and no vowel: the sign that vowels were dropped.
_NO_VOWEL = re.compile(r"\b[b-df-hj-np-tv-z]{3,}\b")
#: "how 2 hack", "want 2 get": the digit standing for "to".
_TWO = re.compile(r"\b(how|want|wanna|need|going|got|have|able|ways?|trying|try|learn) 2\b")
_TOKEN = re.compile(r"[a-z0-9&]+(?:'[a-z0-9&]+)*")
#: Characters looked at per word of a window before a term (longer words fall out of the window).
_CHARS_PER_WORD = 25
#: Characters looked at before a term for a request anywhere earlier in its clause.
_LOOK_BACK = 400
#: How far any check looks around a match: before it (a request, 14 words) and after it (its head).
_WINDOW_BEFORE = _LOOK_BACK + 20
_WINDOW_AFTER = 120

REQUEST = LazyPattern(
    r"\b(?:" + "|".join(sorted(lx.MAKE)) + r")\b|\bhow (?:do|can|would|should|could|to)\b|\bways? to\b|"
    r"\bsteps? to\b|\binstructions\b|\bwalk me\b|\btell me\b|\bteach me\b|\bi\b|\bwe\b|"
    r"\b(?:best|easiest|fastest|cheapest) (?:way|story|script|setup|approach|method|excuse|lie|pitch|"
    r"line)s?\b"
)
CODE_REQUEST = LazyPattern(r"\b" + lx.CODE_REQUEST + r"(?!\w)")
#: The asker asks how to help, protect, detect or recover, or what to do now: a defender's or a victim's
#: question, which the classifier alone does not refuse (the judge still reads it).
DEFENSIVE_ASK = LazyPattern(
    r"\b(?:how|what) (?:do|can|should|could|would) (?:i|we) (?:best )?(?:help|protect|detect|report|recover|"
    r"secure|prevent|spot|warn|respond|support)\b|\bwhat (?:should|do|can) (?:i|we) do\b|"
    # keeping oneself out of someone's reach: "…so my ex can't find me" (not out of the law's), with the
    # request it is the purpose of
    r"(?:\bhow (?:do|can|could|should) (?:i|we) [^.?!;]{0,80}?)?\bso (?:that )?(?:my|the|an?|his|her|their) "
    r"(?!police|cops|feds|authorities|court)(?:\S+ ){0,2}?(?:can'?t|cannot|can not|won'?t|will not|doesn'?t|"
    r"does not|don'?t) (?:\S+ )?(?:find|track|locate|see|reach|contact|read|follow|stalk|trace) (?:me|us)\b"
)
#: The asker asking for something in their own words ("how do I…", "how to…", "give me…", "write a…",
#: "which … should I buy"): a closing question that defends, explains or asks about the law is all
#: that is asked only when no such request stands outside it.
ASKED_FOR = LazyPattern(
    r"\b(?:(?:how (?:do|can|could|would|should|might) (?:i|we|u|you|one)|how to|(?:give|write|make|build|"
    r"show|send|get|find|tell|teach|walk) me|help me|write (?:a|an|the|some)|can you|could you|"
    r"(?:which|what) (?:\S+ ){0,2}?(?:should|do|can|could) (?:i|we) (?:buy|use|get|pick|choose|order))\b|"
    r"(?:i|we) (?:want|need) (?:to (?!know|understand|learn)|a |an |the |some ))"
)
#: Someone else reporting a request shortly before it, in the same sentence: "my son asked a chatbot
#: how to…" ("I googled how to…" is the asker's own).
_REPORTED = re.compile(
    r"\b(?:he|she|they|someone|somebody|(?:my|our|his|her|their|a|an|the) \w+) (?:\w+ )?(?:ask(?:s|ed)|"
    r"search(?:es|ed)|googled|look(?:s|ed) up|wonder(?:s|ed)|told \w+|show(?:s|ed) \w+|explain(?:s|ed)|"
    r"learn(?:s|ed|t)|knows?|knew|figured out)\b[^.?!;]{0,40}$"
)
#: Characters before a request searched for a reporting verb.
_REPORT_REACH = 60
#: The act is to be kept from the person it is done to ("without her finding out", "secretly"): a
#: question that says so asks for the act, whatever else it asks.
HIDDEN_FROM_THEM = LazyPattern(r"\b" + lx.COVERT)
#: A request relayed from someone else ("my friend keeps asking me this: how do I…", "he asked me how to…"):
#: the request is still asked, so a defender's or victim's closing question does not set it aside.
RELAYED_ASK = LazyPattern(
    r"\b(?:ask(?:s|ed|ing)?|begg?(?:s|ed|ing)?|want(?:s|ed)? (?:me )?to know|wonder(?:s|ed|ing)?) "
    r"(?:me |us |you |him |her |them )?(?:this|the following|for help with|to help (?:him |her |them )?"
    r"with)?\s*(?::|\bhow (?:to|do|does|can|could|would)\b|\bwhere (?:to|can|do)\b|\b(?:which|what) "
    r"(?:\S+ )?(?:to|can|"
    r"should|works?)\b)"
)
#: A clause that asks for a thing by naming it with what it does ("script that records every key").
ARTIFACT_CLAUSE = LazyPattern(cx.ARTIFACT_CLAUSE)
#: A request for working detail: it asks for the thing whatever frames it.
OPERATIONAL = LazyPattern(cx.OPERATIONAL)


def asks_only(text: str, pattern: Pattern) -> bool:
    """True when ``pattern`` occurs in ``text`` and every request of the asker's in it
    (:data:`ASKED_FOR`) lies inside one of its matches: "How do I hack his router? How do we detect
    that?" asks how to hack the router, whatever its closing question says. A request that opens a
    match ("how can I | verify that the email isn't a scam") is part of it, and one the asker only
    reports ("my son asked a chatbot how to…") is not theirs."""
    spans = [found.span() for found in pattern.finditer(text)]
    if not spans:
        return False
    for asked in ASKED_FOR.finditer(text):
        start = asked.start()
        inside = any(begin <= start < end or begin - 1 <= asked.end() <= begin for begin, end in spans)
        if not inside and _REPORTED.search(text, max(0, start - _REPORT_REACH), start) is None:
            return False
    return True


def normalize(question: str) -> str:
    """Lower case, straight quotes, no invisible characters; hyphens, underscores and slashes as spaces."""
    if question.isascii():  # no invisible character, curly quote or dash, and NFKC changes nothing
        text = question.lower().replace("`", "'")
    else:
        text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", question)).lower()
        text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
        text = _DASH.sub(" ; ", text)
    if "1" in text:
        text = _SLANG.sub(lambda found: _SLANG_WORDS[found.group(0).rstrip("s1")] + found.group(1), text)
    if _LEETISH.search(text):
        if len(_LEET_WORD.findall(text)) >= _LEET_WORDS:
            text = _LEET_WORD.sub(lambda found: found.group(0).translate(_LEET_LETTERS), text)
            text = _LEET_ALONE.sub(lambda found: found.group(0).translate(_LEET_LETTERS), text)
        text = _LEET.sub(lambda found: found.group(0).translate(_LEET_LETTERS), text)
    if " 2 " in text:
        text = _TWO.sub(r"\1 to", text)
    if _NO_VOWEL.search(text) or not _TEXTSPEAK_KEYS.isdisjoint(text.split()):
        text = _TEXTSPEAK.sub(lambda found: _TEXTSPEAK_WORDS[found.group(0)], text)
    if _SPELLED_HINT.search(text):
        text = _SPELLED.sub(lambda found: found.group(0).replace(found.group(1), ""), text)
    return " ".join(text.translate(_TO_SPACE).split())


def tokens(text: str) -> list[str]:
    """The words of ``text``, apostrophes kept inside (``ex's``) and dropped at the ends."""
    return _TOKEN.findall(text)


def words_before(clause: str, start: int, count: int) -> list[str]:
    """Up to ``count`` whole words that end before ``start``."""
    begin = max(0, start - _CHARS_PER_WORD * (count + 1))
    found = tokens(clause[begin:start])
    if begin and found:
        found = found[1:]  # the first word may be cut in half
    return found[-count:]


#: A pattern's ASCII form, for a text that is all ASCII.
_ASCII_FORM = attrgetter("ascii")


def _same(pattern: Pattern) -> Pattern:
    return pattern


class _Facts:
    """Searches over one text, each run at most once, and never for an ``excluded`` pattern (one
    known not to occur in it, by ``id``).

    Results are keyed by the pattern's ``id``: hashing a compiled pattern hashes its whole source
    every time, which for the guard's long alternations costs more than most searches.
    """

    def __init__(self, text: str, excluded: frozenset[int] = frozenset()) -> None:
        self.text = text
        self.excluded = excluded
        #: The form each pattern is searched in: on ASCII text its ASCII form (:attr:`LazyPattern.ascii`),
        #: which matches at the same places, faster.
        self._form: Callable[[Pattern], Pattern] = _ASCII_FORM if text.isascii() else _same
        self._facts: dict[int | str, bool] = {}
        self._spans: dict[int, list[tuple[int, int]]] = {}

    def may_match(self, pattern: Pattern) -> bool:
        """False when ``pattern`` is known not to occur in the text without running it."""
        return id(pattern) not in self.excluded

    def has(self, pattern: Pattern) -> bool:
        """True when ``pattern`` occurs anywhere in the text."""
        key = id(pattern)
        fact = self._facts.get(key)
        if fact is None:
            fact = key not in self.excluded and self._form(pattern).search(self.text) is not None
            self._facts[key] = fact
        return fact

    def has_any(self, *patterns: Pattern) -> bool:
        """True when any of ``patterns`` occurs in the text."""
        has = self.has
        # A loop rather than any() over a generator, which costs more than the few lookups it makes.
        for pattern in patterns:  # noqa: SIM110
            if has(pattern):
                return True
        return False

    def has_all(self, *patterns: Pattern) -> bool:
        """True when every one of ``patterns`` occurs in the text."""
        has = self.has
        for pattern in patterns:  # noqa: SIM110
            if not has(pattern):
                return False
        return True

    def first_spans(self, pattern: Pattern) -> list[tuple[int, int]]:
        """Where ``pattern`` first occurs, up to two places (enough to tell one from another)."""
        spans = self._spans.get(id(pattern))
        if spans is None:
            spans = self._spans[id(pattern)] = []
            for match in self._form(pattern).finditer(self.text) if self.may_match(pattern) else ():
                spans.append(match.span())
                if len(spans) == 2:
                    break
        return spans


class Clause(_Facts):
    """One clause of a question.

    A search the whole question already answered is not run again: a pattern absent from the
    question is absent from each clause, and a question of one clause is that clause.
    """

    def __init__(self, text: str, excluded: frozenset[int], whole: _Facts, only: bool) -> None:
        super().__init__(text, excluded)
        self._whole = whole._facts
        self._only = only

    def has(self, pattern: Pattern) -> bool:
        """True when ``pattern`` occurs anywhere in the clause."""
        key = id(pattern)
        fact = self._facts.get(key)
        if fact is None:
            known = self._whole.get(key)
            if known is False or (known is not None and self._only):
                fact = known
            else:
                fact = key not in self.excluded and self._form(pattern).search(self.text) is not None
            self._facts[key] = fact
        return fact

    def bare_request(self) -> bool:
        """True for a short clause with no verb that asks for code ("keylogger in python pls")."""
        fact = self._facts.get("bare")
        if fact is None:
            words = tokens(self.text) if len(self.text) <= 200 else []
            fact = 0 < len(words) <= 8 and not any(w in lx.DEFEND for w in words) and self.has(CODE_REQUEST)
            self._facts["bare"] = fact
        return fact


Matches = Iterator[tuple[Clause, re.Match[str]]]


class Question(_Facts):
    """A question, already normalized (:func:`normalize`), cut into clauses.

    ``excluded`` holds the ids of patterns known not to occur in the whole question; a clause,
    being part of the question, shares it.
    """

    def __init__(self, text: str, excluded: frozenset[int] = frozenset()) -> None:
        super().__init__(text, excluded)
        parts = [part for part in _CLAUSES.split(text) if part.strip()]
        self.clauses = [Clause(part, excluded, self, len(parts) == 1) for part in parts]
        self._counts: dict[int, int] = {}

    def matches(self, pattern: Pattern) -> Matches:
        """Each match of ``pattern`` with its clause; no clause is searched when the question has none."""
        if self.has(pattern):
            searched = self._form(pattern)
            for clause in self.clauses:
                if clause.has(pattern):
                    for match in searched.finditer(clause.text):
                        yield clause, match

    def distinct(self, pattern: Pattern) -> Matches:
        """Like :meth:`matches`, without a match whose clause and surroundings (as far as any role check
        looks) repeat an earlier one's: a question repeating one phrase is judged once per phrase."""
        seen: set[tuple[int, int, int, str]] = set()
        for clause, match in self.matches(pattern):
            text = clause.text
            begin = max(0, match.start() - _WINDOW_BEFORE)
            # Where the match sits in its window too: two terms in one short clause share a window.
            window = text[begin : match.end() + _WINDOW_AFTER]
            key = (id(clause), match.start() - begin, match.end() - begin, window)
            if key not in seen:
                seen.add(key)
                yield clause, match

    def detail(self) -> bool:
        """True when the question asks anywhere for working detail (exact steps, working code)."""
        return self.has(OPERATIONAL)

    def clauses_with(self, pattern: Pattern) -> int:
        """How many clauses contain ``pattern``."""
        count = self._counts.get(id(pattern))
        if count is None:
            count = self._counts[id(pattern)] = sum(clause.has(pattern) for clause in self.clauses)
        return count


def role_before(
    clause: str, start: int, window: int = 8, stop: bool = True, ignore: frozenset[str] = frozenset()
) -> str | None:
    """The role the nearest governing word before ``start`` gives the words there.

    ``make`` (the asker wants it produced), ``defend`` (detected, blocked, analysed, explained),
    ``actor`` (a first-person subject or a request noun with no verb in between) or None. With
    ``stop``, a relative word (``that``, ``which``…) ends the search: what follows it belongs to a
    clause whose verb was already passed. Words in ``ignore`` govern nothing (for an act whose own
    verb is one: testing stolen cards is using them).
    """
    return governing(clause, start, window, stop, ignore)[0]


def governing(
    clause: str, start: int, window: int = 8, stop: bool = True, ignore: frozenset[str] = frozenset()
) -> tuple[str | None, str]:
    """The role :func:`role_before` reads, with the word that gives it ("" for none)."""
    words = words_before(clause, start, window)
    for i in range(len(words) - 1, -1, -1):
        word = words[i]
        previous = words[i - 1] if i else ""
        if word in ignore:
            continue
        if word in ("engineer", "engineering") and previous == "reverse":
            return "defend", word
        if word == "to" and previous == "how":
            return "actor", word
        if word == "how" and words[i + 1 : i + 3] and _asks_for_steps(words[i + 1 : i + 3]):
            return "actor", word
        if word == "how" and i + 1 < len(words) and (words[i + 1] in _HOW_ME or words[i + 1] in lx.MAKE):
            return "actor", word  # "tell me how you made it", "how make": the steps are asked for
        if word == "how" and i + 1 == len(words) and _makes(clause, start):
            return "actor", word  # "how make drug…": the act itself starts with the making
        if word in lx.MAKE:
            if previous == "from" and any(w in _STOPPING for w in words[max(0, i - 4) : i - 1]):
                return "defend", word  # "stop fraudsters from buying…": what is prevented
            return "make", word
        if word == "against" and previous in _ATTACKING:
            return "make", word  # "a Kerberoasting attack against a company network"
        if word in _WHICH and _asks_for_means([*words[i + 1 :], *tokens(clause[start : start + 60])]):
            return "actor", word  # "which stresser can take…": a means to do it is asked for
        if word in lx.DEFEND:
            # "bypass the fraud checks", "without triggering the monitoring": the control is what is
            # got around, so the words after it are what the asker wants done.
            if any(w in cx.CIRCUMVENT for w in words[max(0, i - 3) : i]):
                return "make", word
            return "defend", word
        if word in lx.FIRST_PERSON:
            return "actor", word
        if stop and word in lx.STOP:
            if word in ("when", "if", "whether") and any(w in lx.DEFEND for w in words[max(0, i - 3) : i]):
                return "defend", word  # "detect when someone turns off…", "warn a user when…": watched for
            return None, word
        if word == "then" and previous == "and":
            return None, word  # "stop it from tracking me and then get into…": a new act begins
    return None, ""


#: "How would someone…", "how do people…": a request for the steps, whoever is said to take them.
_HOW_AUX = frozenset(("would", "could", "can", "do", "does", "might", "should"))
_HOW_SUBJECT = frozenset(("someone", "somebody", "people", "one", "anyone"))
_HOW_ME = frozenset(("you", "u", "i", "we"))
_STOPPING = lx.words("stop stops prevent prevents block blocks keep keeps deter ban")
_ATTACKING = lx.words("attack attacks attacking launch launching run running use using")
_RELATIVE = frozenset(("whose", "who", "whom", "that", "which", "where"))
_PREPOSITIONS = frozenset(("from", "of", "in", "on", "at", "with", "for", "to", "by", "into", "about", "off"))


def _makes(clause: str, start: int) -> bool:
    """True when the words at ``start`` begin with a making verb ("make drug…")."""
    first = tokens(clause[start : start + 20])[:1]
    return bool(first) and first[0] in lx.MAKE


_WHICH = frozenset(("which", "what"))
_MEANS_VERB = frozenset(("can", "could", "will", "would", "gives", "works", "lets"))


def _asks_for_means(after: list[str]) -> bool:
    """True when "which"/"what" starts a noun phrase a modal follows ("which stresser can…", "what
    booter would…"): the question asks for a means to the act, not what the act is."""
    if not after or after[0] in lx.STOP or after[0] in _NOT_NOUN:
        return False
    if not any(word in _MEANS_VERB for word in after[1:3]):
        return False
    # for the asker, or against someone's: "…take my ex's stream offline", "…can i use on him"
    return any(word in _ASKER or (word.endswith("'s") and word not in _NOT_POSSESSIVE) for word in after)


_NOT_NOUN = frozenset(("is", "are", "was", "were", "does", "do", "did", "if", "happens", "kind", "kinds",
                       "types", "type"))
_ASKER = frozenset(("i", "me", "my", "i'd", "i'm"))
_NOT_POSSESSIVE = frozenset(("it's", "what's", "that's", "there's", "here's", "let's", "who's", "one's",
                             "he's", "she's"))


def _asks_for_steps(after_how: list[str]) -> bool:
    return len(after_how) == 2 and after_how[0] in _HOW_AUX and after_how[1] in _HOW_SUBJECT


def neutral_head(clause: str, end: int) -> bool:
    """True when one of the two words after a term makes it the thing detected or studied."""
    after = tokens(clause[end : end + 40])[:2]
    if after and (after[0] in _PREPOSITIONS or after[0] in _RELATIVE):
        return False  # "clone her voice from family videos", "cards of customers whose data…": not its head
    return any(word in lx.NEUTRAL_HEADS for word in after)


def observed(clause: str, start: int, window: int = 4) -> bool:
    """True when a third party is the subject of the act at ``start`` ("if someone is using…", "a tracker
    someone might have hidden"): something seen done, not something the asker asks to do."""
    words = words_before(clause, start, window)
    if words and words[-1] in cx.ACTORS_IN_A_STORY and (len(words) < 2 or words[-2] not in _HOW_AUX | {"to"}):
        return True  # "the villain hacks a bank": what a character does
    return any(
        word in cx.THIRD_SUBJECT and following in cx.OBSERVED_AUX
        for word, following in pairwise(words)
    )


#: Verbs that check a thing ("tell whether…", "find out if…"): what follows is examined, not asked for.
_CHECKING = frozenset(
    ("tell", "check", "verify", "know", "see", "determine", "confirm", "spot", "out", "figure", "detect")
)
_CHECKED_AUX = frozenset(("is", "are", "was", "were", "has", "have", "been", "being"))


def examined(clause: str, start: int) -> bool:
    """True when the act at ``start`` is what something is checked for ("how can I tell whether an
    extension I installed is stealing my cookies", "verify whether a QR code is a scam"): a checking
    verb, then "whether" or "if", then a subject and a verb of being right before the act."""
    words = words_before(clause, start, 12)
    for index in range(len(words) - 1, 0, -1):
        if words[index] in ("whether", "if"):
            rest = words[index + 1 :]
            return words[index - 1] in _CHECKING and len(rest) >= 2 and not _CHECKED_AUX.isdisjoint(rest[-2:])
    return False


def specified(clause: str, start: int) -> bool:
    """True when the act at ``start`` is what the thing asked for must do: the clause names the thing
    by what it does ("script that records…"), or a modal says so ("it should also encrypt…")."""
    if ARTIFACT_CLAUSE.match(clause) is not None and clause.find(" ", 0, start) >= 0:
        return True
    before = words_before(clause, start, 3)
    # "it copies the user's keys to my server": what the thing described does
    if any(word in cx.SPEC_MODAL for word in before) or (bool(before) and before[-1] == "it"):
        return True
    # "my screensaver app should also secretly use…": a modal with the thing asked for as its subject
    wider = words_before(clause, start, 12)
    return any(w in cx.SPEC_MODAL and v in cx.ARTIFACT_NOUNS for v, w in pairwise(wider))


#: What "without" is followed by when it hides an act rather than leaves one undone.
_UNNOTICED = lx.words(
    "noticing knowing seeing finding triggering tripping getting being leaving alerting flagging detecting"
)
_CANNOT_WORDS = frozenset(("can't", "cannot", "won't", "couldn't", "never", "cant", "wont"))
_CANNOT = LazyPattern(r"\b(?:can'?t|cannot|won'?t|couldn'?t|(?:is|are) unable|never|no longer)\b")


def prevented(clause: str, start: int) -> bool:
    """True when the act at ``start`` is what a measure exists to stop ("…a callback procedure so a
    deepfaked CEO can't get a wire approved"): "so" before it, a "can't" right after."""
    before = words_before(clause, start, 4)
    if "without" in before[-3:-1]:
        after = before[before.index("without", len(before) - 3) + 1]
        if after.endswith("ing") and after not in _UNNOTICED:
            return True  # "verify callers without asking for their SSN": what is not done
    if "so" in before and _CANNOT.search(clause, start, start + 60) is not None:
        return True
    # "so ransomware with domain admin can't delete the backups": the act is what cannot happen
    return bool(before) and before[-1] in _CANNOT_WORDS and "so" in words_before(clause, start, 8)


#: Past forms that are not "ed" words, and "ed" words that tell an intention rather than an event.
IRREGULAR_PAST = lx.words(
    "got put sent took stole made built wrote lost paid gave found saw fell ran sold left hit came broke"
)
INTENDED = lx.words("wanted needed tried planned decided hoped intended wished asked")


def past(word: str) -> bool:
    """True for a verb in the past tense ("published", "got"): what it tells already happened."""
    return ((word.endswith("ed") and len(word) > 4) or word in IRREGULAR_PAST) and word not in INTENDED


#: Words right before an act that make the asker the one it was done to ("I lost money on a fake
#: investment site", "my mom fell for a scam call", "we were the victims of an invoice fraud").
_SUFFERED = (("lost", "money", "on"), ("lost", "money", "to"), ("fell", "for"), ("scammed", "by"),
             ("victim", "of"), ("victims", "of"), ("tricked", "by"), ("targeted", "by"))


def reported(clause: str, start: int) -> bool:
    """True when the act at ``start`` is told in the past with a third party as its subject, right
    before it ("how can I tell if someone cloned my SIM card"), or as what the asker's side suffered
    ("I lost money on a fake crypto site"): what happened, reported, not asked for."""
    before = words_before(clause, start, 4)
    suffered = before[:-1] if before and before[-1] in ("a", "an", "the", "some", "this", "that") else before
    if any(tuple(suffered[-len(words) :]) == words for words in _SUFFERED):
        return True
    act = tokens(clause[start : start + 30])[:1]
    return bool(act) and past(act[0]) and bool(before) and before[-1] in cx.THIRD_SUBJECT


def _never() -> bool:
    return False


def requested(
    clause: str, start: int, ignore: frozenset[str] = frozenset(), detail: Callable[[], bool] = _never
) -> bool:
    """True when the words before ``start`` ask for what follows, rather than to detect or explain it.

    ``detail()`` says the question asks elsewhere for working detail ("write his explanation with
    every real step"): an act governed only by an explaining word is then asked for all the same.
    """
    role, word = governing(clause, start, 14, True, ignore)
    if prevented(clause, start) or examined(clause, start):
        return False
    if role == "defend":
        # "explain, with working code, how…"
        return OPERATIONAL.search(clause) is not None or (word in cx.EXPLAINING and detail())
    if reported(clause, start):
        return False
    if role in ("make", "actor") or specified(clause, start):
        return not observed(clause, start)
    # A defending verb governs the whole sentence after it ("how do we detect when a member's account is
    # being used as a money mule after a romance scam"), however long the clause it governs.
    if role_before(clause, start, window=24, stop=False, ignore=ignore) == "defend":
        return False
    asks = REQUEST.search(clause, max(0, start - _LOOK_BACK), start) is not None
    return asks and not observed(clause, start)
