"""The library facade: ``from ctxcompact import load_transcript, count_message_tokens,
check_budget`` works without the CLI, stays light to import, and the README example runs."""

from __future__ import annotations

import doctest
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SAMPLES

import ctxcompact
from ctxcompact import (
    CheckResult,
    CtxcompactError,
    InputError,
    TokenReport,
    check_budget,
    count_message_tokens,
    load_transcript,
)
from ctxcompact.accounting.context_size import CLAUDE_TOKEN_FACTOR

HEAVY = ("anthropic", "tiktoken", "tiktoken_ext", "typer", "rich")


def modules_after(code: str) -> list[str]:
    probe = textwrap.dedent(code) + f"\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return list(eval(proc.stdout.strip().splitlines()[-1]))


def test_import_loads_no_sdk_no_tokenizer_and_no_cli() -> None:
    assert modules_after("import ctxcompact") == []
    facade = "from ctxcompact import load_transcript, count_message_tokens, check_budget"
    assert modules_after(facade) == []


def test_estimating_never_loads_tiktoken_or_the_sdk() -> None:
    code = """
        from ctxcompact import check_budget, count_message_tokens
        messages = [{"role": "user", "content": "hello"}]
        assert count_message_tokens(messages, counter="estimate").total == 2 + 3
        assert not check_budget(messages, model="gpt-4o", counter="estimate").needs_compaction
    """
    assert modules_after(code) == []


def test_every_exported_name_resolves() -> None:
    for name in ctxcompact.__all__:
        assert getattr(ctxcompact, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ctxcompact.nope


ANTHROPIC = [
    {"role": "user", "content": "Read a.py"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "print('hello')\n" * 20}],
    },
    {"role": "assistant", "content": "It prints hello twenty times."},
]
OPENAI = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Read a.py"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "print('hello')\n" * 20},
    {"role": "assistant", "content": "It prints hello twenty times."},
]


@pytest.mark.parametrize("messages", [ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def test_count_message_tokens_on_raw_dicts(
    messages: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    report = count_message_tokens(messages)
    assert isinstance(report, TokenReport)
    assert report.counter == "tiktoken"
    assert report.total > 0
    assert report.total == sum(report.by_role.values())
    [result] = report.largest_tool_results(1)
    assert result.tool_name == "read_file"
    estimate = count_message_tokens(messages, counter="estimate")
    assert estimate.counter == "estimate"
    assert capsys.readouterr() == ("", "")  # the library never prints


def test_check_budget_on_raw_dicts() -> None:
    result = check_budget(ANTHROPIC, model="claude-sonnet-4-5")
    assert isinstance(result, CheckResult)
    assert not result.needs_compaction
    assert result.status.budget.threshold == 100_800
    # No usage recorded and a Claude model: our count, calibrated, is the estimate decided from.
    assert result.size is not None and result.size.source == "estimate"
    assert result.size.tokens == round(result.report.total * CLAUDE_TOKEN_FACTOR)
    assert result.status.remaining == 100_800 - result.size.tokens
    assert result.errors == []

    tight = check_budget(ANTHROPIC, context_window=200, output_reserve=0, threshold=0.5)
    assert tight.needs_compaction
    assert tight.status.budget.model.match == "override"


def test_check_budget_reports_invariant_errors_without_raising() -> None:
    broken = [ANTHROPIC[0], ANTHROPIC[2], ANTHROPIC[3]]  # a tool_result with no tool_use before it
    result = check_budget(broken, model="gpt-4o")
    assert [v.code for v in result.errors] == ["orphan_tool_result"]
    assert check_budget(broken, model="gpt-4o", validate=False).violations == ()


def test_check_budget_uses_the_transcripts_own_model() -> None:
    body = SAMPLES / "anthropic-request.json"
    conv = load_transcript(body).conversations[0]
    if conv.model is None:
        pytest.skip("the sample request body names no model")
    result = check_budget(conv)
    assert result.status.budget.model.model == conv.model


def test_bad_input_raises_the_documented_errors() -> None:
    with pytest.raises(InputError, match="message 0 has no 'role'") as info:
        count_message_tokens([{"content": "x"}])
    assert isinstance(info.value, CtxcompactError)
    assert info.value.exit_code == 2
    with pytest.raises(InputError, match=r"threshold must be between 0\.4 and 0\.9"):
        check_budget(ANTHROPIC, threshold=0.95)


def test_input_is_not_mutated() -> None:
    import copy

    messages = copy.deepcopy(OPENAI)
    count_message_tokens(messages)
    check_budget(messages, model="gpt-4o")
    assert messages == OPENAI


def test_docstring_examples() -> None:
    import ctxcompact.accounting.check

    failures, tried = doctest.testmod(ctxcompact.accounting.check, verbose=False)
    assert tried > 0
    assert failures == 0


def readme_library_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if "## Library" not in readme or "```python" not in readme.split("## Library", 1)[1]:
        pytest.skip("README has no library example")
    return readme.split("## Library", 1)[1].split("```python", 1)[1].split("```", 1)[0]


def test_readme_library_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's code, with its two stand-ins made real: the session file exists, and the
    ``...`` in the message list is dropped. The ``if`` branch is forced so compaction runs too."""
    code = readme_library_example()
    assert "from ctxcompact import" in code
    shutil.copy(SAMPLES / "claude-code-session.jsonl", tmp_path / "session.jsonl")
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(tmp_path)
    runnable = (
        code.replace(", ...]", "]")
        .replace('"/path/to/project"', repr(str(project)))
        .replace(".needs_compaction:", ".needs_compaction or True:")
    )
    namespace: dict[str, Any] = {}
    exec(compile(runnable, "README.md (library example)", "exec"), namespace)
    assert namespace["report"].total > 0
    assert namespace["transcript"].container == "claude-code"
    if "result" in namespace:
        assert isinstance(namespace["messages"], (list, tuple))
        assert capsys.readouterr().out.strip()  # the example prints the stats
