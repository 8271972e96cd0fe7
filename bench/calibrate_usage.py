"""Measure how our offline count relates to the usage Claude's API recorded.

For every real Claude Code session of the corpus (``../shared/corpus/claude-code``), each
main-thread assistant response that records ``message.usage`` gives one point: the request's
recorded prompt (input + cache creation + cache read) against our cl100k count of every
message before that response. Two figures come out (the constants of
:mod:`ctxcompact.accounting.context_size`):

``factor``    Claude tokens per cl100k token: Σ Δrecorded / Σ Δours over consecutive
              recorded turns of each session whose recorded prompt grew (a compaction or a
              dropped thinking block makes it shrink). Differences cancel what is in every
              request but not in the file — the system prompt and tool definitions.
``overhead``  that system prompt and tools: the median over sessions of the first recorded
              prompt minus ``factor`` × our count of the messages before it.

Also printed per session: our count of the live conversation against its last recorded
usage, before and after calibration. Not a pass/fail benchmark (no ``bench_`` prefix).

Usage: ``python bench/calibrate_usage.py [CORPUS_DIR]``
"""

from __future__ import annotations

import statistics
import sys
from itertools import pairwise
from pathlib import Path

from ctxcompact.accounting.tokens import count_tokens
from ctxcompact.transcripts.dialects.claude_code import NAME
from ctxcompact.transcripts.dialects.claude_code import recorded_usage as claude_code_usage
from ctxcompact.transcripts.io import Conversation, load_transcript

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "claude-code"


def turns(conv: Conversation) -> list[tuple[int, int]]:
    """(recorded prompt, our count of the messages before it) per recorded response."""
    report = count_tokens(conv.messages)
    prefix = [0]
    for row in report.messages:
        prefix.append(prefix[-1] + row.tokens)
    points = []
    for i in range(len(conv.messages)):
        head = conv.with_messages(conv.messages[: i + 1])
        usage = claude_code_usage(head.messages)
        if usage is not None and usage.at_message_index == i:
            points.append((usage.prompt, prefix[i]))
    return points


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else CORPUS
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        print(f"no sessions in {folder}", file=sys.stderr)
        return 1
    grown_rec = grown_ours = 0
    firsts: list[tuple[str, int, int]] = []
    lasts: list[tuple[str, int, int, int]] = []
    for path in files:
        for conv in load_transcript(path).conversations:
            if conv.dialect != NAME:
                continue
            points = turns(conv)
            if not points:
                continue
            for (r0, o0), (r1, o1) in pairwise(points):
                if r1 > r0 and o1 > o0:
                    grown_rec += r1 - r0
                    grown_ours += o1 - o0
            firsts.append((path.name, *points[0]))
            last = claude_code_usage(conv.messages)
            assert last is not None
            ours = sum(m.tokens for m in count_tokens(conv.messages).messages[: last.at_message_index + 1])
            lasts.append((path.name, last.context, ours, len(points)))
    factor = grown_rec / grown_ours
    overheads = [rec - factor * ours for _, rec, ours in firsts]
    overhead = statistics.median(overheads)
    print(f"sessions: {len(lasts)}; turns: {sum(n for *_, n in lasts)}")
    print(f"factor (Claude tokens per cl100k token): {factor:.3f}")
    print(f"overhead (system prompt + tools): median {overhead:,.0f}")
    print(f"  per session: {', '.join(f'{o:,.0f}' for o in overheads)}")
    print(f"{'session':42} {'recorded':>9} {'ours':>8} {'diff':>7} {'calibrated':>10} {'diff':>7}")
    for name, rec, ours, _ in lasts:
        cal = ours * factor + overhead
        print(
            f"{name:42} {rec:>9,} {ours:>8,} {(ours - rec) / rec:>+7.1%} {cal:>10,.0f} {(cal - rec) / rec:>+7.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
