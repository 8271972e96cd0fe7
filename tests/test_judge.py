"""``eval --judge``: probe questions, answers from the compacted context and 0–5 scores, all
through the fake Messages API (tests/fake_anthropic.py), cached by content hash, priced first."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CliOutcome, run_cli
from conftest import SAMPLES
from fake_anthropic import BATCHES_PATH, MESSAGES_PATH, FakeAnthropicServer

from ctxcompact.evaluation.judge import QUESTION_KINDS
from ctxcompact.evaluation.judge.prompts import ANSWERS_SYSTEM, QUESTIONS_SYSTEM, SCORES_SYSTEM
from ctxcompact.markers import SUMMARY_PREFIX

SESSION = SAMPLES / "anthropic-session.json"
KEY = "sk-ant-test-judge-secret-key-0123456789"
STRATEGIES = "full,prune"


def judge_reply(body: Any) -> str:
    """A model that answers each stage's prompt: two questions per kind, an answer to each,
    and score ``id % 6`` for answer ``id``."""
    system, user = body["system"], body["messages"][0]["content"]
    if system == QUESTIONS_SYSTEM:
        items = [{"kind": k, "question": f"{k} question {i}?"} for k in QUESTION_KINDS for i in (1, 2)]
        return "Here you go:\n```json\n" + json.dumps({"questions": items}) + "\n```"
    ids = [int(n) for n in re.findall(r"^\[(\d+)\]", user, flags=re.M)]
    if system == ANSWERS_SYSTEM:  # answers differ with the context they were written from
        size = len(user)
        return json.dumps({"answers": [{"id": i, "answer": f"answer {i} from {size}"} for i in ids]})
    assert system == SCORES_SYSTEM
    return json.dumps({"scores": [{"id": i, "score": i % 6, "reason": "r"} for i in ids]})


def judge(
    fake: FakeAnthropicServer, tmp_path: Path, *extra: str | Path, env: dict[str, str] | None = None
) -> CliOutcome:
    return run_cli(
        "eval", SESSION, "--strategies", STRATEGIES, "--judge-cache", tmp_path / "cache", *extra,
        env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.base_url, **(env or {})},
    )  # fmt: skip


def test_scores_per_strategy_and_kind_in_json(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.answer = judge_reply
    out = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes", "--json")
    assert out.exit_code == 0, out.stderr
    data = out.json()
    # One question request for the conversation (shared), one answer and one score request per run.
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 1 + 2 * 2, out.stderr
    # scores id % 6 for ids 1..8: recall 1,2; artifact 3,4; continuation 5,0; decision 1,2
    expected = {"recall": 1.5, "artifact": 3.5, "continuation": 2.5, "decision": 1.5}
    for entry in data["strategies"]:
        assert entry["judge"] == {"overall": 2.25, "by_kind": expected, "scored": 8, "missing": 0}
    run = data["runs"][0]["judge"]
    assert [q["kind"] for q in run["questions"]] == [k for k in QUESTION_KINDS for _ in (1, 2)]
    assert run["questions"][0]["answer"].startswith("answer 1 from ")
    assert run["questions"][0] == {
        "kind": "recall", "question": "recall question 1?", "answer": run["questions"][0]["answer"], "score": 1
    }  # fmt: skip
    assert data["judge"]["question_kinds"] == list(QUESTION_KINDS)
    # The answers were written from the compacted context, the scores against the full one.
    prompts = [r.body["messages"][0]["content"] for r in fake_api.requests]
    answers_from = [
        p for r, p in zip(fake_api.requests, prompts, strict=True) if r.body["system"] == ANSWERS_SYSTEM
    ]
    scored_against = [
        p for r, p in zip(fake_api.requests, prompts, strict=True) if r.body["system"] == SCORES_SYSTEM
    ]
    assert any(SUMMARY_PREFIX.strip() in p for p in answers_from)  # full's summary
    assert all(SUMMARY_PREFIX.strip() not in p for p in scored_against)
    assert all(len(p) > max(len(a) for a in answers_from) for p in scored_against)


def test_table_has_judge_columns_and_output_without_judge_is_unchanged(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    fake_api.answer = judge_reply
    plain = run_cli("eval", SESSION, "--strategies", STRATEGIES)
    judged = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes")
    assert judged.exit_code == 0, judged.stderr
    header = judged.stdout.splitlines()[0].split()
    assert header[-5:] == ["judge", "j.recall", "j.artifact", "j.continuation", "j.decision"]
    assert "2.2" in judged.stdout.splitlines()[1] or "2.3" in judged.stdout.splitlines()[1]
    assert "judge" not in plain.stdout and "judge" not in run_cli("eval", SESSION, "--json").stdout


def test_html_has_a_judge_section(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.answer = judge_reply
    page = tmp_path / "eval.html"
    out = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes", "--html", page)
    assert out.exit_code == 0, out.stderr
    html = page.read_text()
    assert "<th>judge</th>" in html and "recall question 1?" in html and "LLM judge" in html


def test_second_run_is_answered_from_the_cache(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.answer = judge_reply
    first = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes", "--json")
    sent = len(fake_api.requests)
    # No --yes needed: nothing left to pay for, so nothing is asked.
    second = judge(fake_api, tmp_path, "--judge", "anthropic", "--json")
    assert second.exit_code == 0, second.stderr
    assert len(fake_api.requests) == sent
    assert "5 requests (5 cached)" in second.stderr
    assert [r["judge"] for r in second.json()["runs"]] == [r["judge"] for r in first.json()["runs"]]


def test_cost_line_and_consent(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.answer = judge_reply
    refused = judge(fake_api, tmp_path, "--judge", "anthropic")  # stdin is not a terminal
    assert refused.exit_code == 2
    assert "--yes" in refused.stderr and fake_api.requests == []
    line = re.search(
        r"eval --judge: 5 requests \(0 cached\), ~([\d,]+) input tokens, ≤([\d,]+) output tokens, "
        r"estimated cost \$(\d+\.\d\d)",
        refused.stderr,
    )
    assert line, refused.stderr
    inputs, outputs = (int(line.group(i).replace(",", "")) for i in (1, 2))
    assert inputs > 1000 and outputs == 2048 + 2 * (4096 + 2048)
    assert float(line.group(3)) == pytest.approx(round((inputs * 2 + outputs * 10) / 1e6, 2), abs=0.011)
    batch = judge(fake_api, tmp_path, "--judge", "anthropic-batch")
    assert "half price" in batch.stderr
    unknown = judge(fake_api, tmp_path, "--judge", "anthropic", "--judge-model", "my-model")
    assert "cost unknown" in unknown.stderr


def test_interactive_decline_sends_nothing(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    out = run_cli(
        "eval", SESSION, "--strategies", STRATEGIES, "--judge", "anthropic", "--judge-cache", tmp_path,
        input="n\n", env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url},
        terminal={"stdin_isatty": True},
    )  # fmt: skip
    assert out.exit_code == 1 and "Continue?" in out.stderr
    assert fake_api.requests == []


def test_malformed_reply_is_retried_once_then_missing(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    calls: list[str] = []

    def reply(body: Any) -> str:
        if body["system"] == SCORES_SYSTEM:
            calls.append(body["messages"][0]["content"])
            return "I would rate these answers highly." if len(calls) > 1 else '{"scores": "oops"}'
        return judge_reply(body)

    fake_api.answer = reply
    out = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes", "--json", "--strategies", "prune")
    assert out.exit_code == 0, out.stderr
    assert len(calls) == 2 and calls[1].endswith("Reply with the JSON object only.")
    entry = out.json()["strategies"][0]["judge"]
    assert entry == {"overall": None, "by_kind": dict.fromkeys(QUESTION_KINDS), "scored": 0, "missing": 8}
    assert "no scores could be read" in out.stderr


def test_a_retry_that_parses_counts(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    seen: list[int] = []

    def reply(body: Any) -> str:
        if body["system"] == QUESTIONS_SYSTEM and not seen:
            seen.append(1)
            return "not json {"
        return judge_reply(body)

    fake_api.answer = reply
    out = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes", "--json")
    assert out.exit_code == 0, out.stderr
    assert out.json()["strategies"][0]["judge"]["scored"] == 8


def test_rate_limits_and_server_errors_are_retried(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.answer = judge_reply
    fake_api.enqueue(FakeAnthropicServer.reply_error(429), FakeAnthropicServer.reply_error(500))
    out = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes", "--json", "--strategies", "full")
    assert out.exit_code == 0, out.stderr
    assert len(fake_api.requests_to(MESSAGES_PATH)) == 2 + 3
    assert out.json()["strategies"][0]["judge"]["scored"] == 8


def test_batch_mode_end_to_end(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.batch_polls_in_progress = 0  # each batch has ended at its first look: no waiting
    fake_api.answer = judge_reply
    out = judge(fake_api, tmp_path, "--judge", "anthropic-batch", "--yes", "--json")
    assert out.exit_code == 0, out.stderr
    created = [r for r in fake_api.requests_to(BATCHES_PATH) if r.method == "POST"]
    # One batch per stage: the questions, then every run's answers, then every run's scores.
    assert [len(r.body["requests"]) for r in created] == [1, 2, 2]
    assert fake_api.requests_to(MESSAGES_PATH) == []
    assert "message batch msgbatch_fake_" in out.stderr
    assert all(s["judge"]["overall"] == 2.25 for s in out.json()["strategies"])


def test_missing_key_is_exit_2(tmp_path: Path) -> None:
    out = run_cli("eval", SESSION, "--judge", "anthropic", "--yes", "--judge-cache", tmp_path)
    assert out.exit_code == 2 and "ANTHROPIC_API_KEY" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_key_is_never_in_the_cache_or_the_output(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.answer = judge_reply
    out = judge(fake_api, tmp_path, "--judge", "anthropic", "--yes", "--json")
    assert out.exit_code == 0
    assert fake_api.requests[0].api_key == KEY  # the key was used …
    files = list((tmp_path / "cache").iterdir())
    assert len(files) == 5
    for blob in [out.stdout_bytes, out.stderr_bytes, *(f.read_bytes() for f in files)]:
        assert KEY.encode() not in blob  # … and written nowhere


def test_default_cache_dir_follows_the_environment(tmp_path: Path) -> None:
    from ctxcompact.evaluation.judge.cache import default_cache_dir

    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "ctxcompact" / "judge"
    assert default_cache_dir({"CTXCOMPACT_CACHE_DIR": str(tmp_path)}) == tmp_path / "judge"


def test_files_evaluated_in_workers_are_judged(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.answer = judge_reply
    other = SAMPLES / "claude-code-session.jsonl"
    out = judge(fake_api, tmp_path, other, "--judge", "anthropic", "--yes", "--json", "--jobs", "2")
    assert out.exit_code == 0, out.stderr
    judged = {(r["input"], r["strategy"]) for r in out.json()["runs"] if r["judge"] and r["judge"]["scored"]}
    assert {Path(source).name for source, _ in judged} == {SESSION.name, other.name}


def test_failed_batch_requests_leave_scores_missing_with_the_reason(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    fake_api.batch_polls_in_progress = 0
    fake_api.answer = judge_reply

    def result(_custom_id: str, params: dict[str, Any]) -> dict[str, Any]:
        if params["system"] == SCORES_SYSTEM:
            return FakeAnthropicServer.batch_errored()
        return FakeAnthropicServer.batch_succeeded(judge_reply(params))

    fake_api.batch_result = result
    out = judge(fake_api, tmp_path, "--judge", "anthropic-batch", "--yes", "--json", "--strategies", "full")
    assert out.exit_code == 0, out.stderr
    assert out.json()["strategies"][0]["judge"]["missing"] == 8
    assert "no scores could be read: the batch request errored (invalid_request_error)" in out.stderr
    # Only replies are cached: the failed requests will be asked again next time.
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_unwritable_cache_is_exit_2_before_any_request(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = run_cli(
        "eval", SESSION, "--judge", "anthropic", "--yes", "--judge-cache", blocker / "cache",
        env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url},
    )  # fmt: skip
    assert out.exit_code == 2 and "--judge-cache" in out.stderr
    assert fake_api.requests == []
