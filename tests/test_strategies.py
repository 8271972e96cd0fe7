"""The strategy table: names, options and the contract the pipeline holds every strategy to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from ctxcompact import compact_messages
from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.accounting.windows import make_budget, resolve_model
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.strategies import (
    STRATEGIES,
    STRATEGY_NAMES,
    Strategy,
    StrategyContext,
    StrategyResult,
)
from ctxcompact.compaction.strategies.clean_tools import CleanToolsOptions
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.strategies.hybrid import HYBRID, MASK, SUMMARY
from ctxcompact.compaction.strategies.prune import PruneOptions
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_messages


def test_every_strategy_runs_with_its_defaults_unless_configured() -> None:
    """A new strategy is its options, its module and a row: CompactOptions needs no field."""
    assert STRATEGY_NAMES == ("full", "prune", "clean-tools", "selective", "key-messages", "hybrid")
    defaults = CompactOptions()
    for strategy in STRATEGIES.values():
        assert defaults.options_for(strategy.options) == strategy.options()
    configured = defaults.with_options(PruneOptions(keep=1))
    assert configured.options_for(PruneOptions).keep == 1 and configured.full == FullOptions()


def test_option_names_are_unique_so_flat_keywords_have_one_owner() -> None:
    names = [f.name for s in STRATEGIES.values() for f in fields(s.options)]
    names += [f.name for f in fields(CompactOptions) if f.name != "configured"]
    names += [s.name.replace("-", "_") for s in STRATEGIES.values()]  # whole options: full=FullOptions()
    assert len(names) == len(set(names))


def test_flat_keywords_go_to_the_options_that_own_them(tmp_path: Path) -> None:
    options = CompactOptions.from_keywords(
        strategies=("prune", "full"), work_dir=tmp_path, keep=0, include_loop=True, max_files=1, rounds=4
    )
    assert options.strategies == ("prune", "full") and options.work_dir == tmp_path
    assert options.options_for(PruneOptions) == PruneOptions(keep=0, include_loop=True)
    assert options.full == FullOptions(max_files=1)
    assert options.options_for(CleanToolsOptions) == CleanToolsOptions(rounds=4)


def test_an_unknown_keyword_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match="'kep'"):
        compact_messages([{"role": "user", "content": "hi"}], kep=1)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"strategies": ("nope",), "keep": -1}, "unknown strategy nope; expected one or more of"),
        ({"keep": -1}, "keep must not be negative."),
        ({"rounds": -1}, "rounds must not be negative."),
        ({"max_files": -1}, "max_files must not be negative."),
        ({"summary_max_words": 0}, "summary_max_words must be at least 1."),
        ({"timeout": 0}, "timeout must be positive."),
    ],
)
def test_each_options_type_checks_its_own_values(keywords: dict[str, Any], message: str) -> None:
    """The library names the option as a library caller wrote it (``keep``)."""
    with pytest.raises(UsageError) as info:
        CompactOptions.from_keywords(**keywords)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--keep", "-1"], "--keep must not be negative."),
        (["--summary-max-words", "0"], "--summary-max-words must be at least 1."),
        (["--threshold", "0.1"], "--threshold must be between 0.4 and 0.9, got 0.1."),
        (["--pin", "("], "--pin '(' is not a valid regular expression"),
    ],
)
def test_the_command_line_names_the_same_errors_by_their_flags(argv: list[str], message: str) -> None:
    from cli_helpers import run_cli

    out = run_cli("compact", "-", "--summarizer", "extractive", "--dry-run", *argv, input="[]")
    assert out.exit_code == 2 and out.stderr.startswith(f"ctxcompact: error: {message}"), out.stderr


@dataclass(frozen=True, slots=True)
class ProbeOptions:
    label: str = "probe"


@dataclass(frozen=True, slots=True)
class ProbeDetails:
    target: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target}


def test_a_new_strategy_is_one_table_row_and_gets_the_budget_and_the_summarizer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What issue 10's strategies rely on: the target, the summarizer, the other options."""
    seen: list[tuple[StrategyContext, ProbeOptions]] = []

    def run_probe(
        messages: Sequence[Message], options: ProbeOptions, context: StrategyContext
    ) -> StrategyResult:
        seen.append((context, options))
        summary = context.summarizer().summarize(messages[:-1])
        kept = (messages[-1],)
        return StrategyResult(
            (*load_messages([{"role": "user", "content": summary.text}]).messages, *kept),
            True,
            ProbeDetails(context.target_tokens),
            compacted_message_count=len(messages) - 1,
        )

    monkeypatch.setitem(STRATEGIES, "probe", Strategy("probe", ProbeOptions, run_probe))
    conv = load_messages(
        [
            {"role": "user", "content": "Fix the bug in a.py. " * 200},
            {"role": "assistant", "content": "Done, the bug was in the rounding. " * 200},
            {"role": "user", "content": "Thanks."},
        ]
    )
    budget = make_budget(resolve_model(None, context_window=1000), output_reserve=100)
    summarizer = ExtractiveSummarizer()
    options = CompactOptions(strategies=("probe",), archive_dir=tmp_path, configured=(PruneOptions(keep=7),))
    result = compact_conversation(
        conv, options=options, budget=budget, summarizer=summarizer, counter=EstimateCounter()
    )
    context, probe_options = seen[0]
    # The run aims at its target (half the threshold by default) and must end below the limit.
    aim = options.aim(budget.threshold)
    assert aim == budget.threshold // 2
    assert (context.target_tokens, context.limit_tokens) == (aim, budget.threshold)
    assert context.summarizer() is summarizer
    assert probe_options == ProbeOptions()  # defaults: CompactOptions holds none for it
    assert context.options_for(PruneOptions).keep == 7  # a fallback ladder runs others as configured
    assert context.original == conv.messages
    assert result.compacted and result.stats.compacted_message_count == 2
    probe = {k: v for k, v in result.stats.steps[0].items() if k != "tokens"}
    assert probe == {"strategy": "probe", "changed": True, "target": aim}
    # still over the threshold: the fallback ladder ran and says why it could not help
    assert result.stats.steps[1]["strategy"] == "ladder"
    assert "pinned messages alone" in result.stats.steps[1]["reason"]  # the task, pinned


