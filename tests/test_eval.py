"""``ctxcompact eval``: every strategy on the transcripts, cost and probe retention side by side."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES

from ctxcompact.accounting.check import BudgetSpec
from ctxcompact.compaction.strategies import STRATEGY_NAMES
from ctxcompact.errors import UsageError
from ctxcompact.evaluation.run import default_strategies, evaluate_transcripts
from ctxcompact.output.eval_table import html_page, summary_table
from ctxcompact.output.json import eval_json
from ctxcompact.output.table import plain_table
from ctxcompact.transcripts.io import load_transcript

SESSION = SAMPLES / "anthropic-session.json"


def ticking_clock() -> object:
    ticks = itertools.count()
    return lambda: float(next(ticks))


def test_default_strategies_are_the_table_plus_offload_and_auto() -> None:
    # A strategy added to the table is evaluated without touching eval.
    assert default_strategies() == (*STRATEGY_NAMES, "offload", "auto")


def test_each_strategy_has_cost_and_retention() -> None:
    result = evaluate_transcripts([load_transcript(SESSION)], clock=ticking_clock())  # type: ignore[arg-type]
    by_name = {s.strategy: s for s in result.summaries()}
    assert list(by_name) == list(default_strategies())
    full = by_name["full"]
    assert full.tokens_after < full.tokens_before and full.seconds > 0
    assert full.report.score("path") == 1.0 and full.report.score("last_request") == 1.0
    assert full.report.score("instruction") == 1.0
    # A stub names each masked result's outcome by its first line; the errors deeper in the
    # output are lost, and the table says so.
    assert by_name["prune"].report.score("error") < 1.0
    # Every strategy answers the same probes, read from the whole conversation.
    totals = {name: s.report.total for name, s in by_name.items() if s.runs}
    assert len(set(totals.values())) == 1, totals


def test_unknown_strategy_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown strategy nope"):
        evaluate_transcripts([load_transcript(SESSION)], strategies=["full", "nope"])


def test_offload_leaves_no_files_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = evaluate_transcripts([load_transcript(SESSION)], strategies=["offload"])
    assert result.runs[0].tokens_after < result.runs[0].tokens_before
    assert list(tmp_path.iterdir()) == []


def test_figures_are_deterministic() -> None:
    runs = [
        eval_json(evaluate_transcripts([load_transcript(SESSION)], clock=ticking_clock()), show_lost=5)  # type: ignore[arg-type]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_best_value_per_column_is_marked_and_plain_table_aligns() -> None:
    result = evaluate_transcripts([load_transcript(SESSION)], strategies=["full", "prune"])
    table = summary_table(result)
    ratio = table.headers.index("ratio")
    assert (0, ratio) in table.best and (1, ratio) not in table.best  # full is smaller
    lines = plain_table(table).splitlines()
    assert len(lines) == 3 and lines[0].startswith("strategy")


def test_html_page_is_self_contained() -> None:
    page = html_page(evaluate_transcripts([load_transcript(SESSION)], strategies=["full", "prune"]))
    assert "<svg" in page and "<circle" in page and "class=best" in page
    assert not re.search(r"(src|href)=\"?https?://", page)  # no external assets


def test_cli_table_json_html_and_lost(tmp_path: Path) -> None:
    out = run_cli("eval", SAMPLES, "--strategies", "full,prune", "--show-lost", "2")
    assert out.exit_code == 0, out.stderr
    assert out.stdout.splitlines()[0].split()[:3] == ["strategy", "runs", "tokens"]
    assert re.search(r"^prune: \d+ probe\(s\) lost$", out.stdout, re.M)
    data = run_cli("eval", SESSION, "-s", "full", "--json", "--html", tmp_path / "e.html").json()
    assert data["strategies"][0]["strategy"] == "full"
    assert data["strategies"][0]["retention"]["by_kind"]["path"]["score"] == 1.0
    assert set(data["strategies"][0]["retention"]["by_category"]) == {
        "task",
        "artifacts",
        "continuation",
        "decisions",
        "recall",
    }
    assert (tmp_path / "e.html").read_text().startswith("<!doctype html>")


def test_budget_options_give_every_strategy_the_threshold_compact_would() -> None:
    """`eval -w N` runs what `compact -w N` writes; the fits column says which results are
    under the threshold, and `auto` is `compact --auto`."""
    out = run_cli("eval", SESSION, "-s", "full,prune,auto", "-w", "20000", "--json")
    assert out.exit_code == 0, out.stderr
    runs = {r["strategy"]: r for r in out.json()["runs"]}
    threshold = runs["full"]["threshold"]
    assert threshold == int((20000 - 5000) * 0.6)  # a quarter of a small window is reserved
    assert all(r["threshold"] == threshold for r in runs.values())
    assert runs["full"]["fits"] is True and runs["auto"]["fits"] is True
    table = run_cli("eval", SESSION, "-s", "full,auto", "-w", "20000")
    assert re.search(r"^auto\s+1\s.*\s1/1\s", table.stdout, re.M), table.stdout
    # Without a budget option, only auto has one (the transcript's model's, as compact --auto).
    plain = {r["strategy"]: r for r in run_cli("eval", SESSION, "-s", "full,auto", "--json").json()["runs"]}
    assert plain["full"]["threshold"] is None and plain["auto"]["threshold"] is not None


@pytest.mark.parametrize(
    "target", [["--target-ratio", "0.2"], ["--target-ratio", "0.9"], ["--target-tokens", "3000"]]
)
def test_target_options_make_auto_what_compact_auto_writes(tmp_path: Path, target: list[str]) -> None:
    """`eval --target-*` aims `auto` (and the targeted strategies) where `compact` with the same
    options aims: the size eval reports is the size of the file compact writes."""
    budget = ["-w", "20000", *target]
    out = tmp_path / "compacted.json"
    compacted = run_cli("compact", SESSION, "--auto", *budget, "-o", out, "--archive-dir", tmp_path / "a")
    assert compacted.exit_code == 0, compacted.stderr
    written = run_cli("count", out, "--json").json()["transcripts"][0]["context"]["tokens"]
    t = load_transcript(SESSION)
    runs = evaluate_transcripts(
        [t],
        strategies=["auto"],
        budget=BudgetSpec(context_window=20000),
        target_ratio=float(target[1]) if target[0] == "--target-ratio" else None,
        target_tokens=int(target[1]) if target[0] == "--target-tokens" else None,
    ).runs
    assert runs[0].tokens_after == written
    cli = run_cli("eval", SESSION, "-s", "auto", *budget)
    assert cli.exit_code == 0, cli.stderr


def test_target_ratio_orders_the_sizes_and_a_bad_one_is_refused_first() -> None:
    sizes = [
        evaluate_transcripts(
            [load_transcript(SESSION)],
            strategies=["hybrid"],
            budget=BudgetSpec(context_window=20000),
            target_ratio=r,
        )
        .runs[0]
        .tokens_after
        for r in (0.2, 0.5, 0.9)
    ]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    bad = run_cli("eval", SESSION, "--target-ratio", "1.5")
    assert bad.exit_code == 2 and "--target-ratio" in bad.stderr and "Traceback" not in bad.stderr


def test_cli_refuses_an_unknown_strategy() -> None:
    out = run_cli("eval", SESSION, "--strategies", "full,bogus")
    assert out.exit_code == 2 and "unknown strategy bogus" in out.stderr


def _without_times(data: object) -> object:
    """An eval report minus wall times (the only figures two runs may disagree on)."""
    if isinstance(data, dict):
        return {k: _without_times(v) for k, v in data.items() if k not in ("seconds", "time")}
    if isinstance(data, list):
        return [_without_times(v) for v in data]
    return data


def test_jobs_report_what_one_process_reports_in_input_order(tmp_path: Path) -> None:
    for i, sample in enumerate(sorted(SAMPLES.glob("*.json"))[:4]):
        (tmp_path / f"{i}-{sample.name}").write_bytes(sample.read_bytes())
    one = run_cli("eval", tmp_path, "-s", "full,prune", "--jobs", "1", "--json")
    two = run_cli("eval", tmp_path, "-s", "full,prune", "--jobs", "2", "--json")
    assert one.exit_code == two.exit_code == 0, two.stderr
    assert _without_times(two.json()) == _without_times(one.json())
    sources = [run["input"] for run in two.json()["runs"]]
    assert sources == sorted(sources, key=lambda s: Path(s).name)  # input order, not finish order


def test_strategies_in_processes_report_what_one_process_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One conversation's strategies shared out over two processes (even on one core): the same
    # runs in the same order, and auto beside hybrid (the summary's facts read once).
    import os
    import time
    from dataclasses import replace

    from ctxcompact.batch import workers

    monkeypatch.setattr(workers, "default_jobs", lambda: 2)
    calls = tmp_path / "calls"

    def clock() -> float:  # a slow clock: each process takes some of the strategies
        with calls.open("a") as out:
            out.write(f"{os.getpid()}\n")
        time.sleep(0.02)
        return 0.0

    transcript = load_transcript(SESSION)
    one = evaluate_transcripts([transcript], keep_context=False)
    two = evaluate_transcripts([transcript], keep_context=False, jobs=2, clock=clock)
    assert len(set(calls.read_text().split())) == 2
    assert [replace(r, seconds=0.0) for r in two.runs] == [replace(r, seconds=0.0) for r in one.runs]
    assert [r.strategy for r in two.runs] == list(default_strategies())
    # The judge needs each run's messages as objects of this process: it runs here.
    calls.unlink()
    judged = evaluate_transcripts([transcript], strategies=["full", "prune"], jobs=2, clock=clock)
    assert set(calls.read_text().split()) == {str(os.getpid())} and judged.runs[0].original


def test_one_files_strategies_run_in_jobs_with_the_same_report() -> None:
    one = run_cli("eval", SESSION, "--jobs", "1", "--json")
    two = run_cli("eval", SESSION, "--jobs", "2", "--json")
    assert one.exit_code == two.exit_code == 0, two.stderr
    assert _without_times(two.json()) == _without_times(one.json())


def test_an_unreadable_file_is_reported_and_the_others_evaluated(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(SESSION.read_bytes())
    (tmp_path / "b.json").write_text("{not json")
    (tmp_path / "notes.txt").write_text("not a transcript")
    out = run_cli("eval", tmp_path, "-s", "prune", "--jobs", "2", "--json")
    assert out.exit_code == 2
    assert "b.json: invalid JSON at line 1" in out.stderr
    assert {run["input"] for run in out.json()["runs"]} == {str(tmp_path / "a.json")}
    only_bad = run_cli("eval", tmp_path / "b.json")
    assert only_bad.exit_code == 2 and only_bad.stderr.count("invalid JSON") == 1


def test_glob_chooses_the_files_of_a_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.jsonl.txt").write_bytes(SESSION.read_bytes())
    (tmp_path / "skip.json").write_text("{not json")
    out = run_cli("eval", tmp_path, "-s", "prune", "--glob", "*.txt", "--json")
    assert out.exit_code == 0, out.stderr
    assert [run["input"] for run in out.json()["runs"]] == [str(tmp_path / "keep.jsonl.txt")]


def test_evaluate_inputs_reports_each_input_once_and_refuses_bad_strategies() -> None:
    from ctxcompact.evaluation.files import EvalSettings, evaluate_inputs

    seen: list[int] = []
    paths = [str(SESSION), str(SAMPLES / "missing.json"), str(SESSION)]
    batch = evaluate_inputs(paths, EvalSettings(("prune",)), on_done=lambda i, _o: seen.append(i))
    assert sorted(seen) == [0, 1, 2]
    assert batch.failed == 1 and "missing.json" in batch.errors[0]
    assert batch.fatal_error() is None and len(batch.result.runs) == 2
    with pytest.raises(UsageError):
        evaluate_inputs(paths, EvalSettings(("bogus",)))


def test_eval_reads_the_facts_of_each_part_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The probes and full read the same messages (hybrid and auto, on a longer session, the same
    # older part): the summary's facts are read once per part, and the results are the same.
    from ctxcompact.compaction.summarize import facts

    transcript = load_transcript(SESSION)
    alone = evaluate_transcripts([transcript], clock=ticking_clock())  # type: ignore[arg-type]
    reads: list[tuple[int, ...]] = []
    read = facts._Reader.read

    def counted(self: facts._Reader) -> facts.Facts:
        reads.append(tuple(map(id, self.messages)))
        return read(self)

    monkeypatch.setattr(facts._Reader, "read", counted)
    result = evaluate_transcripts([transcript], clock=ticking_clock())  # type: ignore[arg-type]
    assert reads and len(reads) == len(set(reads))  # unshared: the probes' part read again by full
    assert result.summaries() == alone.summaries()


def test_shared_facts_serve_the_same_messages_only() -> None:
    from ctxcompact.compaction.summarize.facts import Facts, shared_facts

    messages = load_transcript(SESSION).conversations[0].messages
    assert Facts.gather(messages) is not Facts.gather(messages)  # nothing kept outside
    with shared_facts():
        first = Facts.gather(messages)
        assert Facts.gather(list(messages)) is first  # the same message objects
        assert Facts.gather(messages[1:]) is not first
    assert Facts.gather(messages) is not first


# --- one run of the strategies for two compactions that read the same (issue 24) ---------------


def _over_autos_threshold(rounds: int = 70) -> list[dict[str, object]]:
    """A session over ``--auto``'s default threshold (the default window's 38,400 tokens)."""
    records: list[dict[str, object]] = [{"role": "user", "content": "Fix the flaky build in src/app/."}]
    for r in range(rounds):
        output = "\n".join(
            f"src/app/mod_{r}.py:{i}: value {r * i} checked against limit {i}" for i in range(60)
        )
        records += [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"t{r}",
                        "name": "run",
                        "input": {"command": f"make check-{r}"},
                    }
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{r}", "content": output}]},
            {"role": "assistant", "content": f"Step {r}: module `mod_{r}` passes; next I check mod_{r + 1}."},
            {"role": "user", "content": f"Go on with mod_{r + 1}, and never touch the tests."},
        ]
    return records


def test_auto_above_its_threshold_reuses_hybrids_run_and_is_what_compact_auto_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--auto`` over its threshold runs ``hybrid`` with ``hybrid``'s budget: eval runs the
    strategies once for both, and its auto row is what ``compact --auto`` writes; each row's
    seconds include the strategies' run (the reused one's, for auto)."""
    import json

    from ctxcompact import compact_messages
    from ctxcompact.compaction import pipeline

    path = tmp_path / "long.json"
    records = _over_autos_threshold()
    path.write_text(json.dumps(records))
    now = [0.0]
    ran = pipeline._run_with_ladder
    runs: list[object] = []

    def slow_run(*args: object) -> object:
        runs.append(args)
        now[0] += 100.0  # the strategies' run takes 100 s on eval's clock
        return ran(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "_run_with_ladder", slow_run)
    result = evaluate_transcripts(
        [load_transcript(path)], strategies=["hybrid", "auto"], clock=lambda: now[0]
    )
    hybrid, auto = result.runs
    assert len(runs) == 1  # auto was served hybrid's run
    assert hybrid.seconds == auto.seconds == 100.0
    monkeypatch.setattr(pipeline, "_run_with_ladder", ran)
    fresh = compact_messages(records, auto=True, summarizer="extractive", dry_run=True, work_dir=tmp_path)
    assert fresh.compacted and auto.threshold == fresh.stats.threshold
    assert (auto.tokens_before, auto.tokens_after) == (
        fresh.stats.original_tokens,
        fresh.stats.compacted_tokens,
    )
    assert [(m.role, m.content) for m in auto.messages] == [
        (m.role, m.content) for m in fresh.conversation.messages
    ]
    out = tmp_path / "compacted.json"
    written = run_cli("compact", path, "--auto", "-o", out, "--archive-dir", tmp_path / "a")
    assert written.exit_code == 0, written.stderr
    assert run_cli("count", out, "--json").json()["transcripts"][0]["context"]["tokens"] == auto.tokens_after


