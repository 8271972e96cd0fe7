"""Counters: one encoding per distinct string per run, and the fast tokenizer's exact counts."""

from __future__ import annotations

import collections
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

from ctxcompact.accounting import counters, tokens
from ctxcompact.accounting.counters import (
    BPE_MAX_CHARS,
    BpeCounter,
    CachedCounter,
    EstimateCounter,
    TiktokenCounter,
    cached,
    load_bpe,
    make_counter,
)
from ctxcompact.accounting.tokens import block_pieces, count_tokens, count_totals, preview, total_tokens
from ctxcompact.accounting.windows import make_budget, resolve_model
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.offload.tool_results import offload_tool_results
from ctxcompact.transcripts.io import load_messages, load_transcript

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from gen_transcript import generate  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"


class SpyCounter:
    """Estimates, and records every string it is asked to encode."""

    name = "spy"

    def __init__(self) -> None:
        self.encoded: list[str] = []
        self.calls = 0

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        self.calls += 1
        self.encoded.extend(texts)
        return EstimateCounter().count_batch(texts)

    def twice(self) -> list[str]:
        return [t[:40] for t, n in collections.Counter(self.encoded).items() if n > 1]


def _session() -> Any:
    records = generate(30_000, seed=3)
    # The same tool output twice (an agent that runs `ls` again): one encoding still.
    records.append({"role": "assistant", "content": [{"type": "text", "text": "Again."}]})
    return load_messages(records)


@pytest.mark.parametrize(
    "strategy", ["full", "prune", "prune,full", "clean-tools", "selective", "key-messages", "hybrid"]
)
def test_a_compaction_encodes_each_distinct_string_once(strategy: str, tmp_path: Path) -> None:
    spy = SpyCounter()
    options = CompactOptions.from_keywords(
        strategies=tuple(strategy.split(",")), summarizer="extractive", archive_dir=tmp_path, keep=1
    )
    budget = make_budget(resolve_model(None, context_window=24_000))  # a target for the targeted ones
    result = compact_conversation(_session(), options=options, counter=spy, budget=budget, dry_run=True)
    assert result.compacted
    assert spy.encoded, "nothing was counted"
    # before, the strategies and after all read one cache: nothing reaches the tokenizer twice
    assert spy.twice() == []


def test_offload_encodes_each_distinct_string_once(tmp_path: Path) -> None:
    content = "total 48\n" + "\n".join(f"-rw-r--r-- file_{i}.py" for i in range(60))
    records: list[dict[str, Any]] = [{"role": "user", "content": "list it twice"}]
    for n in range(3):
        records.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"cmd": "ls"}}],
            }
        )
        records.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": content}]}
        )
    records.append({"role": "assistant", "content": "done"})
    spy = SpyCounter()
    result = offload_tool_results(load_messages(records).messages, out_dir=tmp_path, counter=spy)
    assert result.offloaded_count == 3 and result.tokens_freed > 0
    assert spy.twice() == []


def test_eval_encodes_each_distinct_string_once_for_all_its_strategies() -> None:
    # eval runs every strategy on one conversation: one cache for all of them (issue 24: each
    # strategy re-tokenized the whole transcript, 21M characters for a 3.3M-character input).
    from ctxcompact.evaluation.run import evaluate_transcripts
    from ctxcompact.transcripts.io import Transcript

    conversation = _session()
    spy = SpyCounter()
    result = evaluate_transcripts([Transcript("s.json", "list", [], (conversation,))], counter=spy)
    assert len([r for r in result.runs if not r.skipped]) == len(result.strategies) >= 7
    assert spy.twice() == []


def test_the_cache_answers_like_its_counter_and_only_asks_for_new_strings() -> None:
    spy = SpyCounter()
    counter = CachedCounter(spy)
    texts = ["alpha beta", "gamma", "alpha beta", ""]
    assert counter.count_batch(texts) == EstimateCounter().count_batch(texts)
    assert counter.count_batch(["gamma", "delta"]) == EstimateCounter().count_batch(["gamma", "delta"])
    assert spy.encoded == ["alpha beta", "gamma", "", "delta"]
    # a fresh cache per run, in front of the same counter: nothing kept from the last run
    again = cached(counter)
    assert again is not counter and again.inner is spy and again.counts == {}
    assert make_counter("estimate").name == "estimate"


