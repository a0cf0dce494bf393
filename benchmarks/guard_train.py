"""Train the guard's classifier (src/ask_fable/core/guard_classifier.json) from the labelled corpus.

Run: python benchmarks/guard_train.py            write the model trained on every split, and the gate table
     python benchmarks/guard_train.py --gates    write only the gate table (after changing a pattern)
     python benchmarks/guard_train.py --check    exit 1 unless the shipped files are what this writes
     python benchmarks/guard_train.py --estimate the held-out figures: what to expect of a new split

Needs scikit-learn (a dev dependency); the guard itself only reads the JSON this writes. It also
writes the table of the literals each of the judge's patterns needs
(src/ask_fable/core/guard_gates.json, :mod:`ask_fable.core.guard_scan`), so that no process parses
the patterns to work them out.

The model is a logistic regression over each question's normalized words and word pairs
(:func:`ask_fable.core.guard_classifier.features`), each vector scaled to unit length, over the
features found in at least three training questions. Besides the corpus's splits it learns from
``tests/guard_corpus/prose/benign.txt`` (engineering statements and fragments, weighted down), so
that text unlike a question is not read as harmful for that alone. Its threshold comes from scores
on questions the model did not see: each split is scored by a model trained on the other splits, and
``refuse_above`` is the score only 1.25 % of those benign questions exceed (many of them are
look-alikes written to be hard: on a blind split the classifier alone refuses far fewer). A
category model (one
score per rule, trained on the harmful questions the judge refuses, labelled with the judge's rule)
names the rule a classifier refusal cites; it keeps each rule's strongest positive weights, and
the rule whose kept weights sum highest over a question's features is the one cited.

Besides the required splits it learns from the blind folders kept beside them (``blind4`` to
``blind8``), from ``tests/guard_corpus/tuning/``, questions written to teach it the structure of a
request (what is produced, how, against whom) in words the other splits do not use, and from every
folder of ``tests/guard_corpus/training/``: questions written by topic (intrusion, money, physical
harm, people, disguises, other languages, look-alikes, long and terse ones) by writers who read
neither the guard nor its corpus.

``--estimate`` is the honest measure: it trains on every split but the last blind one
(``blind8``), sets the thresholds the same way from those splits only, and measures the judge (with
the classifier's second reading of its refusals), the classifier and both together on ``blind8``;
then the same without ``blind7`` and ``blind8``, measured on each. The judge was tuned on both, so
only the classifier's figures there are held out. Last, it trains on every other line of the prose
and counts how many of the rest the classifier alone would refuse.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

import numpy as np  # noqa: E402
from scipy.sparse import csr_matrix  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.preprocessing import normalize as unit_rows  # noqa: E402
from tests.guard_corpus import CORPUS_DIR, SPLITS, load, read_questions  # noqa: E402

from ask_fable.core.guard import SECOND_READ_RULES, asks_to_defend  # noqa: E402
from ask_fable.core.guard_classifier import FEATURES_VERSION, MODEL_FILE, Classifier, features  # noqa: E402
from ask_fable.core.guard_intent import judge as intent_judge  # noqa: E402
from ask_fable.core.guard_intent import watched  # noqa: E402
from ask_fable.core.guard_reading import normalize  # noqa: E402
from ask_fable.core.guard_scan import TABLE_FILE, table  # noqa: E402

MODEL_PATH = ROOT / "src" / "ask_fable" / "core" / MODEL_FILE
TABLE_PATH = ROOT / "src" / "ask_fable" / "core" / TABLE_FILE
#: The blind splits kept outside the required ones, each tuned on since it was measured (the one
#: ``benchmarks/guard_rates.py`` reports is never among them), and the folders of questions written for
#: training. ``BLIND`` is the last blind one, the one ``--estimate`` holds out.
FOLDERS = ("blind4", "blind5", "blind6", "blind7", "blind8", "tuning",
           *sorted(f"training/{topic.name}" for topic in (CORPUS_DIR / "training").iterdir()
                   if topic.is_dir()))
BLIND = "blind8"
#: Engineering prose (statements, fragments, follow-ups), benign only: without it the model reads any
#: text unlike the corpus's questions as harmful. It weighs less than a question, and the threshold
#: is set from the questions alone.
PROSE = "prose"
PROSE_WEIGHT = 0.3
#: Questions a feature must occur in to be learned: 3 rather than 2 made the model 40 % smaller (it is
#: read on a process's first question) with the same held-out rates on blind8.
MIN_QUESTIONS = 3
#: Inverse regularization strength: chosen on the held-out splits among 1, 4 and 16.
C = 16.0
#: The share of unseen benign questions the classifier alone may refuse, counted over every split,
#: the folders of hard look-alikes included. Chosen on blind8 held out among 1 %, 1.25 %, 1.5 % and 2 %.
REFUSE_BUDGET = 0.0125
#: Below both, the classifier sets aside a refusal of the judge under one of
#: :data:`~ask_fable.core.guard.SECOND_READ_RULES`: the whole question's score and every eight-word
#: stretch's. Chosen on held-out splits (blind8 and each training folder scored by a model trained
#: without it): 25 of the judge's 87 false refusals set aside, 2 of its 1,582 refusals of harmful
#: questions lost, and 15 of them released when padded with a sentence of engineering text.
CLEAR_BELOW = -2.0
WINDOW_CLEAR_BELOW = 1.0
#: Features a category model keeps per rule (its highest weights): about three quarters of the blind
#: split's refusals get the judge's rule from a model trained without that split.
CATEGORY_FEATURES = 600
DIGITS = 5


@dataclass(frozen=True)
class Example:
    """One labelled question, normalized, with the rule the judge refuses it under ("" when it does not)."""

    text: str
    harmful: bool
    judged: str
    weight: float = 1.0


def corpus(*, judged: bool = True) -> dict[str, list[Example]]:
    """Every split by name, the blind one included; with ``judged=False`` the judge's rule is left
    empty (what :func:`digest` fingerprints does not need it, and judging every question takes
    seconds)."""
    judge = intent_judge if judged else _no_rule
    splits: dict[str, tuple[list[str], list[str]]] = {
        split: (load("benign", split), load("harmful", split)) for split in SPLITS
    }
    for name in FOLDERS:
        folder = CORPUS_DIR / name
        splits[name] = (read_questions(folder / "benign.txt"), read_questions(folder / "harmful.txt"))
    splits[PROSE] = (read_questions(CORPUS_DIR / PROSE / "benign.txt"), [])
    out: dict[str, list[Example]] = {}
    for split, (benign, harmful) in splits.items():
        rows = [(q, False) for q in benign] + [(q, True) for q in harmful]
        out[split] = []
        weight = PROSE_WEIGHT if split == PROSE else 1.0
        for question, harmful_ in rows:
            text = normalize(question)
            finding = judge(text)
            out[split].append(Example(text, harmful_, finding.rule if finding else "", weight))
    return out


def _no_rule(text: str) -> None:
    return None


def digest(splits: dict[str, list[Example]]) -> str:
    """A fingerprint of the questions and labels a model was trained on."""
    hasher = hashlib.sha256()
    for split in sorted(splits):
        for example in splits[split]:
            hasher.update(f"{split}\t{int(example.harmful)}\t{example.text}\n".encode())
    return hasher.hexdigest()


@dataclass(frozen=True)
class Fitted:
    """A trained binary model: its vocabulary's weights and bias."""

    weights: dict[str, float]
    bias: float

    def score(self, text: str) -> float:
        """The same sum the guard computes at run time."""
        found = [self.weights[f] for f in features(text) if f in self.weights]
        return self.bias + (sum(found) / np.sqrt(len(found)) if found else 0.0)

    def classifier(self, refuse_above: float) -> Classifier:
        """The guard's run-time classifier with these weights (no category models)."""
        stored = stored_weights(self.weights)
        return Classifier(stored["words"], stored["pairs"], self.bias, refuse_above, {},  # type: ignore[arg-type]
                          CLEAR_BELOW, WINDOW_CLEAR_BELOW)


