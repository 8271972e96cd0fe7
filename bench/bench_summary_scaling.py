"""The extractive summary stays linear on hostile tool output (issue 24's regression case).

One failed tool result with no line break and "error" every ~64 characters (a minified log)
used to make the error-line scan quadratic: 0.57 s at 0.8M characters, 13.25 s at 3.2M. Here
the whole summary of such a transcript is timed at 0.8M, 1.6M and 3.2M characters (the best of
5 runs each) and each doubling must cost at most 2.2× the time of the size before.

Usage:
    python bench/bench_summary_scaling.py
"""

from __future__ import annotations

import time

from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.ir import Message, Source

SIZES = (800_000, 1_600_000, 3_200_000)
TARGET = 2.2
RUNS = 5
CHUNK = "x" * 40 + " an error occurred here "  # an error word every len(CHUNK) characters


def transcript(chars: int) -> list[Message]:
    body = CHUNK * (chars // len(CHUNK))
    source = Source(({},), (0,))
    return [
        Message("user", ({"type": "text", "text": "Fix the build."},), source),
        Message(
            "assistant",
            ({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}},),
            source,
        ),
        Message(
            "user", ({"type": "tool_result", "tool_use_id": "t1", "content": body, "is_error": True},), source
        ),
    ]


def seconds(chars: int) -> float:
    messages = transcript(chars)
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        ExtractiveSummarizer().summarize(messages)
        times.append(time.perf_counter() - start)
    return min(times)  # the least disturbed run: the machine is shared


def main() -> int:
    figures = [seconds(n) for n in SIZES]
    ok = True
    print("| characters | summary time | × previous | target |\n|---:|---:|---:|---:|")
    for i, (n, t) in enumerate(zip(SIZES, figures, strict=True)):
        ratio = t / figures[i - 1] if i else None
        passed = ratio is None or ratio <= TARGET
        ok = ok and passed
        shown = "—" if ratio is None else f"{ratio:.2f}× {'PASS' if passed else 'FAIL'}"
        print(f"| {n:,} | {t * 1000:.0f} ms | {shown} | ≤ {TARGET}× |")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