def _shared_runs_variants() -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    """Each part of a run's key changed alone, as a change of ``compact_conversation``'s call."""
    from dataclasses import replace

    from ctxcompact.accounting.counters import shared_cache
    from ctxcompact.accounting.windows import make_budget, resolve_model
    from ctxcompact.compaction.pins import PinOptions
    from ctxcompact.compaction.restore import DiskFileReader
    from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer

    def options(**changes: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda call: {**call, "options": replace(call["options"], **changes)}

    def full(**changes: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda call: {
            **call,
            "options": call["options"].with_options(replace(call["options"].full, **changes)),
        }

    def messages(call: dict[str, Any]) -> dict[str, Any]:
        conv = call["conversation"]
        first = conv.messages[1]
        edited = first.with_content([{"type": "text", "text": "Something else entirely."}])
        return {**call, "conversation": conv.with_messages((conv.messages[0], edited, *conv.messages[2:]))}

    return {
        "a message": messages,
        "the same messages, other objects": lambda call: {
            **call,
            "conversation": call["conversation"].with_messages(
                tuple(replace(m) for m in call["conversation"].messages)
            ),
        },
        "the conversation's warnings": lambda call: {
            **call,
            "conversation": replace(call["conversation"], warnings=("a line was skipped",)),
        },
        "the strategies": options(strategies=("prune", "full")),
        "the pins": options(pins=PinOptions(("never touch",))),
        "the target tokens": options(target_tokens=3_000),
        "the target ratio": options(target_ratio=0.3),
        "the work dir": options(work_dir=Path("/nonexistent-ctxcompact-dir")),
        "the path map": options(path_map=(("/home/u", "/tmp"),)),
        "a summary option": full(summary_max_words=120),
        "a restore option": full(max_tokens_total=100),
        "the summarizer named": full(instructions="focus on the build"),
        "the deadline": full(deadline_at=1e12),
        "the budget": lambda call: {
            **call,
            "budget": make_budget(resolve_model(None, context_window=30_000)),
        },
        "the system tokens": lambda call: {**call, "system_tokens": 2_000},
        "the summarizer given": lambda call: {**call, "summarizer": ExtractiveSummarizer()},
        "the reader": lambda call: {**call, "reader": DiskFileReader()},
        "the counter": lambda call: {**call, "counter": shared_cache()},
    }


def _compaction(result: Any) -> object:
    return (result.stats, [(m.role, m.content, m.changed) for m in result.conversation.messages])


@pytest.mark.parametrize("change", sorted(_shared_runs_variants()))
def test_shared_runs_never_serve_a_run_for_a_different_input(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memo of strategy runs is keyed on all a run reads: any part changed is a miss, and
    the result is what a run outside any memo gives; the same call again is a hit."""
    from ctxcompact.accounting.counters import shared_cache
    from ctxcompact.accounting.windows import make_budget, resolve_model
    from ctxcompact.compaction import pipeline
    from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
    from ctxcompact.compaction.shared_runs import shared_runs

    ran = pipeline._run_with_ladder
    runs: list[object] = []
    monkeypatch.setattr(pipeline, "_run_with_ladder", lambda *a: runs.append(a) or ran(*a))
    call: dict[str, Any] = {
        "conversation": load_transcript(SESSION).conversations[0],
        "options": CompactOptions.from_keywords(strategies=("hybrid",), summarizer="extractive"),
        "budget": make_budget(resolve_model(None, context_window=20_000)),
        "counter": shared_cache(),
        "dry_run": True,
    }
    changed = _shared_runs_variants()[change](call)
    with shared_runs():
        first = compact_conversation(**call)
        assert _compaction(compact_conversation(**call)) == _compaction(first) and len(runs) == 1
        served = compact_conversation(**changed)
        assert len(runs) == 2
    alone = compact_conversation(**changed)
    assert _compaction(served) == _compaction(alone)


def test_shared_runs_serve_hybrid_whatever_its_unread_keep_recent_tokens() -> None:
    """Under a target hybrid never reads ``keep_recent_tokens`` (declared, and checked in
    tests/test_strategies.py): a run that differs in it alone is served — it is what makes
    ``--auto`` (which sets it) one run with ``hybrid``; a strategy that reads it is not."""
    from dataclasses import replace

    from ctxcompact.accounting.counters import shared_cache
    from ctxcompact.accounting.windows import make_budget, resolve_model
    from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
    from ctxcompact.compaction.shared_runs import shared_runs

    conv = load_transcript(SESSION).conversations[0]
    budget = make_budget(resolve_model(None, context_window=20_000))
    counter = shared_cache()

    def run(strategy: str, recent: int | None) -> None:
        options = CompactOptions.from_keywords(strategies=(strategy,), summarizer="extractive")
        options = options.with_options(replace(options.full, keep_recent_tokens=recent))
        compact_conversation(conv, options=options, budget=budget, counter=counter, dry_run=True)

    with shared_runs() as memo:
        run("hybrid", None)
        run("hybrid", 2_000)
        assert len(memo.runs) == 1
        run("full", None)
        run("full", 2_000)
        assert len(memo.runs) == 3


def test_compactions_outside_shared_runs_share_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxcompact.accounting.counters import shared_cache
    from ctxcompact.compaction import pipeline
    from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
    from ctxcompact.compaction.shared_runs import shared_runs

    ran = pipeline._run_with_ladder
    runs: list[object] = []
    monkeypatch.setattr(pipeline, "_run_with_ladder", lambda *a: runs.append(a) or ran(*a))
    conv, counter = load_transcript(SESSION).conversations[0], shared_cache()
    options = CompactOptions.from_keywords(strategies=("hybrid",), summarizer="extractive")
    with shared_runs():
        compact_conversation(conv, options=options, counter=counter, dry_run=True)
    compact_conversation(conv, options=options, counter=counter, dry_run=True)
    compact_conversation(conv, options=options, counter=counter, dry_run=True)
    assert len(runs) == 3
