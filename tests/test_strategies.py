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
from ctxcompact.compaction.strategies.prune import PruneOptions
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.errors import UsageError
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_messages


def test_every_strategy_of_the_table_has_its_options_in_compact_options() -> None:
    assert STRATEGY_NAMES == ("full", "prune", "clean-tools", "selective", "key-messages", "hybrid")
    defaults = CompactOptions()
    for strategy in STRATEGIES.values():
        held = [
            f.name for f in fields(CompactOptions) if isinstance(getattr(defaults, f.name), strategy.options)
        ]
        assert len(held) == 1, strategy.name


def test_option_names_are_unique_so_flat_keywords_have_one_owner() -> None:
    names = [f.name for s in STRATEGIES.values() for f in fields(s.options)]
    names += [
        f.name
        for f in fields(CompactOptions)
        if f.name not in ("full", "prune", "clean_tools", "selective", "key_messages", "hybrid")
    ]
    assert len(names) == len(set(names))


def test_flat_keywords_go_to_the_options_that_own_them(tmp_path: Path) -> None:
    options = CompactOptions.from_keywords(
        strategies=("prune", "full"), work_dir=tmp_path, keep=0, include_loop=True, max_files=1, rounds=4
    )
    assert options.strategies == ("prune", "full") and options.work_dir == tmp_path
    assert options.prune == PruneOptions(keep=0, include_loop=True)
    assert options.full == FullOptions(max_files=1)
    assert options.clean_tools == CleanToolsOptions(rounds=4)


def test_an_unknown_keyword_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match="'kep'"):
        compact_messages([{"role": "user", "content": "hi"}], kep=1)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"strategies": ("nope",), "keep": -1}, "unknown strategy nope; expected one or more of"),
        ({"keep": -1}, "--keep must not be negative."),
        ({"rounds": -1}, "--rounds must not be negative."),
        ({"max_files": -1}, "--max-files must not be negative."),
        ({"summary_max_words": 0}, "--summary-max-words must be at least 1."),
        ({"timeout": 0}, "--timeout must be positive."),
    ],
)
def test_each_options_type_checks_its_own_values(keywords: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as info:
        CompactOptions.from_keywords(**keywords)
    assert str(info.value).startswith(message)


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
    options = CompactOptions(strategies=("probe",), archive_dir=tmp_path, prune=PruneOptions(keep=7))
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
