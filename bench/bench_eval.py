"""Fidelity of every strategy (``ctxcompact eval``) on the corpus and generated transcripts.

Runs :func:`ctxcompact.evaluation.run.evaluate_transcripts` with the default strategies (the table
plus ``offload``, extractive summaries, nothing restored) on ``../shared/corpus/{anthropic,
openai,claude-code}/*`` (the first conversation of a file that holds several) and on two
generated transcripts (``bench/gen_transcript.py``, 50K and 200K tokens), prints the per-strategy
table as Markdown, and checks issue 13's bars for ``full`` on the corpus: at least 90 % of the
file-path probes, at least 90 % of the user-instruction probes, and every last request.

Then issue 19's judged measurement (:mod:`judged_cuts`): six corpus transcripts cut where
compaction was due, every strategy run with the budget the judged runs had, the table per
strategy with the tokens after, how many results fit the threshold, ``eval``'s score and the
blind judge's score (``bench/judged_outputs.json``: credited only to the very context it was
given — a run whose output changed since is listed as STALE, to be judged again), and how well
the two agree: Kendall's tau-b between them across the judged strategies, per transcript. The
strategies run as they were judged (``compact --strategy X``, ``-w`` where the judged run had
it); a result *fits* when it is under the threshold ``--auto`` has on that transcript. On every
transcript where a judged result fits, ``auto`` must fit and have the best judged score among
the judged results that fit, a tie within the judging's resolution included (``tie`` in the
file: two means that close are not told apart by two readers and one scorer).

Usage:
    python bench/bench_eval.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from gen_transcript import generate
from judged_cuts import (
    CUTS,
    claude_code_judged,
    claude_code_summary,
    context_digest,
    judged_outputs,
    write_cut,
)

from ctxcompact.accounting.check import BudgetSpec
from ctxcompact.evaluation.probes import context_text, score_probes
from ctxcompact.evaluation.run import (
    EvalResult,
    StrategyRun,
    conversation_probes,
    evaluate_transcripts,
)
from ctxcompact.ir import new_message
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
    if CORPUS.is_dir():
        ok = judged_cuts_table() and ok
    return 0 if ok else 1


JUDGED_STRATEGIES = ("full", "prune", "hybrid", "auto", "clean-tools", "key-messages", "selective", "offload")


def judged_cuts_table() -> bool:
    """The six judged transcripts: eval's figures beside the blind judge's (module docstring).

    A judged score belongs to the very context it was given: ``bench/judged_outputs.json``
    holds each judged context's SHA-256 (:func:`context_digest`), so a run is credited only
    when it writes that context again — whichever strategy writes it. A run of a strategy that
    was judged on this transcript but now writes another context is listed as STALE (judge it
    again). Two means closer than the file's ``tie`` (the judging's resolution) are a tie."""
    judged_file = judged_outputs()
    contexts, tie = judged_file["contexts"], judged_file["tie"]
    runs: dict[str, list[StrategyRun]] = {}
    thresholds: dict[str, int | None] = {}
    skipped: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for cut in CUTS:
            transcript = load_transcript(write_cut(cut, Path(tmp)))
            budget = BudgetSpec(context_window=cut.context_window)
            result = evaluate_transcripts(
                [transcript], strategies=JUDGED_STRATEGIES, budget=budget, max_conversations=1
            )
            runs[cut.tag] = [r for r in result.runs if not r.skipped]
            # The same budget for every run of a cut, a refused one (skipped) included.
            thresholds[cut.tag] = next((r.threshold for r in result.runs if r.threshold is not None), None)
            skipped += [f"{r.strategy} on {cut.tag}: {r.skipped}" for r in result.runs if r.skipped]
            if cut.tag == "A":
                probes = conversation_probes(transcript.conversations[0])
                reference = score_probes(probes, context_text([new_message("user", claude_code_summary())]))
                print(
                    f"\nClaude Code's own summary of A: eval score {reference.mean:.0%}, "
                    f"judged blind {claude_code_judged():.2f}"
                )
    was_judged = {(c["transcript"], s) for c in contexts.values() for s in c["strategies"]}
    judged: dict[tuple[str, str], float] = {}
    stale: list[str] = []
    for tag, done in runs.items():
        for r in done:
            entry = contexts.get(context_digest(r.messages))
            if entry is not None and entry["transcript"] == tag:
                judged[tag, r.strategy] = entry["mean"]
            elif (tag, r.strategy) in was_judged:
                stale.append(f"{r.strategy} on {tag}")
    print("\njudged transcripts (6 cuts where compaction was due):\n")
    print("| strategy | tokens after | fits | eval score | judged score |\n|---|---:|---:|---:|---:|")
    for name in JUDGED_STRATEGIES:
        mine = [(tag, r) for tag, done in runs.items() for r in done if r.strategy == name]
        evals = [r.report.mean for _, r in mine if r.report and r.report.mean is not None]
        scored = [judged[tag, name] for tag, _ in mine if (tag, name) in judged]
        fits = sum(1 for tag, r in mine if r.tokens_after < (thresholds[tag] or 0))
        judge = f"{sum(scored) / len(scored):.2f} ({len(scored)}/{len(mine)})" if scored else "—"
        eval_score = f"{sum(evals) / len(evals):.0%}" if evals else "—"
        tokens = sum(r.tokens_after for _, r in mine)
        print(f"| {name} | {tokens:,} | {fits}/{len(mine)} | {eval_score} | {judge} |")
    for line in skipped:  # a run the tool refused: not in its row (it wrote nothing)
        print(f"\nskipped: {line}")
    if stale:
        print(f"\nSTALE (the output changed since it was judged; judge it again): {', '.join(stale)}")
    ok = True
    for tag, done in runs.items():
        pairs = [
            (r.report.mean or 0.0, judged[tag, r.strategy])
            for r in done
            if r.report and (tag, r.strategy) in judged
        ]
        fitting = {
            r.strategy: judged[tag, r.strategy]
            for r in done
            if (tag, r.strategy) in judged and r.tokens_after < (thresholds[tag] or 0)
        }
        auto_fits = any(r.strategy == "auto" and r.tokens_after < (thresholds[tag] or 0) for r in done)
        verdict = "n/a (no judged result fits)"
        if auto_fits and "auto" not in fitting:
            verdict = "n/a (auto's output as it is now was not judged)"
        elif fitting:
            best = max(fitting.values())
            passed = "auto" in fitting and best - fitting["auto"] <= tie
            ok = ok and passed
            verdict = f"{'PASS' if passed else 'FAIL'} (auto {fitting.get('auto', 0):.2f}, best {best:.2f}; tie <= {tie})"
        print(
            f"{tag}: Kendall tau-b eval vs judged over {len(pairs)} strategies {_tau(pairs):.2f}; auto best among the judged results that fit: {verdict}"
        )
    return ok


def _mean(values: list[int]) -> float:
    return sum(values) / len(values)


def _tau(pairs: list[tuple[float, float]]) -> float:
    concordant = discordant = tied_x = tied_y = 0
    for i, (x1, y1) in enumerate(pairs):
        for x2, y2 in pairs[i + 1 :]:
            dx, dy = x1 - x2, y1 - y2
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tied_x += 1
            elif dy == 0:
                tied_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + tied_x) * (concordant + discordant + tied_y)) ** 0.5
    return (concordant - discordant) / denominator if denominator else float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
