"""One size everywhere (issue 19 item 1, SPEC §6 "One size decides").

``compact`` decides, aims and reports by the size ``check`` reads back from what it wrote:
usage recorded before a rewrite of the messages it covers is stale, and the rewrite writes
down the size it measured (``"ctxcompact": {"context": …}``) for the next reader. So
``compact --auto`` followed by ``check`` exits 0, and a second ``--auto`` is a byte-for-byte
no-op — on built sessions, generated ones (hypothesis) and every due corpus session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from conftest import CORPUS, corpus_files, requires_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_builders import SessionBuilder

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma", "omega"]


def _output(step: int, words: int) -> str:
    return "\n".join(
        f"{step}:{i} " + " ".join(WORDS[(i * j + step) % len(WORDS)] for j in range(12))
        for i in range(words // 12)
    )


def _session(steps: int = 20, words: int = 2_400, system: int = 15_000) -> SessionBuilder:
    """A task and ``steps`` tool steps with large outputs; each call records usage that grows
    as Claude Code's does (its system prompt and tools, ``system``, included)."""
    builder = SessionBuilder().user("Find why the parser drops the last line, and fix it.")
    for step in range(steps):
        recorded = system + step * words * 2
        builder.tool(
            "Bash", {"command": f"cat src/part{step}.py"}, _output(step, words), usage=(3, 500, recorded, 80)
        )
    builder.assistant(
        "The parser stops one line early; I fixed the loop bound.",
        usage=(3, 500, system + steps * words * 2, 40),
    )
    return builder