def test_each_row_names_its_strategy_module_run_function() -> None:
    """The table imports a strategy's code on its first run (start-up): each row's name leads
    to the module's own function, and the options type is the one that module re-exports."""
    import importlib

    from ctxcompact.compaction.strategies import LazyRun

    for strategy in STRATEGIES.values():
        assert isinstance(strategy.run, LazyRun), strategy.name
        module = importlib.import_module(strategy.run.module)
        assert strategy.run.load() is getattr(module, f"run_{strategy.name.replace('-', '_')}")
        assert getattr(module, strategy.options.__name__) is strategy.options


def _drop_oldest(messages: Sequence[Message], options: None, context: StrategyContext) -> StrategyResult:
    """A library caller's own strategy: a plain function, as pydantic-ai's history processors."""
    assert options is None
    return StrategyResult(tuple(messages[2:]), True, ProbeDetails(context.target_tokens))


def test_the_library_takes_a_function_as_a_strategy(tmp_path: Path) -> None:
    records = [{"role": r, "content": f"{r} {i}"} for i in range(3) for r in ("user", "assistant")]
    result = compact_messages(
        records, strategies=(_drop_oldest, "prune"), archive_dir=tmp_path, counter="estimate"
    )
    assert [m["content"] for m in result.messages] == ["user 1", "assistant 1", "user 2", "assistant 2"]
    assert [s["strategy"] for s in result.stats.steps] == ["_drop_oldest", "prune"]
    assert result.stats.strategy == "_drop_oldest,prune"


def test_a_pipeline_is_a_strategy_and_a_step_of_another(tmp_path: Path) -> None:
    from ctxcompact.compaction.strategies.pipeline import PipelineOptions, run_pipeline

    inner = PipelineOptions((_drop_oldest, "clean-tools"))
    nested = Strategy("inner", PipelineOptions, run_pipeline)
    records = [{"role": r, "content": f"{r} {i}"} for i in range(4) for r in ("user", "assistant")]
    conv = load_messages(records)
    options = CompactOptions(strategies=(nested, _drop_oldest), archive_dir=tmp_path)
    # The row's options come from the run (none configured: the defaults, an empty pipeline) ...
    empty = compact_conversation(conv, options=options, counter=EstimateCounter())
    assert [s["strategy"] for s in empty.stats.steps] == ["inner", "_drop_oldest"]
    assert empty.stats.steps[0]["steps"] == [] and len(empty.messages) == 6
    # ... or close over their own.
    bound = Strategy("inner", PipelineOptions, lambda m, _o, c: run_pipeline(m, inner, c))
    result = compact_conversation(
        conv, options=CompactOptions(strategies=(bound,), archive_dir=tmp_path), counter=EstimateCounter()
    )
    assert [s["strategy"] for s in result.stats.steps[0]["steps"]] == ["_drop_oldest", "clean-tools"]
    assert len(result.messages) == 6


