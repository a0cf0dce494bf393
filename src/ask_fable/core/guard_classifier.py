"""The guard's second reader: a linear text classifier over a question's words and word pairs.

The intent judge (:mod:`ask_fable.core.guard_intent`) reads roles; this reads what a question is
about, as a weighted sum learned from the labelled corpus (``benchmarks/guard_train.py`` trains it
with scikit-learn and writes :data:`MODEL_FILE`). Here it is only a sum: the question's normalized
words and adjacent word pairs (the same :func:`~ask_fable.core.guard_reading.tokens` the judge uses)
are looked up in an explicit vocabulary, so no numeric library is imported when a server starts.

A question in another script is read the same way: its words are runs of letters of any alphabet,
and a script written without spaces between words (Chinese, Japanese, Korean, Thai) is read as
overlapping pairs of characters, since no word boundary can be found without a dictionary.

A question's score is ``bias + sum(weights) / sqrt(n)``, where ``n`` counts the features found in
the vocabulary (each question's feature vector has unit length, as in training). Above
``refuse_above`` the classifier refuses what the judge let through. A low score alone never clears
what the judge refused: the classifier's strongest weights are words like "our" and "own", which
anyone can add to a request, while the judge reads whose system a request is aimed at. The guard
sets a refusal aside (for some rules only, :data:`ask_fable.core.guard_rules.SECOND_READ_RULES`) when
:meth:`Classifier.clears` the question: the whole of it scores below ``clear_below`` *and* every
stretch of :data:`WINDOW` words scores below ``window_clear_below``, so that padding a request with
engineering text, which lowers the whole question's score, leaves the stretch that asks for harm as
it was. The thresholds were set from scores on splits the model was not trained on, never from the
scores it gives its own training questions.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from itertools import pairwise

from ask_fable.core.guard_reading import tokens

__all__ = ["FEATURES_VERSION", "MIN_FOUND", "MODEL_FILE", "WINDOW", "Classifier", "features", "load", "words"]

#: The name of the trained model inside this package.
MODEL_FILE = "guard_classifier.json"
#: How features are made from a normalized question; a model records the version it was trained with.
FEATURES_VERSION = "normalize+words(any script, unspaced as character pairs)+pairs/v2"

#: Words in each stretch of a question that :meth:`Classifier.clears` scores on its own.
WINDOW = 8
#: Features the model knows that a question must hold for the classifier to refuse it alone.
MIN_FOUND = 3
#: Combining marks that belong inside a word (Python's ``\w`` leaves them out): Latin accents, Arabic
#: vowel signs, and the Indic and Thai blocks, whose vowel signs are marks.
_MARKS = "\u0300-\u036f\u064b-\u065f\u0670\u0900-\u0dff\u0e00-\u0e7f"
#: A word in any alphabet: letters, digits and marks (and ``&``, as in the judge's words), apostrophes
#: inside.
_WORD = re.compile(f"(?:[^\\W_]|[&{_MARKS}])+(?:'(?:[^\\W_]|[&{_MARKS}])+)*")
#: Scripts written without spaces between words: kana, CJK ideographs, Hangul syllables and Thai.
_UNSPACED_CHARS = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNSPACED_RUN = re.compile(f"[{_UNSPACED_CHARS}]+|[^{_UNSPACED_CHARS}]+")
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}]")


def words(text: str) -> list[str]:
    """The words of a normalized question in order, as the classifier reads them.

    ASCII text has the judge's :func:`~ask_fable.core.guard_reading.tokens`. Other text has runs of
    letters of any alphabet, and a run in an unspaced script becomes its overlapping character pairs.
    """
    if text.isascii():
        return tokens(text)
    found: list[str] = []
    for word in _WORD.findall(text):
        if _UNSPACED.search(word) is None:
            found.append(word)
            continue
        for run in _UNSPACED_RUN.findall(word):
            if len(run) > 1 and _UNSPACED.match(run):
                found.extend(run[i:i + 2] for i in range(len(run) - 1))
            else:
                found.append(run)
    return found


def features(text: str) -> set[str]:
    """The distinct features of a normalized question: each word, and each adjacent pair as ``"a b"``."""
    found_words = words(text)
    found = set(found_words)
    found.update(f"{first} {second}" for first, second in pairwise(found_words))
    return found


@dataclass(frozen=True)
class Category:
    """One rule's strongest positive weights over the same features: the rule a classifier refusal
    cites is the one whose weights sum highest over the question's features."""

    rule: str
    weights: dict[str, float]

    def total(self, found: set[str]) -> float:
        """The sum of this rule's weights over the features ``found``."""
        return math.fsum(weight for feature, weight in self.weights.items() if feature in found)


