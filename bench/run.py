"""Run every ``bench/bench_*.py`` in turn (``make bench``) and print what each reports.

Each benchmark is its own process, so one's imports and caches never help another. The exit
status is the worst of theirs: non-zero when any target was missed or a script failed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if not scripts:
        print("no bench/bench_*.py scripts found", file=sys.stderr)
        return 1
    worst = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        start = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *argv])
        print(f"== {script.name}: exit {code} after {time.perf_counter() - start:.1f}s\n", flush=True)
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
