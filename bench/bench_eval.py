"""Fidelity of every strategy (``ctxcompact eval``) on the corpus and generated transcripts.

Runs :func:`ctxcompact.evaluation.run.evaluate_transcripts` with the default strategies (the table
plus ``offload``, extractive summaries, nothing restored) on ``../shared/corpus/{anthropic,
openai,claude-code}/*`` (the first conversation of a file that holds several) and on two
generated transcripts (``bench/gen_transcript.py``, 50K and 200K tokens), prints the per-strategy
table as Markdown, and checks issue 13's bars for ``full`` on the corpus: at least 90 % of the
file-path probes, at least 90 % of the user-instruction probes, and every last request.

Usage:
    python bench/bench_eval.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from gen_transcript import generate

from ctxcompact.evaluation.run import EvalResult, evaluate_transcripts
from ctxcompact.output.eval_table import summary_table
from ctxcompact.transcripts.io import Transcript, load_transcript

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
BARS = {"path": 0.9, "instruction": 0.9, "last_request": 1.0}


def corpus() -> list[Transcript]:
    files = sorted(
        p for d in ("anthropic", "openai", "claude-code") for p in (CORPUS / d).glob("*") if p.is_file()
    )
    return [load_transcript(p) for p in files]


def generated(tmp: Path) -> list[Transcript]:
    out = []
    for tokens in (50_000, 200_000):
        path = tmp / f"generated-{tokens // 1000}k.json"
        path.write_text(json.dumps(generate(tokens, seed=0)), encoding="utf-8")
        out.append(load_transcript(path))
    return out


def markdown(result: EvalResult) -> str:
    table = summary_table(result)
    lines = ["| " + " | ".join(table.headers) + " |", "|" + "---|" * len(table.headers)]
    for r, row in enumerate(table.rows):
        cells = [f"**{c}**" if (r, i) in table.best else c for i, c in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def check_bars(result: EvalResult) -> bool:
    full = next((s for s in result.summaries() if s.strategy == "full"), None)
    if full is None:
        return True
    ok = True
    for kind, bar in BARS.items():
        score = full.report.score(kind)
        passed = score is None or score >= bar
        ok = ok and passed
        shown = "n/a" if score is None else f"{score:.1%}"
        print(f"full keeps {kind} probes: {shown} (bar ≥ {bar:.0%}) {'PASS' if passed else 'FAIL'}")
    return ok


def main() -> int:
    ok = True
    if CORPUS.is_dir():
        result = evaluate_transcripts(corpus(), max_conversations=1)
        print(f"corpus ({len({r.source for r in result.runs})} conversations):\n")
        print(markdown(result) + "\n")
        ok = check_bars(result)
    else:
        print("../shared/corpus not present: corpus figures skipped")
    with tempfile.TemporaryDirectory() as tmp:
        result = evaluate_transcripts(generated(Path(tmp)))
    print("\ngenerated transcripts (50K and 200K tokens):\n")
    print(markdown(result))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