@dataclass(frozen=True)
class Classifier:
    """A trained linear model: its vocabulary's weights, its bias and its threshold.

    ``words`` holds each word's weight and ``pairs`` each pair's under its first word, as the model
    file stores them, so that scoring looks pairs up without building a string for each.
    """

    words: dict[str, float]
    pairs: dict[str, dict[str, float]]
    bias: float
    refuse_above: float
    rules: dict[str, dict[str, float]]
    clear_below: float = float("-inf")
    window_clear_below: float = float("-inf")

    @cached_property
    def weights(self) -> dict[str, float]:
        """Every feature's weight, a pair's under ``"first second"``."""
        found = dict(self.words)
        found.update((f"{first} {second}", weight) for first, following in self.pairs.items()
                     for second, weight in following.items())
        return found

    @cached_property
    def categories(self) -> tuple[Category, ...]:
        """One category model per rule, in the rules' order (built the first time a refusal cites one)."""
        return tuple(Category(rule, weights) for rule, weights in sorted(self.rules.items()))

    def score(self, text: str) -> float:
        """How harmful the normalized question reads: above 0 more likely harmful than not.

        The same sum as over :func:`features`: each distinct word and adjacent pair found counts once.
        """
        return self._score(self._found(words(text)))

    def score_words(self, found_words: list[str]) -> float:
        """:meth:`score` of a question already split into :func:`words`."""
        return self._score(self._found(found_words))

    def refuses(self, text: str) -> bool:
        """True when the normalized question scores above ``refuse_above`` on at least
        :data:`MIN_FOUND` features the model knows: a reply of a few words ("And releasing them?")
        gives it too little to judge, and is left to the judge."""
        found = self._found(words(text))
        return len(found) >= MIN_FOUND and self._score(found) > self.refuse_above

    def _found(self, found_words: list[str]) -> list[float]:
        distinct = set(found_words)
        found = [weight for weight in map(self.words.get, distinct) if weight is not None]
        # Repeated words may repeat a pair; only then are the pairs made distinct.
        adjacent = pairwise(found_words) if len(distinct) == len(found_words) else set(pairwise(found_words))
        pairs = self.pairs.get
        for first, second in adjacent:
            following = pairs(first)
            if following is not None:
                weight = following.get(second)
                if weight is not None:
                    found.append(weight)
        return found

    def _score(self, found: list[float]) -> float:
        if not found:
            return self.bias
        return self.bias + math.fsum(found) / math.sqrt(len(found))

    def clears(self, text: str) -> bool:
        """True when the whole normalized question and every stretch of :data:`WINDOW` words in it
        read as clearly benign: below ``clear_below`` and ``window_clear_below``."""
        found_words = words(text)
        if self.score_words(found_words) >= self.clear_below:
            return False
        last = max(len(found_words) - WINDOW, 0)
        window = self.window_clear_below
        return all(self.score_words(found_words[i:i + WINDOW]) < window for i in range(last + 1))

    def category(self, text: str) -> str:
        """The rule whose category model scores the question highest."""
        found = features(text)
        return max(self.categories, key=lambda category: category.total(found)).rule


@lru_cache(maxsize=1)
def load() -> Classifier:
    """The classifier shipped in this package, read once per process, the first time a question needs it.

    The file holds the weights in the form scoring reads them (words, and pairs by their first word),
    so loading is one JSON parse.
    """
    data = json.loads(resources.files("ask_fable.core").joinpath(MODEL_FILE).read_text(encoding="utf-8"))
    if data["features_version"] != FEATURES_VERSION:
        raise ValueError(f"{MODEL_FILE} was trained on features {data['features_version']!r}, "
                         f"not {FEATURES_VERSION!r}: run benchmarks/guard_train.py")
    return Classifier(
        words=data["words"],
        pairs=data["pairs"],
        bias=float(data["bias"]),
        refuse_above=float(data["refuse_above"]),
        rules=data["categories"],
        clear_below=float(data["clear_below"]),
        window_clear_below=float(data["window_clear_below"]),
    )
