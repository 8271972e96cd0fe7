"""Every compaction strategy on the same inputs: tokens before → after, time, and what survives.

Inputs: ``sample_transcripts/*.json*``, the shared corpus (``../shared/corpus/{anthropic,openai,
claude-code}/*``; skipped when absent) and generated transcripts (``bench/gen_transcript.py``,
~200K and ~800K tokens). Strategies: ``full`` (extractive summarizer: offline, deterministic),
``prune``, ``prune`` with ``include_loop``, ``clean-tools``, ``selective``, ``key-messages``,
``hybrid`` (each alone, through :func:`ctxcompact.compaction.pipeline.compact_conversation`, as a dry run: no
archive written) and ``offload`` (:func:`ctxcompact.offload.tool_results.offload_tool_results`, into a
temporary directory).

Budget (what ``selective``, ``key-messages`` and ``hybrid`` aim at): each conversation is given a
context window equal to its own size, no output reserve and a threshold ratio of 0.5 — "this
transcript filled its window; bring it to half". A fixed model window (claude-sonnet-4-5's
200K) would leave every input under ~100K tokens untouched by the targeted strategies and say
nothing about them. ``full``, ``prune`` and ``clean-tools`` get no budget, as on the command
line without ``--model``: each shows its own effect (with a budget, every strategy still over
it would go on down the fallback ladder — prune, key-messages, last rounds — and they would
all look alike).

Tokens: tiktoken cl100k_base, messages + system prompt + tool definitions. Time: wall clock of
the strategy alone (loading and counting the input excluded; for a collection, the sum over
its conversations), median of 3 runs for inputs under 50K tokens, one run above. Retention (:func:`ctxcompact.compaction.retention.
check_retention`): the facts of the *whole* original — file paths named in tool inputs, error
lines of failed tool results, the user's instruction sentences, the last user request — looked
for in the whole output (text, tool inputs and tool results). Offloaded output is still on disk
and restorable, but the table counts what is left in the context.

Usage: ``python bench/bench_strategies.py [--detail] [--no-corpus] [--no-generated]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_transcript import generate  # noqa: E402

from ctxcompact.accounting.check import budget_for, measure  # noqa: E402
from ctxcompact.accounting.tokens import TiktokenCounter  # noqa: E402
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation  # noqa: E402
from ctxcompact.compaction.retention import check_retention  # noqa: E402
from ctxcompact.compaction.strategies import TARGETED  # noqa: E402
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer  # noqa: E402
from ctxcompact.errors import WorkFailedError  # noqa: E402
from ctxcompact.ir import Message  # noqa: E402
from ctxcompact.offload.tool_results import offload_tool_results  # noqa: E402
from ctxcompact.transcripts.io import Conversation, load_transcript  # noqa: E402

ROOT = HERE.parent
CORPUS = ROOT.parent / "shared" / "corpus"
COUNTER = TiktokenCounter()
SUMMARIZER = ExtractiveSummarizer()
SMALL = 50_000  # tokens in an input: under it, the median of RUNS runs
RUNS = 3
GENERATED = ((200_000, 0), (800_000, 1))  # (target tokens, seed)
BUDGET_RATIO = 0.5

Run = Callable[[Conversation, int, Path], tuple[Message, ...]]


def _compact(strategy: str, **extra: object) -> Run:
    def run(conv: Conversation, before: int, tmp: Path) -> tuple[Message, ...]:
        options = CompactOptions.from_keywords(
            strategies=(strategy,), summarizer="extractive", restore=False, work_dir=tmp, **extra
        )
        budget = None
        if strategy in TARGETED:
            budget = budget_for(conv, context_window=max(before, 1_000), output_reserve=0, ratio=BUDGET_RATIO)
        result = compact_conversation(
            conv, options=options, budget=budget, dry_run=True, summarizer=SUMMARIZER, counter=COUNTER
        )
        return result.conversation.messages

    return run


def _offload(conv: Conversation, before: int, tmp: Path) -> tuple[Message, ...]:
    out = Path(tempfile.mkdtemp(dir=tmp))
    return offload_tool_results(conv.messages, out_dir=out, counter=COUNTER).messages


STRATEGIES: dict[str, Run] = {
    "full": _compact("full"),
    "prune": _compact("prune"),
    "prune --include-loop": _compact("prune", include_loop=True),
    "clean-tools": _compact("clean-tools"),
    "selective": _compact("selective"),
    "key-messages": _compact("key-messages"),
    "hybrid": _compact("hybrid"),
    "offload": _offload,
}


@dataclass
class Tally:
    """One strategy's figures on one input (or pooled over inputs)."""

    before: int = 0
    after: int = 0
    seconds: float = 0.0
    found: dict[str, int] = field(default_factory=lambda: {"paths": 0, "errors": 0, "instructions": 0})
    total: dict[str, int] = field(default_factory=lambda: {"paths": 0, "errors": 0, "instructions": 0})
    requests_kept: int = 0
    requests: int = 0

    def add(self, other: Tally) -> None:
        self.before += other.before
        self.after += other.after
        self.seconds += other.seconds
        for key in self.found:
            self.found[key] += other.found[key]
            self.total[key] += other.total[key]
        self.requests_kept += other.requests_kept
        self.requests += other.requests


