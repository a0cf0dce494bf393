"""Benchmark: the guard's time per question over its whole corpus, as a ratio to one plain regex.

Run: python benchmarks/bench_guard.py [repeats]
Times ``guard.check`` (sanity floor, operator lists, intent judge) on every question of the labelled
corpus in ``tests/guard_corpus/`` and, in the same run, a trivial baseline: one compiled regex of
watched words searched over the same questions (what a word-matching guard costs). Then times the
longest question the guard accepts (65,536 characters): the corpus run together, and questions
that repeat one watched phrase thousands of times, the worst case for a judge that looks around
every occurrence. Prints microseconds per question (best of the repeats, plus the slowest single
question), the ratio, and the slowest long question; exits non-zero when a target is missed.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.guard_corpus import load  # noqa: E402

from ask_fable.config import load_settings  # noqa: E402
from ask_fable.core.guard import check  # noqa: E402

TARGET_US = 500.0
TARGET_LONG_S = 1.0
#: Phrases repeated to the length limit: each occurrence makes the judge look around it.
REPEATED = ("virus ", "rats ", "c2 ", "write a bot ", "hack into my ex's ", "evade edr ", "x. ", "kill it ",
            "look like login collect ", "the exploit ")
BASELINE = re.compile(
    r"\b(?:ransomware|keylogger|rootkit|botnet|shellcode|reverse shell|malware|exploit|payload|weaponi[sz]e|"
    r"bioweapon|nerve agent|anthrax|pathogen|toxin|bomb|explosive)s?\b",
    re.IGNORECASE,
)


def per_question(fn, questions: list[str], repeats: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(best µs per question over ``repeats`` passes, slowest single question in µs).

    The best pass is the least disturbed by other work on a shared machine.
    """
    passes, slowest = [], 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        for question in questions:
            fn(question)
        passes.append((time.perf_counter() - started) / len(questions) * 1e6)
    for question in questions:
        started = time.perf_counter()
        fn(question)
        slowest = max(slowest, (time.perf_counter() - started) * 1e6)
    return min(passes), slowest


def main() -> int:
    """Print the guard's and the baseline's cost per question; exit 1 when over the target."""
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    settings = load_settings()
    questions = load("benign") + load("harmful")
    guard_us, guard_worst = per_question(lambda q: check(q, "", settings), questions, repeats)
    base_us, base_worst = per_question(BASELINE.search, questions, repeats)
    limit = settings.max_len
    prose = (" ".join(questions) + " ")[:limit]
    prose_us, _ = per_question(lambda q: check(q, "", settings), [prose], 3)
    repeated = [(phrase * (limit // len(phrase) + 1))[:limit] for phrase in REPEATED]
    _, long_worst = per_question(lambda q: check(q, "", settings), repeated, 1)
    print(f"questions={len(questions)} repeats={repeats}")
    print(f"baseline (one regex)   : {base_us:8.1f} µs/question   slowest {base_worst:8.1f} µs")
    print(f"guard.check            : {guard_us:8.1f} µs/question   slowest {guard_worst:8.1f} µs")
    print(f"{limit:,}-character question: corpus prose {prose_us / 1000:.1f} ms; slowest repeated phrase "
          f"{long_worst / 1000:.1f} ms (target ≤ {TARGET_LONG_S * 1000:.0f} ms)")
    ratio = guard_us / base_us
    print(f"ratio {ratio:.1f}x the baseline; mean {guard_us:.1f} µs (target ≤ {TARGET_US:.0f} µs)")
    return 0 if guard_us <= TARGET_US and long_worst <= TARGET_LONG_S * 1e6 else 1


if __name__ == "__main__":
    sys.exit(main())