def _matrix(rows: Sequence[set[str]], vocabulary: dict[str, int]) -> csr_matrix:
    indptr, indices = [0], []
    for row in rows:
        indices.extend(sorted(vocabulary[f] for f in row if f in vocabulary))
        indptr.append(len(indices))
    data = np.ones(len(indices))
    return unit_rows(csr_matrix((data, indices, indptr), shape=(len(rows), len(vocabulary))))


def _vocabulary(rows: Sequence[set[str]]) -> dict[str, int]:
    counts = Counter(f for row in rows for f in row)
    return {f: i for i, f in enumerate(sorted(f for f, n in counts.items() if n >= MIN_QUESTIONS))}


def fit(examples: Sequence[Example]) -> Fitted:
    """The logistic regression over ``examples``."""
    rows = [features(e.text) for e in examples]
    vocabulary = _vocabulary(rows)
    model = LogisticRegression(C=C, solver="liblinear", max_iter=10_000, random_state=0)
    labels = np.array([e.harmful for e in examples], dtype=int)
    model.fit(_matrix(rows, vocabulary), labels, sample_weight=np.array([e.weight for e in examples]))
    coef = model.coef_[0]
    weights = {f: round(float(coef[i]), DIGITS) for f, i in vocabulary.items()}
    return Fitted({f: w for f, w in weights.items() if w}, round(float(model.intercept_[0]), DIGITS))