def _stats(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else data[0]


def _check_json(path: Path, *args: str) -> dict[str, Any]:
    result = run_cli("check", path, "--json", *args)
    assert result.exit_code in (0, 1), result.stderr
    data: dict[str, Any] = result.json()["transcripts"][0]
    return data


def _auto_then_check(
    source: Path, tmp_path: Path, *args: str, compact: tuple[str, ...] = ()
) -> tuple[dict[str, Any], int, Path]:
    """``compact --auto`` then ``check`` with the same budget options (``args``; ``compact``:
    options for compact only): the stats, check's exit code, and the output."""
    out, stats = tmp_path / f"out-{source.name}", tmp_path / f"stats-{source.name}.json"
    result = run_cli("compact", "--auto", source, *args, *compact, "-o", out, "--stats-json", stats, "-q")
    assert result.exit_code == 0, result.stderr
    return _stats(stats), run_cli("check", out, *args).exit_code, out


def _refused(source: Path, tmp_path: Path, *args: str) -> bool:
    """True when ``compact --auto`` finds that nothing can fit: it says so, exits 3 and writes
    nothing — never a transcript that ``check`` would still find over the threshold."""
    out = tmp_path / f"refused-{source.name}"
    result = run_cli("compact", "--auto", source, *args, "-o", out, "-q")
    if result.exit_code != 3:
        return False
    assert "could not bring the context under the threshold" in result.stderr
    assert not out.exists()
    return True


def _assert_fixpoint(out: Path, tmp_path: Path, *args: str) -> None:
    again = tmp_path / f"again-{out.name}"
    result = run_cli("compact", "--auto", out, *args, "-o", again, "-q")
    assert result.exit_code == 0, result.stderr
    assert again.read_bytes() == out.read_bytes()


def test_auto_then_check_agree_on_a_session_whose_usage_the_rewrite_made_stale(tmp_path: Path) -> None:
    session = _session().write(tmp_path / "s.jsonl")
    assert run_cli("check", session, "-m", "claude-sonnet-4-5").exit_code == 1
    stats, code, out = _auto_then_check(session, tmp_path, "-m", "claude-sonnet-4-5")
    assert stats["compacted"] and stats["still_over_threshold"] is False
    assert code == 0
    checked = _check_json(out, "-m", "claude-sonnet-4-5")
    # check reads back the very figure compact reported, and says where it comes from.
    assert checked["tokens"] == stats["compacted_token_count"]
    assert checked["source"] == "rescaled"
    _assert_fixpoint(out, tmp_path, "-m", "claude-sonnet-4-5")


def test_prune_in_place_marks_the_recorded_usage_stale(tmp_path: Path) -> None:
    session = _session().write(tmp_path / "s.jsonl")
    recorded = _check_json(session)["tokens"]
    out, stats = tmp_path / "p.jsonl", tmp_path / "p.json"
    assert (
        run_cli(
            "compact",
            session,
            "--strategy",
            "prune",
            "--include-loop",
            "-o",
            out,
            "--stats-json",
            stats,
            "-q",
        ).exit_code
        == 0
    )
    checked = _check_json(out)
    assert checked["source"] == "rescaled"
    assert checked["tokens"] == _stats(stats)["compacted_token_count"] < recorded
    # The overhead outside the messages (system prompt, tools) is the one the usage showed.
    assert checked["context"]["overhead"] == _check_json(session)["context"]["overhead"]
    assert "predates a ctxcompact rewrite" in run_cli("count", out).stdout


@pytest.mark.parametrize("strategy", ["full", "prune"])
def test_usage_recorded_after_our_rewrite_is_the_truth_again(tmp_path: Path, strategy: str) -> None:
    """Claude Code resumes the compacted session and records a new usage (issue 20 item 6):
    that figure describes the context after our rewrite, so it decides."""
    session = _session().write(tmp_path / "s.jsonl")
    out = tmp_path / "c.jsonl"
    assert (
        run_cli("compact", session, "--strategy", strategy, "--include-loop", "-o", out, "-q").exit_code == 0
    )
    resumed = SessionBuilder()
    resumed.assistant("Continuing.", usage=(7, 1_000, 31_000, 12))
    # Claude Code links its new entry to the last one and stamps it now.
    last = json.loads(out.read_text().splitlines()[-1])
    entry = resumed.entries[-1] | {"uuid": "11111111-0000-4000-8000-000000000001", "parentUuid": last["uuid"]}
    entry["timestamp"] = "2099-01-01T00:00:00.000Z"
    out.write_text(out.read_text() + json.dumps(entry) + "\n")
    checked = _check_json(out)
    assert checked["source"] == "recorded"
    assert checked["tokens"] == 7 + 1_000 + 31_000 + 12


def test_offload_writes_its_size_and_undo_takes_it_back(tmp_path: Path) -> None:
    session = _session().write(tmp_path / "s.jsonl")
    lean, back = tmp_path / "lean.jsonl", tmp_path / "back.jsonl"
    store = tmp_path / "off"
    assert run_cli("offload", session, "--out-dir", store, "-o", lean, "-q").exit_code == 0
    checked = _check_json(lean)
    assert checked["source"] == "rescaled" and checked["tokens"] < _check_json(session)["tokens"]
    assert run_cli("offload", "--undo", lean, "--out-dir", store, "-o", back).exit_code == 0
    lines = [json.loads(line) for line in back.read_text().splitlines()]
    assert lines == [json.loads(line) for line in session.read_text().splitlines()]


def test_mini_swe_agent_trajectory_converges(tmp_path: Path) -> None:
    """A Chat Completions trajectory that records each response's usage (mini-swe-agent)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant."}]
    messages.append({"role": "user", "content": "Fix the failing test in tests/test_io.py."})
    for step in range(12):
        prompt = 2_000 + step * 3_300
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: look at part {step}\n```bash\ncat src/part{step}.py\n```",
                "extra": {
                    "response": {
                        "model": "gpt-4o",
                        "usage": {"prompt_tokens": prompt, "completion_tokens": 60},
                    }
                },
            }
        )
        messages.append({"role": "user", "content": _output(step, 2_400)})
    path = tmp_path / "run.traj.json"
    path.write_text(
        json.dumps({"messages": messages, "info": {"config": {"model": {"model_name": "gpt-4o"}}}})
    )
    args = ("-w", "64000")
    assert run_cli("check", path, *args).exit_code == 1
    stats, code, out = _auto_then_check(path, tmp_path, *args)
    assert code == 0 and stats["compacted_token_count"] == _check_json(out, *args)["tokens"]
    _assert_fixpoint(out, tmp_path, *args)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.integers(2, 14),
    words=st.integers(100, 3_000),
    system=st.integers(0, 30_000),
    window=st.sampled_from([50_000, 80_000, 200_000]),
    strategy=st.sampled_from(
        [(), ("--strategy", "prune"), ("--strategy", "full"), ("--strategy", "selective")]
    ),
)
def test_auto_then_check_is_a_fixpoint_on_generated_sessions(
    tmp_path_factory: pytest.TempPathFactory,
    steps: int,
    words: int,
    system: int,
    window: int,
    strategy: tuple[str, ...],
) -> None:
    """Whatever the sizes: check reads back exactly the size compact reported; when compact
    says it is under the threshold, check exits 0 and a second --auto changes no byte."""
    tmp_path = tmp_path_factory.mktemp("fixpoint")
    session = _session(steps, words, system).write(tmp_path / "s.jsonl")
    args = ("-w", str(window))
    if _refused(session, tmp_path, *args, *strategy):
        return
    stats, code, out = _auto_then_check(session, tmp_path, *args, compact=strategy)
    checked = _check_json(out, *args)
    assert checked["tokens"] == stats["compacted_token_count"]
    if stats["still_over_threshold"] is False:
        assert code == 0
        _assert_fixpoint(out, tmp_path, *args, *strategy)


# --- the corpus -------------------------------------------------------------------------------------

#: The real sessions the property must hold on (issue 19): Claude Code sessions, mini-swe-agent
#: trajectories, Codex rollouts and Anthropic request bodies.
FIXPOINT_CORPUS = [
    *corpus_files("claude-code", "anthropic"),
    *(p for p in corpus_files("openai") if p.name.startswith("miniswe")),
    *(p for p in corpus_files("other") if p.name.startswith("codex-rollout")),
]


@requires_corpus
@pytest.mark.parametrize("path", FIXPOINT_CORPUS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_due_corpus_session_converges(path: Path, tmp_path: Path) -> None:
    if run_cli("check", path).exit_code != 1:
        pytest.skip("not due at its model's threshold")
    if _refused(path, tmp_path):  # a request whose one live turn is over the threshold
        return
    stats, code, out = _auto_then_check(path, tmp_path)
    assert stats["compacted"], stats["reason"]
    assert code == 0, (stats["compacted_token_count"], stats["threshold"])
    _assert_fixpoint(out, tmp_path)
