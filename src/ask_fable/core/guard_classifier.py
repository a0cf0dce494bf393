"""The guard's second reader: a linear text classifier over a question's words and word pairs.

The intent judge (:mod:`ask_fable.core.guard_intent`) reads roles; this reads what a question is
about, as a weighted sum learned from the labelled corpus (``benchmarks/guard_train.py`` trains it
with scikit-learn and writes :data:`MODEL_FILE`). Here it is only a sum: the question's normalized
words and adjacent word pairs (the same :func:`~ask_fable.core.guard_reading.tokens` the judge uses)
are looked up in an explicit vocabulary, so no numeric library is imported when a server starts.

A question's score is ``bias + sum(weights) / sqrt(n)``, where ``n`` counts the features found in
the vocabulary (each question's feature vector has unit length, as in training). Above
``refuse_above`` the classifier refuses what the judge let through. It never clears what the judge
refused: its strongest weights are words like "our" and "own", which anyone can add to a request,
while the judge reads whose system a request is aimed at. The threshold was set from scores on
splits the model was not trained on, never from the scores it gives its own training questions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from itertools import pairwise

from ask_fable.core.guard_reading import tokens

__all__ = ["FEATURES_VERSION", "MODEL_FILE", "Classifier", "features", "load"]

#: The name of the trained model inside this package.
MODEL_FILE = "guard_classifier.json"
#: How features are made from a normalized question; a model records the version it was trained with.
FEATURES_VERSION = "normalize+tokens/words+pairs/v1"


def features(text: str) -> set[str]:
    """The distinct features of a normalized question: each word, and each adjacent pair as ``"a b"``."""
    words = tokens(text)
    found = set(words)
    found.update(f"{first} {second}" for first, second in pairwise(words))
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
        found_words = tokens(text)
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
        if not found:
            return self.bias
        return self.bias + math.fsum(found) / math.sqrt(len(found))

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
    )
