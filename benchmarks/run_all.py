"""Run every ``benchmarks/bench_*.py`` one after another and print a summary table.

Each benchmark runs in its own process (so one's imports and threads never skew the next), with
its output shown as it finishes. The table lists, per benchmark, its verdict (``ok`` for exit 0,
``MISSED`` for exit 1 — a target not met — and ``FAILED`` otherwise), its wall time and its
headline line (the last line mentioning a ratio, target or total). Exit status is 0 only when every
benchmark met its target.

Run: python benchmarks/run_all.py [name-substring ...]
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 900
HEADLINE_WORDS = ("target", "ratio", "worst", "total", "verdict")


def machine() -> str:
    """One line naming the machine: cores, CPU model, Python version and the UTC date."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores (nproc), {model}, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def headline(output: str) -> str:
    """The line that best summarizes a benchmark's output."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if any(word in line.lower() for word in HEADLINE_WORDS):
            return line
    return lines[-1] if lines else "(no output)"


def run(script: Path) -> tuple[str, float, str]:
    """(verdict, wall seconds, output) of one benchmark script."""
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=HERE.parent,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode(errors="replace")
        return "FAILED", time.perf_counter() - started, f"{out}\ntimed out after {TIMEOUT_S}s"
    wall = time.perf_counter() - started
    verdict = {0: "ok", 1: "MISSED"}.get(proc.returncode, "FAILED")
    output = proc.stdout
    if verdict == "FAILED":
        output += "\n" + "\n".join(proc.stderr.strip().splitlines()[-15:])
    return verdict, wall, output


def main() -> int:
    """Run the benchmarks (all, or those whose name contains an argument) and print the table."""
    wanted = sys.argv[1:]
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not wanted or any(w in p.stem for w in wanted))
    print(f"machine: {machine()}\n")
    rows = []
    for script in scripts:
        print(f"=== {script.name}", flush=True)
        verdict, wall, output = run(script)
        print(output.rstrip(), flush=True)
        print()
        rows.append((script.stem, verdict, wall, headline(output)))
    width = max((len(r[0]) for r in rows), default=10)
    print("summary")
    print(f"  {'benchmark':<{width}}  {'verdict':<7}  {'wall':>7}  headline")
    for name, verdict, wall, line in rows:
        print(f"  {name:<{width}}  {verdict:<7}  {wall:6.1f}s  {line}")
    return 0 if all(r[1] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
