"""Benchmark: ``ctxcompact compact DIR --out-dir OUT`` on a batch of generated sessions.

A folder of ``--files`` (200) generated sessions of about ``--tokens`` (20K) tokens each,
compacted with the offline extractive summarizer (no restore, so no work dir is read):

``jobs 1`` / ``jobs 2``   files per second with ``--jobs 1`` and ``--jobs 2`` (target: a
                          speed-up of at least 1.6× on 2 cores).
``memory``                peak RSS of the batch at 50 files and at ``--files`` files (``--jobs 1``,
                          ``os.wait4`` of the command: the largest single process) — flat in the
                          number of files means at most 1.25× (target).

Usage: ``python bench/bench_batch.py [--files N] [--tokens N] [--runs N]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_count import Run, child_env, ctxcompact_argv, peak, run_once, verdict  # noqa: E402
from gen_transcript import generate  # noqa: E402

SPEEDUP_TARGET = 1.6
MEMORY_FLAT_TARGET = 1.25


def make_sessions(folder: Path, count: int, tokens: int) -> None:
    folder.mkdir(parents=True)
    for n in range(count):
        (folder / f"session-{n:04d}.json").write_text(json.dumps(generate(tokens, seed=n)), encoding="utf-8")


def batch(folder: Path, out: Path, jobs: int, *, work: Path, env: dict[str, str]) -> Run:
    shutil.rmtree(out, ignore_errors=True)
    argv = [
        *ctxcompact_argv(),
        "compact",
        str(folder),
        "--out-dir",
        str(out),
        "--summarizer",
        "extractive",
        "--no-restore",
        "--jobs",
        str(jobs),
        "-q",
    ]
    return run_once(argv, cwd=work, env=env)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200, help="sessions in the batch")
    parser.add_argument("--tokens", type=int, default=20_000, help="approximate tokens per session")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each configuration")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxcompact-bench-batch-") as tmp:
        work = Path(tmp)
        env = child_env(work)
        env["XDG_STATE_HOME"] = str(work / "state")
        full, small = work / "full", work / "small"
        make_sessions(full, args.files, args.tokens)
        small.mkdir()
        for path in sorted(full.iterdir())[:50]:
            shutil.copy(path, small / path.name)
        batch(small, work / "warm", 1, work=work, env=env)  # warm-up: bytecode, tokenizer cache
        one: list[Run] = []
        two: list[Run] = []
        few: list[Run] = []
        for _ in range(args.runs):
            one.append(batch(full, work / "out1", 1, work=work, env=env))
            two.append(batch(full, work / "out2", 2, work=work, env=env))
            few.append(batch(small, work / "out50", 1, work=work, env=env))
        t1 = min(r.seconds for r in one)
        t2 = min(r.seconds for r in two)
        speedup = t1 / t2
        mem_few, mem_all = peak(few) / 1024, peak(one) / 1024
        flat = mem_all / mem_few
        print(f"batch of {args.files} sessions of ~{args.tokens:,} tokens, extractive, best of {args.runs}")
        print(f"  --jobs 1: {t1:6.1f} s  {args.files / t1:6.1f} files/s")
        print(f"  --jobs 2: {t2:6.1f} s  {args.files / t2:6.1f} files/s")
        print(
            f"  speed-up: {speedup:.2f}x (target >= {SPEEDUP_TARGET}x)  {verdict(speedup >= SPEEDUP_TARGET)}"
        )
        print(
            f"  peak RSS: 50 files {mem_few:.0f} MB, {args.files} files {mem_all:.0f} MB = {flat:.2f}x",
            end="",
        )
        print(f" (target <= {MEMORY_FLAT_TARGET}x)  {verdict(flat <= MEMORY_FLAT_TARGET)}")
        ok = speedup >= SPEEDUP_TARGET and flat <= MEMORY_FLAT_TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
