"""No quadratic path (issue 24): each case is timed on an input and on the same input doubled,
twice over, and each doubling must cost at most 2.2× the time before it.

Cases:

``summary, one line``      the extractive summary of one failed tool result with no line break
                           and "error" every ~64 characters (a minified log): the error-line scan
                           went back to the line's start for every word (13 s at 3.2M characters).
``summary, error lines``   the same with an error line every ~22 characters (``error: …\\n``,
                           each line different): error lines were deduplicated in a list
                           (7.7 s for 40,000 lines).
``probes``                 ``eval``'s probe scoring: N distinct probes, half of them in a context
                           that grows with N (every probe was looked for with its own scan of
                           the whole context; then the context, normalised whole, became one
                           string per word: 2.23× and 2.43× per doubling).

Each figure is the best of ``--runs`` runs (the least disturbed: the machine may be shared).

Usage:
    python bench/bench_scaling.py [--runs N]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Sequence

from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.evaluation.probes import Probe, score_probes
from ctxcompact.ir import Message, Source

TARGET = 2.2
CHUNK = "x" * 40 + " an error occurred here "  # an error word every len(CHUNK) characters


def failed_result(body: str) -> list[Message]:
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


def one_line(chars: int) -> Callable[[], object]:
    messages = failed_result(CHUNK * (chars // len(CHUNK)))
    return lambda: ExtractiveSummarizer().summarize(messages)


def error_lines(chars: int) -> Callable[[], object]:
    messages = failed_result("".join(f"error: bad {i}\n" for i in range(chars // 22)))
    return lambda: ExtractiveSummarizer().summarize(messages)


def probes(count: int) -> Callable[[], object]:
    found = [Probe("identifier", f"name_{i}_{i * 7919 % 10007}") for i in range(count)]
    context = " filler text, some of it long enough ".join(p.text for p in found[::2]) * 4
    return lambda: score_probes(found, context)


CASES: dict[str, tuple[Callable[[int], Callable[[], object]], Sequence[int], str]] = {
    "summary, one line": (one_line, (800_000, 1_600_000, 3_200_000), "characters"),
    "summary, error lines": (error_lines, (800_000, 1_600_000, 3_200_000), "characters"),
    "probes": (probes, (3_000, 6_000, 12_000), "probes"),
}


def seconds(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        gc.disable()  # the collector's passes grow with what is alive: the algorithm's cost alone
        start = time.process_time()  # CPU time: steadier than wall time on a shared machine
        try:
            run()
        finally:
            times.append(time.process_time() - start)
            gc.enable()
    return min(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each size (the best counts)")
    args, _ = parser.parse_known_args(argv)  # make bench passes every script the same options
    ok = True
    print("| case | input | CPU time | × previous | target |\n|---|---:|---:|---:|---:|")
    for name, (make, sizes, unit) in CASES.items():
        figures = [seconds(make(n), args.runs) for n in sizes]
        for i, (n, t) in enumerate(zip(sizes, figures, strict=True)):
            ratio = t / figures[i - 1] if i else None
            passed = ratio is None or ratio <= TARGET
            ok = ok and passed
            shown = "—" if ratio is None else f"{ratio:.2f}× {'PASS' if passed else 'FAIL'}"
            print(f"| {name} | {n:,} {unit} | {t * 1000:.0f} ms | {shown} | ≤ {TARGET}× |")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
