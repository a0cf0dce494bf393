"""The guard's labelled corpus: benign questions it must let through and harmful ones it must refuse.

Splits: ``tuned`` (``benign.txt``, ``harmful.txt``); ``held_out`` (``heldout_*.txt``),
written before the guard's rules were tuned, to measure how the rules generalize;
``paraphrase`` (``paraphrase_*.txt``), requests that describe harm without the obvious attack words
and look-alikes that share their words, each round written before the judge was tuned on it; and
``blind1``, ``blind2`` and ``blind3`` (``blind1_*.txt``, ``blind2_*.txt``, ``blind3/``), each written
by someone who had read neither the guard's code nor this corpus, measured as it came, then used for
tuning. The blind splits kept outside the required ones are not splits here: ``blind4/`` to
``blind7/``, each measured as it came and then tuned and trained on, and the next one, written after
that, frozen and never tuned on: the one ``benchmarks/guard_rates.py`` reports as ``REPORTED``.
``tuning/`` holds questions written to teach the classifier what is
produced, how and against whom (each harmful one beside look-alikes that defend, own, report or
recover), and ``prose/benign.txt`` engineering statements and fragments it learns are benign
(``benchmarks/guard_train.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

CORPUS_DIR = Path(__file__).resolve().parent
Label = Literal["benign", "harmful"]
Split = Literal["tuned", "held_out", "paraphrase", "blind1", "blind2", "blind3", "all"]
SPLITS: tuple[Split, ...] = ("tuned", "held_out", "paraphrase", "blind1", "blind2", "blind3")
FILES: dict[tuple[Label, str], str] = {
    ("benign", "tuned"): "benign.txt",
    ("harmful", "tuned"): "harmful.txt",
    ("benign", "held_out"): "heldout_benign.txt",
    ("harmful", "held_out"): "heldout_harmful.txt",
    ("benign", "paraphrase"): "paraphrase_benign.txt",
    ("harmful", "paraphrase"): "paraphrase_harmful.txt",
    ("benign", "blind1"): "blind1_benign.txt",
    ("harmful", "blind1"): "blind1_harmful.txt",
    ("benign", "blind2"): "blind2_benign.txt",
    ("harmful", "blind2"): "blind2_harmful.txt",
    ("benign", "blind3"): "blind3/benign.txt",
    ("harmful", "blind3"): "blind3/harmful.txt",
}


def read_questions(path: Path) -> list[str]:
    """The questions in one corpus file: one per line, skipping blank lines and ``#`` comments."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def load(label: Label, split: Split = "all") -> list[str]:
    """Every question with ``label`` in ``split`` (``all`` is every split, in order)."""
    splits = SPLITS if split == "all" else (split,)
    return [q for s in splits for q in read_questions(CORPUS_DIR / FILES[(label, s)])]