def thresholds(splits: dict[str, list[Example]]) -> float:
    """``refuse_above``, from each split's benign questions scored by a model trained on the others."""
    benign: list[float] = []
    for held in splits:
        if held == PROSE:
            continue
        model = fit([e for split, rows in splits.items() if split != held for e in rows])
        benign += [model.score(example.text) for example in splits[held] if not example.harmful]
    return round(float(np.quantile(benign, 1 - REFUSE_BUDGET)), DIGITS)


def categories(examples: Sequence[Example]) -> dict[str, dict[str, float]]:
    """One linear score per rule (no intercept), over the harmful questions the judge names a rule for."""
    labelled = [e for e in examples if e.harmful and e.judged]
    rows = [features(e.text) for e in labelled]
    vocabulary = _vocabulary(rows)
    rules = sorted({e.judged for e in labelled})
    model = LogisticRegression(C=C, max_iter=10_000, fit_intercept=False, random_state=0)
    model.fit(_matrix(rows, vocabulary), np.array([rules.index(e.judged) for e in labelled]))
    names = sorted(vocabulary, key=vocabulary.__getitem__)
    out: dict[str, dict[str, float]] = {}
    for index, rule in enumerate(rules):
        coef = model.coef_[index]
        top = sorted(range(len(names)), key=lambda i: (-coef[i], names[i]))[:CATEGORY_FEATURES]
        out[rule] = {names[i]: round(float(coef[i]), DIGITS) for i in sorted(top, key=names.__getitem__)
                     if coef[i] > 0}
    return out


def stored_weights(weights: dict[str, float]) -> dict[str, object]:
    """The weights as the guard reads them: each word's, and each pair's under its first word."""
    words: dict[str, float] = {}
    pairs: dict[str, dict[str, float]] = {}
    for feature, weight in sorted(weights.items()):
        first, _, second = feature.partition(" ")
        if second:
            pairs.setdefault(first, {})[second] = weight
        else:
            words[feature] = weight
    return {"words": words, "pairs": pairs}


