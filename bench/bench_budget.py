"""The budget ``--auto`` aims at: what each target ratio keeps, and what it costs.

For every real session of the corpus that is due at its model's window, and every Claude Code
session and mini-swe-agent trajectory cut where its recorded usage first reached the
threshold of a 120K window (:func:`ctxcompact.evaluation.cuts.cut_when_due`), runs
``compact --auto`` (``hybrid``, extractive summaries, nothing restored) at several
``--target-ratio`` values and prints, per ratio: the size after (share of the threshold — the
room left before the next compaction is due), the offline probe score of what was compacted
away (``ctxcompact eval``'s probes), how many runs needed a summary, and the runs that could
not fit at all. The default ratio (``DEFAULT_TARGET_RATIO``) is chosen from this table.

Usage:
    python bench/bench_budget.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from ctxcompact.accounting.check import budget_for, check_conversation
from ctxcompact.accounting.tokens import make_counter
from ctxcompact.compaction.options import DEFAULT_TARGET_RATIO, CompactOptions
from ctxcompact.compaction.pins import message_tokens
from ctxcompact.compaction.pipeline import compact_conversation
from ctxcompact.errors import WorkFailedError
from ctxcompact.evaluation.cuts import cut_when_due
from ctxcompact.evaluation.probes import context_text, extract_probes, score_probes
from ctxcompact.transcripts.io import Conversation, load_transcript

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
RATIOS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
CUT_WINDOW = 120_000


def sessions() -> list[tuple[str, Conversation, int | None]]:
    """(label, conversation, window or None for the model's own) of every due session."""
    out: list[tuple[str, Conversation, int | None]] = []
    files = [
        *sorted((CORPUS / "claude-code").glob("*.jsonl")),
        *sorted((CORPUS / "openai").glob("miniswe*")),
        *sorted((CORPUS / "other").glob("codex-rollout*")),
        *sorted((CORPUS / "anthropic").glob("*.json")),
    ]
    threshold = int((CUT_WINDOW - 32_000) * 0.6)
    for path in files:
        conv = load_transcript(path).conversations[0]
        out.append((path.name, conv, None))
        cut = cut_when_due(path.read_text(encoding="utf-8"), threshold)
        if cut is not None:
            out.append(
                (f"{path.name}@cut", load_transcript(data=cut, name=path.name).conversations[0], CUT_WINDOW)
            )
    return out


def run(
    conv: Conversation, window: int | None, ratio: float
) -> tuple[float, float | None, bool, float] | None:
    """(size after / threshold, probe score, summarized, share of the messages' tokens kept
    verbatim), or None when nothing fits."""
    budget = budget_for(conv, context_window=window)
    options = CompactOptions.from_keywords(
        strategies=("hybrid",), target_ratio=ratio, summarizer="extractive", restore=False
    )
    try:
        result = compact_conversation(conv, options=options, budget=budget, auto=True, dry_run=True)
    except WorkFailedError:
        return None
    if not result.compacted:
        return None
    kept = {id(m) for m in result.conversation.messages}
    replaced = [m for m in conv.messages if id(m) not in kept]
    report = score_probes(extract_probes(replaced), context_text(result.conversation.messages))
    summarized = any(
        s.get("strategy") == "summary" for step in result.stats.steps for s in step.get("steps", ())
    )
    counter = make_counter()
    verbatim = sum(message_tokens([m for m in conv.messages if id(m) in kept], counter))
    whole = sum(message_tokens(conv.messages, counter)) or 1
    return result.stats.compacted_tokens / budget.threshold, report.overall, summarized, verbatim / whole


def main() -> int:
    if not CORPUS.is_dir():
        print("../shared/corpus not present: nothing to measure")
        return 0
    cases = sessions()
    print(
        "| target ratio | runs | size after (share of threshold) | kept verbatim | probe score "
        "| summarized | could not fit |"
    )
    print("|---|---|---|---|---|---|---|")
    for ratio in RATIOS:
        sizes, scores, verbatims, summaries, failed, runs = [], [], [], 0, 0, 0
        for _, conv, window in cases:
            budget = budget_for(conv, context_window=window)
            if not check_conversation(
                conv, budget=budget, counter=make_counter(), validate=False
            ).needs_compaction:
                continue
            runs += 1
            found = run(conv, window, ratio)
            if found is None:
                failed += 1
                continue
            share, score, summarized, verbatim = found
            sizes.append(share)
            verbatims.append(verbatim)
            scores.extend([score] if score is not None else [])
            summaries += summarized
        mark = " (default)" if ratio == DEFAULT_TARGET_RATIO else ""
        print(
            f"| {ratio:g}{mark} | {runs} | {statistics.mean(sizes):.0%} (max {max(sizes):.0%}) | "
            f"{statistics.mean(verbatims):.0%} | {statistics.mean(scores):.1%} | {summaries} | {failed} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