def haystack(messages: Sequence[Message]) -> str:
    """Everything a model would read in ``messages``: text, tool inputs, tool results."""
    parts: list[str] = []
    for message in messages:
        for block in message.content:
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                parts.append(json.dumps(block.get("input"), ensure_ascii=False))
            elif kind == "tool_result":
                content = block.get("content")
                parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    return "\n".join(parts)


#: What a strategy refused to do (``WorkFailedError``), counted as the input left unchanged.
REFUSED: list[str] = []


def measure_one(conv: Conversation, before: int, run: Run, tmp: Path, *, runs: int) -> Tally:
    times: list[float] = []
    out: tuple[Message, ...] = conv.messages
    for _ in range(runs):
        start = time.perf_counter()
        try:
            out = run(conv, before, tmp)
        except WorkFailedError as exc:  # refused (it writes nothing): the input stays as it was
            out = conv.messages
            REFUSED.append(str(exc).split(";")[0][:160])
        times.append(time.perf_counter() - start)
    report = check_retention(conv.messages, haystack(out))
    tally = Tally(before=before, after=measure(conv.with_messages(out), COUNTER).total)
    tally.seconds = statistics.median(times)
    tally.found = {
        "paths": report.paths_found,
        "errors": report.errors_found,
        "instructions": report.instructions_found,
    }
    tally.total = {
        "paths": report.paths_total,
        "errors": report.errors_total,
        "instructions": report.instructions_total,
    }
    if report.last_request is not None:
        tally.requests = 1
        tally.requests_kept = int(report.last_request)
    return tally


def inputs(*, corpus: bool, generated: bool, tmp: Path) -> list[tuple[str, Path]]:
    files = [
        (p.relative_to(ROOT).as_posix(), p) for p in sorted((ROOT / "sample_transcripts").glob("*.json*"))
    ]
    if corpus:
        for sub in ("anthropic", "openai", "claude-code"):
            folder = CORPUS / sub
            if folder.is_dir():
                files += [(f"corpus/{sub}/{p.name}", p) for p in sorted(folder.iterdir()) if p.is_file()]
    if generated:
        for tokens, seed in GENERATED:
            path = tmp / f"generated-{tokens // 1000}k.json"
            path.write_text(json.dumps(generate(tokens, seed), ensure_ascii=False), encoding="utf-8")
            files.append((f"generated ~{tokens // 1000}K (seed {seed})", path))
    return files


def share(found: int, total: int) -> str:
    return f"{100 * found / total:.0f}%" if total else "–"


def row(name: str, t: Tally) -> str:
    ratio = f"{100 * t.after / t.before:.1f}%" if t.before else "–"
    return (
        f"| {name} | {t.before:,} | {t.after:,} | {ratio} | {t.seconds:.2f} s | "
        f"{share(t.found['paths'], t.total['paths'])} | {share(t.found['errors'], t.total['errors'])} | "
        f"{share(t.found['instructions'], t.total['instructions'])} | {t.requests_kept}/{t.requests} |"
    )


HEADER = (
    "| {first} | tokens before | after | after/before | time | paths kept | error lines kept | "
    "instructions kept | last request kept |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detail", action="store_true", help="also print one table per input")
    parser.add_argument("--no-corpus", action="store_true", help="skip ../shared/corpus")
    parser.add_argument("--no-generated", action="store_true", help="skip the generated transcripts")
    args, _ = parser.parse_known_args(argv)  # make bench passes its own arguments to every script

    start = time.perf_counter()
    pooled = {name: Tally() for name in STRATEGIES}
    detail: list[tuple[str, dict[str, Tally]]] = []
    with tempfile.TemporaryDirectory(prefix="ctxcompact-bench-strategies-") as tmp_name:
        tmp = Path(tmp_name)
        files = inputs(corpus=not args.no_corpus, generated=not args.no_generated, tmp=tmp)
        for label, path in files:
            convs = [(c, measure(c, COUNTER).total) for c in load_transcript(path).conversations]
            runs = RUNS if sum(before for _, before in convs) < SMALL else 1
            per: dict[str, Tally] = {}
            for name, run in STRATEGIES.items():
                per[name] = Tally()
                for conv, before in convs:
                    per[name].add(measure_one(conv, before, run, tmp, runs=runs))
                pooled[name].add(per[name])
            detail.append((label, per))
            print(f"  {label}: done after {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

    print(f"\nAll {len(detail)} inputs pooled (conversations in a collection counted one by one):\n")
    print(HEADER.format(first="strategy"))
    for name, tally in pooled.items():
        print(row(f"`{name}`", tally))
    if args.detail:
        for label, per in detail:
            print(f"\n`{label}`\n")
            print(HEADER.format(first="strategy"))
            for name, tally in per.items():
                print(row(f"`{name}`", tally))
    for reason in dict.fromkeys(REFUSED):
        print(f"\nrefused (counted as unchanged): {reason}")
    print(f"\n{len(detail)} inputs in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
