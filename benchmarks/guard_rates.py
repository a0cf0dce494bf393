"""The guard's false-refusal rate on benign questions and its catch rate on harmful ones.

Run: python benchmarks/guard_rates.py [SPLIT|all|blind4|...|blind8|REPORTED|DIR ...]
(SPLIT: tuned, held_out, paraphrase, blind1, blind2 or blind3)
Reads the labelled corpus in ``tests/guard_corpus/`` (or, for an argument that is a directory, the
``benign.txt`` and ``harmful.txt`` in it: a split kept outside the corpus) and runs every question
through the guard with default settings (no model, no network).

:data:`REPORTED` names the split that gives the figure a user can expect: questions written by
someone who had read neither the guard's code nor its corpus, frozen as written and never used for
tuning, kept in ``tests/guard_corpus/<REPORTED>/``. Tuning on it makes it tuning data like
``blind1`` to ``blind8`` (each measured once as it came, then tuned on); a new blind
split is then needed to say what to expect. Prints, per split, the false refusals among the benign
questions and the catches among the harmful ones, then lists every miss: each benign question
refused (with the rule that refused it) and each harmful question let through. Exits 0 only when
no benign question is refused and every harmful one is; a missing reported split is said, not failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.guard_corpus import SPLITS, load, read_questions  # noqa: E402

from ask_fable.config import load_settings  # noqa: E402
from ask_fable.core.guard import check  # noqa: E402

#: The blind split that gives the figure to expect: written by someone who had read neither the
#: guard nor its corpus, frozen as written, and never tuned on (a test holds the classifier's
#: training data free of it). It measured 1.9 % refused / 82.2 % caught on the guard before the
#: classifier learned from ``tests/guard_corpus/training/``. Each earlier blind split was measured as
#: it came, then tuned on: ``blind4`` 2.2 % refused / 69.6 % caught, ``blind5`` 4.6 % / 78.6 %,
#: ``blind6`` 1.3 % / 88.6 %, ``blind7`` 0.5 % / 83.1 %, ``blind8`` 2.1 % / 82.5 %.
REPORTED = "blind9"
#: The blind splits kept as folders of the corpus: those tuned on since, and the reported one.
FOLDERS = ("blind4", "blind5", "blind6", "blind7", "blind8", REPORTED)
CORPUS = ROOT / "tests" / "guard_corpus"
BLIND = CORPUS / REPORTED


def questions(split: str) -> tuple[list[str], list[str]]:
    """The benign and harmful questions of a corpus split, or of the two files in a directory."""
    folder = CORPUS / split if split in FOLDERS else Path(split)
    if folder.is_dir():
        return read_questions(folder / "benign.txt"), read_questions(folder / "harmful.txt")
    return load("benign", split), load("harmful", split)  # type: ignore[arg-type]


def measure(split: str) -> bool:
    """Print the rates and misses for one split; True when it has no miss."""
    settings = load_settings()
    if split == REPORTED and not BLIND.is_dir():
        print(f"[{split}] not in this tree: put its benign.txt and harmful.txt in {BLIND}")
        return True
    benign, harmful = questions(split)
    refused = [(q, d) for q in benign if not (d := check(q, "", settings)).allowed]
    missed = [q for q in harmful if check(q, "", settings).allowed]
    caught = len(harmful) - len(missed)
    print(f"[{split}] false refusals: {len(refused)}/{len(benign)} ({100 * len(refused) / len(benign):.1f} %)"
          f"   catch rate: {caught}/{len(harmful)} ({100 * caught / len(harmful):.1f} %)")
    for question, decision in refused:
        print(f"  refused benign ({decision.rule}): {question}")
    for question in missed:
        print(f"  missed harmful: {question}")
    return not refused and not missed


def main() -> int:
    """Measure the splits named on the command line (default: each split, all, then the blind folders)."""
    splits = sys.argv[1:] or [*SPLITS, "all", *FOLDERS]
    results = [measure(split) for split in splits]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
