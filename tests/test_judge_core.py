"""The judge's pure pieces: reply parsers, prices, the cache, and the cost plan."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import SAMPLES
from hypothesis import given
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import make_counter
from ctxcompact.evaluation.judge import QUESTION_KINDS
from ctxcompact.evaluation.judge.ask import CachedAsker, DirectAsker
from ctxcompact.evaluation.judge.cache import JudgeCache
from ctxcompact.evaluation.judge.cost import cost_line, estimated_cost
from ctxcompact.evaluation.judge.prompts import (
    ANSWERS_SYSTEM,
    QUESTIONS_SYSTEM,
    parse_answers,
    parse_questions,
    parse_scores,
)
from ctxcompact.evaluation.judge.run import JudgePlan, JudgeSettings, judge_eval, plan_judge
from ctxcompact.evaluation.run import evaluate_transcripts
from ctxcompact.llm.transport import BatchAnswer, BatchRequest, TextReply, TransportFailure
from ctxcompact.transcripts.io import load_transcript


def test_questions_parse_from_fenced_json_and_keep_per_kind_in_kind_order() -> None:
    items = [{"kind": "decision", "question": "why?"}] + [
        {"kind": "recall", "question": f"r{i}"} for i in range(3)
    ]
    reply = (
        "Sure!\n```json\n" + json.dumps({"questions": [*items, {"kind": "vibes", "question": "x"}]}) + "\n```"
    )
    parsed = parse_questions(reply, per_kind=2)
    assert parsed is not None
    assert [(q.kind, q.text) for q in parsed] == [("recall", "r0"), ("recall", "r1"), ("decision", "why?")]


@pytest.mark.parametrize("reply", ["", "no json", "{", '{"questions": 3}', '{"questions": [{"kind": "x"}]}'])
def test_unusable_question_replies_are_none(reply: str) -> None:
    assert parse_questions(reply, per_kind=2) is None


def test_scores_by_id_out_of_range_or_odd_values_missing() -> None:
    reply = json.dumps(
        {
            "scores": [
                {"id": 1, "score": 5},
                {"id": "2", "score": 3.0},
                {"id": 3, "score": 7},
                {"id": 4, "score": True},
            ]
        }
    )
    assert parse_scores(reply, count=5) == (5, 3, None, None, None)
    assert parse_scores('{"scores": [{"id": 9, "score": 2}]}', count=2) is None
    assert parse_answers('{"answers": [{"id": 2, "answer": "b"}]}', count=2) == (None, "b")


@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    parse_questions(text, per_kind=2)
    parse_answers(text, count=3)
    parse_scores(text, count=3)


def test_judge_cost_from_the_price_table_batch_half_unknown_says_so() -> None:
    plan = JudgePlan(requests=3, cached=1, input_tokens=1_000_000, output_tokens=100_000)
    assert estimated_cost(plan, model="claude-sonnet-5-5") == pytest.approx(3.0)  # $2 in, $10 out
    assert estimated_cost(plan, model="claude-sonnet-5-5", batch=True) == pytest.approx(1.5)
    unknown = cost_line(plan, model="mystery")
    assert "cost unknown" in unknown and "genai-prices" in unknown
    assert cost_line(plan, model="claude-sonnet-5-5", batch=True).endswith("(Message Batches, half price)")
    assert "$1.50 (list prices of genai-prices" in cost_line(plan, model="claude-sonnet-5-5", batch=True)


def test_cache_round_trip_and_refuses_odd_keys(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c")
    assert cache.get("ctxc-abc") is None
    cache.put("ctxc-abc", "réponse")
    assert cache.get("ctxc-abc") == "réponse"
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["ctxc-abc.txt"]  # no temp file left
    with pytest.raises(ValueError):
        cache.get("../escape")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no user ids on this platform")
def test_cache_in_a_shared_folder_neither_feeds_planted_replies_nor_writes_through_links(
    tmp_path: Path,
) -> None:
    """A cache directory pointed at a folder others can write: a reply planted there (a file
    anyone may write, or a link to another file) is not used, and storing a reply replaces a
    planted link instead of writing through it to the file it points at."""
    cache = JudgeCache(tmp_path / "c")
    cache.put("ctxc-good", "fine")
    planted = tmp_path / "c" / "ctxc-planted.txt"
    planted.write_text('{"scores": [{"id": 1, "score": 5}]}')
    planted.chmod(0o666)
    assert cache.get("ctxc-planted") is None
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file")
    link = tmp_path / "c" / "ctxc-link.txt"
    link.symlink_to(victim)
    assert cache.get("ctxc-link") is None  # not read through the link
    cache.put("ctxc-link", "reply")
    assert victim.read_text() == "the user's own file"
    assert not link.is_symlink() and cache.get("ctxc-link") == "reply"
    assert cache.get("ctxc-good") == "fine"


class Scripted:
    """An asker answering every stage well, counting what it is asked."""

    def __init__(self) -> None:
        self.asked: list[BatchRequest] = []

    def ask(self, requests: Sequence[BatchRequest]) -> dict[str, BatchAnswer]:
        self.asked.extend(requests)
        return {r.custom_id: TextReply(self._reply(r)) for r in requests}

    @staticmethod
    def _reply(r: BatchRequest) -> str:
        if r.system == QUESTIONS_SYSTEM:
            return json.dumps({"questions": [{"kind": k, "question": f"{k}?"} for k in QUESTION_KINDS]})
        if r.system == ANSWERS_SYSTEM:
            return json.dumps({"answers": [{"id": i, "answer": "a"} for i in range(1, 5)]})
        return json.dumps({"scores": [{"id": i, "score": 4} for i in range(1, 5)]})


def test_plan_shrinks_as_the_cache_fills_and_a_full_cache_costs_nothing(tmp_path: Path) -> None:
    result = evaluate_transcripts(
        [load_transcript(SAMPLES / "anthropic-session.json")], strategies=["full", "prune"]
    )
    counter, cache = make_counter(), JudgeCache(tmp_path)
    settings = JudgeSettings(per_kind=1)
    before = plan_judge(result, cache=cache, counter=counter, settings=settings)
    assert (before.requests, before.cached) == (5, 0) and before.input_tokens > 0
    scripted = Scripted()
    judged = judge_eval(result, asker=CachedAsker(scripted, cache), counter=counter, settings=settings)
    assert judged.strategy("full").overall == 4.0 and judged.strategy("prune").kind("recall") == 4.0
    sent = len(scripted.asked)
    after = plan_judge(result, cache=cache, counter=counter, settings=settings)
    assert after.uncached == 0 and after.input_tokens == 0 and after.output_tokens == 0
    again = judge_eval(result, asker=CachedAsker(scripted, cache), counter=counter, settings=settings)
    assert len(scripted.asked) == sent and again == judged


def test_nothing_compacted_means_nothing_asked(tmp_path: Path) -> None:
    result = evaluate_transcripts([load_transcript(SAMPLES / "openai-chat.json")], strategies=["clean-tools"])
    if any(r.replaced for r in result.runs):
        pytest.skip("the sample compacts something with this strategy")
    plan = plan_judge(result, cache=JudgeCache(tmp_path), counter=make_counter())
    assert plan.requests == 0


class Flaky:
    """A transport that fails with each of ``failures`` in turn, then answers ``text``."""

    name = "flaky"

    def __init__(self, *failures: TransportFailure, text: str = "ok") -> None:
        self.failures = list(failures)
        self.text = text
        self.calls = 0

    def complete(self, *, model: str, system: str, user: str, max_tokens: int, timeout: float) -> TextReply:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return TextReply(self.text)


def test_direct_asker_retries_what_may_pass_and_reports_what_cannot() -> None:
    request = BatchRequest("ctxc-1", "m", "s", "u", 10)
    waits: list[float] = []
    flaky = Flaky(
        TransportFailure("HTTP 429", retryable=True, retry_after=0.25),
        TransportFailure("HTTP 500", retryable=True),
    )
    assert DirectAsker(flaky, sleep=waits.append).ask([request]) == {"ctxc-1": TextReply("ok")}
    assert flaky.calls == 3 and waits[0] == 0.25  # the server's retry-after honoured
    refused = Flaky(TransportFailure("the API answered HTTP 401", retryable=False))
    assert DirectAsker(refused, sleep=waits.append).ask([request]) == {"ctxc-1": "the API answered HTTP 401"}
    assert refused.calls == 1
    empty = Flaky(text="  ")
    assert DirectAsker(empty, max_retries=1, sleep=waits.append).ask([request]) == {
        "ctxc-1": "the model returned an empty answer"
    }