def test_tiktoken_uses_no_thread_pool_below_the_crossover(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = counters.load_encoding("cl100k_base")
    monkeypatch.setattr(counters, "usable_cores", lambda: 2)
    monkeypatch.setattr(
        type(enc), "encode_ordinary_batch", lambda *a, **k: pytest.fail("thread pool used"), raising=True
    )
    assert TiktokenCounter().count_batch(["hello world", "x" * 300_000, "y" * 300_000]) == [2, 37500, 75000]


def test_tiktoken_threads_large_pieces_only_with_several_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = counters.load_encoding("cl100k_base")
    seen: list[int] = []
    original = type(enc).encode_ordinary_batch

    def spy(self: Any, texts: list[str], **kwargs: Any) -> Any:
        seen.extend(len(t) for t in texts)
        return original(self, texts, **kwargs)

    monkeypatch.setattr(counters, "usable_cores", lambda: 8)
    monkeypatch.setattr(type(enc), "encode_ordinary_batch", spy)
    texts = ["hello world", "x" * 300_000, "y" * 300_000]
    assert TiktokenCounter().count_batch(texts) == [2, 37500, 75000]
    # Only the large texts go to the pool, in bounded parts (a one-letter run is one piece).
    assert sum(seen) == 600_000 and max(seen) <= counters.SAFE_CHUNK


def test_preview_of_a_prefix_matches_the_whole_text() -> None:
    for text in ["", "  a  ", "word " * 5000, " " * 1000 + "x y", "a\n\n" * 40, "é" * 61]:
        flat = " ".join(text.split())
        assert preview(text) == (flat if len(flat) <= 60 else flat[:59] + "…")


def test_count_tokens_reports_the_tokenizer() -> None:
    report = count_tokens(load_messages([{"role": "user", "content": "hi"}]).messages)
    assert report.tokenizer in ("tiktoken", "bpe-openai")
    assert count_tokens((), counter=EstimateCounter()).tokenizer is None


def test_tokenizer_env_forces_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXCOMPACT_TOKENIZER", "tiktoken")
    assert make_counter().tokenizer == "tiktoken"  # type: ignore[attr-defined]


# --- bpe-openai: the ctxcompact[fast] extra --------------------------------------------------

needs_bpe = pytest.mark.skipif(load_bpe("cl100k_base") is None, reason="bpe-openai is not installed")


def _pieces(paths: list[Path]) -> list[str]:
    texts: list[str] = []
    for path in paths:
        try:
            transcript = load_transcript(path)
        except Exception:
            continue  # formats ctxcompact does not read
        for conv in transcript.conversations:
            for message in (*conv.messages,):
                for block in message.content:
                    texts.extend(block_pieces(block)[0])
    return texts


def _assert_same_counts(texts: list[str]) -> None:
    assert texts
    fast = BpeCounter().count_batch(texts)
    slow = TiktokenCounter().count_batch(texts)
    diff = [(t[:60], a, b) for t, a, b in zip(texts, fast, slow, strict=True) if a != b]
    assert diff == []


@needs_bpe
def test_bpe_is_chosen_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTXCOMPACT_TOKENIZER", raising=False)
    assert make_counter().tokenizer == "bpe-openai"  # type: ignore[attr-defined]
    assert make_counter(encoding="o200k_base").tokenizer == "tiktoken"  # type: ignore[attr-defined]


@needs_bpe
def test_bpe_counts_like_tiktoken_on_the_samples_and_generated_transcripts() -> None:
    texts = _pieces(sorted(SAMPLES.glob("*.json*")))
    for seed in range(3):
        for message in load_messages(generate(40_000, seed=seed)).messages:
            for block in message.content:
                texts.extend(block_pieces(block)[0])
    texts += ["\ud800 lone surrogate", "é" * 1000, "\r\n\r\n  x", " " * 5000, "1234567" * 99]
    _assert_same_counts(texts)


@pytest.mark.corpus
@needs_bpe
@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_bpe_counts_like_tiktoken_on_the_corpus() -> None:
    _assert_same_counts(_pieces(sorted(p for p in CORPUS.rglob("*") if p.is_file())))


@needs_bpe
def test_bpe_long_inputs_never_hit_its_limit() -> None:
    line = "def f(x):\n    return x * 2  # twice\n"
    with_lines = line * (2 * BPE_MAX_CHARS // len(line) + 3)  # over 1M characters: split at lines
    one_line = "word " * (BPE_MAX_CHARS // 4)  # no safe boundary: tiktoken counts it
    mixed = "\n".join([with_lines, one_line, "tail\n" * 10])
    _assert_same_counts([with_lines, one_line, mixed])


def test_total_tokens_is_the_reports_total() -> None:
    convs = [c for p in sorted(SAMPLES.glob("*.json*")) for c in load_transcript(p).conversations]
    convs.append(load_messages(generate(20_000, seed=5)))
    for conv in convs:
        for counter in (EstimateCounter(), make_counter()):
            report = count_tokens(conv.messages, counter=counter, system=conv.system, tools=conv.tools)
            assert total_tokens(conv.messages, counter=counter, system=conv.system, tools=conv.tools) == (
                report.total
            )


def test_a_counter_kept_across_runs_keeps_no_strings(tmp_path: Path) -> None:
    """An agent loop may pass one counter to every compaction: each run caches on its own."""
    kept = make_counter("estimate")
    options = CompactOptions.from_keywords(strategies=("prune",), archive_dir=tmp_path, keep=1)
    for _ in range(2):
        assert compact_conversation(_session(), options=options, counter=kept, dry_run=True).compacted
    assert isinstance(kept, CachedCounter) and kept.counts == {}


@pytest.fixture
def block_reads(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[int]:
    """How many times each block (by id) is read for counting."""
    read: collections.Counter[int] = collections.Counter()
    original = tokens.block_pieces

    def spy(block: Any) -> tuple[list[str], int]:
        read[id(block)] += 1
        return original(block)

    monkeypatch.setattr(tokens, "block_pieces", spy)
    return read


def test_a_message_counted_once_is_not_read_again_in_the_same_run(
    block_reads: collections.Counter[int],
) -> None:
    """The per-run cache keeps each message's total: the step figures and the after figure
    look up messages the before figure counted, and read only new ones."""
    messages = _session().messages
    counter = cached(EstimateCounter())
    report = count_tokens(messages, counter=counter)
    assert tokens.message_totals(messages, counter) == [m.tokens for m in report.messages]
    new = messages[0].with_content([{"type": "text", "text": "a changed message"}])
    assert tokens.message_totals([new, *messages[1:]], counter)[0] == 3 + 5
    assert max(block_reads.values()) == 1, "a block was read twice"


def test_a_full_compaction_reads_each_original_block_once(
    block_reads: collections.Counter[int], tmp_path: Path
) -> None:
    conv = _session()
    options = CompactOptions.from_keywords(
        strategies=("full",), summarizer="extractive", archive_dir=tmp_path
    )
    assert compact_conversation(conv, options=options, counter=EstimateCounter(), dry_run=True).compacted
    blocks = [id(b) for m in conv.messages for b in m.content]
    assert [block_reads[b] for b in blocks] == [1] * len(blocks)


def test_count_totals_gives_the_reports_figures() -> None:
    """A compaction's lean measure (no breakdown by type) has the full report's total, roles
    and per-message totals, on every sample and a generated session, with either counter."""
    convs = [c for p in sorted(SAMPLES.glob("*.json*")) for c in load_transcript(p).conversations]
    convs.append(load_messages(generate(20_000, seed=5)))
    for conv in convs:
        for make in (EstimateCounter, make_counter):
            report = count_tokens(conv.messages, counter=make(), system=conv.system, tools=conv.tools)
            lean = count_totals(conv.messages, counter=make(), system=conv.system, tools=conv.tools)
            assert (lean.total, lean.by_role, lean.extras) == (report.total, report.by_role, report.extras)
            assert [(m.index, m.role, m.tokens) for m in lean.messages] == [
                (m.index, m.role, m.tokens) for m in report.messages
            ]


def test_a_shared_cache_serves_a_lean_measure_from_a_full_report() -> None:
    """eval measures a conversation with the breakdown (offload) and without it (each
    strategy's compaction) through one shared cache: the full report serves both."""
    from ctxcompact.accounting.check import measure
    from ctxcompact.accounting.counters import shared_cache

    conv = load_messages(generate(5_000, seed=3))
    shared = shared_cache(EstimateCounter())
    full = measure(conv, shared, previews=False)
    assert measure(conv, shared, breakdown=False) is full
    alone = shared_cache(EstimateCounter())
    lean = measure(conv, alone, breakdown=False)
    assert lean.by_type == {} and (lean.total, lean.by_role) == (full.total, full.by_role)
    assert measure(conv, alone, previews=False).by_type == full.by_type  # the lean one serves no breakdown