def test_hybrid_is_the_pipeline_of_its_budget_steps(tmp_path: Path) -> None:
    """Over its target hybrid runs both of its steps — ``mask``, then ``summary`` — as one
    pipeline (issue 18), each a strategy of its own that aims at the run's budget (issue 19)."""
    records = [
        {"role": "user", "content": "Fix the rounding bug. " * 40},
        {"role": "assistant", "content": "Looking at invoice.py. " * 40},
        {"role": "user", "content": "Now add a test."},
    ]
    conv = load_messages(records)
    budget = make_budget(resolve_model(None, context_window=600), output_reserve=100)
    options = CompactOptions(strategies=("hybrid",), archive_dir=tmp_path)
    hybrid = compact_conversation(
        conv, options=options, budget=budget, summarizer=ExtractiveSummarizer(), counter=EstimateCounter()
    )
    step = hybrid.stats.steps[0]
    assert [s["strategy"] for s in step["steps"]] == ["mask", "summary"] and step["skipped"] == []
    assert HYBRID.steps == (MASK, SUMMARY) and HYBRID.stop_under_target


def test_compact_takes_every_option_a_strategy_declares_and_builds_its_options() -> None:
    """A strategy's flags come from its options' fields: ``compact`` shows each once and
    builds the options object from what was typed."""
    import typer

    from ctxcompact.cli import app
    from ctxcompact.cli.strategies import strategy_options
    from ctxcompact.compaction.strategies.base import flag_of
    from ctxcompact.compaction.strategies.options import KeyMessageOptions

    group = typer.main.get_command(app)
    command = group.get_command(typer.Context(group), "compact")  # type: ignore[attr-defined]
    names = [p.name for p in command.params]
    assert len(names) == len(set(names))
    flags = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    for row in STRATEGIES.values():
        for option in fields(row.options):
            declared = flag_of(option)
            if declared is not None:
                assert set(declared.names[0].split("/")) <= flags, option.name
    values = {p.name: p.default for p in command.params}
    values.update(keep=2, keep_thinking="1", exclude_tools="Bash, Read", min_recent_messages=4)
    built = {type(o): o for o in strategy_options(values)}
    assert built[PruneOptions] == PruneOptions(keep=2, keep_thinking=1, exclude_tools=("Bash", "Read"))
    assert built[KeyMessageOptions].min_recent_messages == 4


#: Other values of each option a strategy declares unread under a target.
UNREAD_VALUES: dict[str, tuple[object, ...]] = {"keep_recent_tokens": (0, 300, 2_000, 10**6)}


@pytest.mark.parametrize(
    "row", [r for r in STRATEGIES.values() if r.unread_with_target], ids=lambda r: r.name
)
@pytest.mark.parametrize("window", [12_000, 20_000, 30_000])
def test_options_a_strategy_declares_unread_under_a_target_change_nothing(row: Strategy, window: int) -> None:
    """What :attr:`Strategy.unread_with_target` declares (a memo of runs keys runs without it)
    is so: with a budget, the run gives the same result and stats at any value of it."""
    from dataclasses import replace

    from conftest import SAMPLES

    from ctxcompact.compaction.strategies import option_owners
    from ctxcompact.transcripts.io import load_transcript

    conv = load_transcript(SAMPLES / "anthropic-session.json").conversations[0]
    budget = make_budget(resolve_model(None, context_window=window))
    base = CompactOptions.from_keywords(strategies=(row.name,), summarizer="extractive")

    def run(name: str, value: object) -> object:
        kind = option_owners()[name]
        options = base.with_options(replace(base.options_for(kind), **{name: value}))
        result = compact_conversation(conv, options=options, budget=budget, dry_run=True)
        return result.stats, [(m.role, m.content) for m in result.conversation.messages]

    for name in row.unread_with_target:
        assert name in UNREAD_VALUES, f"give {name} other values to try"
        default = getattr(base.options_for(option_owners()[name]), name)
        expected = run(name, default)
        assert all(run(name, value) == expected for value in UNREAD_VALUES[name]), name