def build() -> str:
    """The model file's text, trained on every split."""
    splits = corpus()
    examples = [e for rows in splits.values() for e in rows]
    model = fit(examples)
    refuse = thresholds(splits)
    data = {
        "features_version": FEATURES_VERSION,
        "trained_on": {split: len(rows) for split, rows in splits.items()},
        "corpus_sha256": digest(splits),
        "C": C,
        "bias": model.bias,
        "refuse_above": refuse,
        "clear_below": CLEAR_BELOW,
        "window_clear_below": WINDOW_CLEAR_BELOW,
        **stored_weights(model.weights),
        "categories": categories(examples),
    }
    return json.dumps(data, indent=0, sort_keys=False, ensure_ascii=False) + "\n"


def gates_text() -> str:
    """The gate table's text: what each of the judge's patterns needs, by a digest of its source."""
    found = table(watched())
    data = {"requirements": found.requirements, "alternatives": found.alternatives}
    return json.dumps(data, indent=0, ensure_ascii=False) + "\n"


def _current(path: Path, text: str) -> bool:
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if current != text:
        print(f"{path} is not what benchmarks/guard_train.py writes: run it", file=sys.stderr)
        return False
    print(f"{path.name} is current")
    return True


def _rates(refuses: Sequence[bool], rows: Sequence[Example]) -> str:
    benign = [r for r, e in zip(refuses, rows, strict=True) if not e.harmful]
    harmful = [r for r, e in zip(refuses, rows, strict=True) if e.harmful]
    return (f"refused {sum(benign)}/{len(benign)} ({100 * sum(benign) / len(benign):.1f} %), "
            f"caught {sum(harmful)}/{len(harmful)} ({100 * sum(harmful) / len(harmful):.1f} %)")


def estimate() -> None:
    """Print the held-out figures: trained without the measured split, threshold set without it."""
    splits = corpus()
    for held in ((BLIND,), ("blind7", BLIND)):
        train = {split: rows for split, rows in splits.items() if split not in held}
        model = fit([e for rows in train.values() for e in rows])
        refuse = thresholds(train)
        print(f"trained without {' and '.join(held)} (refuse above {refuse}):")
        second = model.classifier(refuse)
        for split in held:
            rows = splits[split]
            judged = [bool(e.judged) and not (e.judged in SECOND_READ_RULES and second.clears(e.text))
                      for e in rows]
            alone = [second.refuses(e.text) and not asks_to_defend(e.text) for e in rows]
            print(f"  [{split}] judge: {_rates(judged, rows)}")
            print(f"  [{split}] classifier: {_rates(alone, rows)}")
            print(f"  [{split}] both: {_rates([a or b for a, b in zip(judged, alone, strict=True)], rows)}")
    train = {split: rows for split, rows in splits.items() if split != BLIND}
    prose = train.pop(PROSE)
    train[PROSE] = prose[0::2]
    model = fit([e for rows in train.values() for e in rows])
    refuse = thresholds(train)
    refused = sum(model.score(e.text) > refuse for e in prose[1::2])
    print(f"trained without {BLIND} and every other line of {PROSE} (refuse above {refuse}):")
    print(f"  [{PROSE}, the other lines] classifier: refused {refused}/{len(prose[1::2])}")


def main(argv: Sequence[str] | None = None) -> int:
    """Write, check or estimate the guard's classifier."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 unless the shipped files are current")
    parser.add_argument("--gates", action="store_true", help="write only the gate table")
    parser.add_argument("--estimate", action="store_true", help="print the held-out figures")
    args = parser.parse_args(argv)
    if args.estimate:
        estimate()
        return 0
    gates = gates_text()
    if args.gates:
        TABLE_PATH.write_text(gates, encoding="utf-8")
        print(f"wrote {TABLE_PATH} ({len(gates):,} characters)")
        return 0
    text = build()
    if args.check:
        return 0 if _current(TABLE_PATH, gates) & _current(MODEL_PATH, text) else 1
    for path, written in ((TABLE_PATH, gates), (MODEL_PATH, text)):
        path.write_text(written, encoding="utf-8")
        print(f"wrote {path} ({len(written):,} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
