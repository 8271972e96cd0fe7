"""Issue 13: the offline summary keeps what an agent needs to go on (each complaint, pinned)."""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import CORPUS, requires_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_builders import msg, result, text, use

from ctxcompact.compaction.summarize import outcomes, shell_files
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.compaction.summarize.shell_files import path_mentions, shell_file_ops
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_transcript


def summary(messages: list[Message], max_words: int = 1200) -> str:
    return ExtractiveSummarizer().summarize(messages, max_words=max_words).text


TASK = "\n".join(f"Step {i}: do thing {i} carefully in module_{i}.py." for i in range(60)) + (
    "\nWhen done, run: echo SUBMIT_NOW"
)


def test_the_task_statements_rules_are_listed_when_it_is_cut() -> None:
    task = "You must keep the old API. " + " ".join(f"w{i}" for i in range(2000))
    out = summary([msg("user", text(task)), msg("assistant", text("On it."))], max_words=400)
    assert "User instructions and constraints:\n- You must keep the old API." in out


def test_the_task_statement_is_kept_whole_within_the_budget() -> None:
    out = summary([msg("user", text(TASK)), msg("assistant", text("On it."))])
    assert TASK in out  # line breaks and all
    assert "omitted" not in out


def test_a_task_statement_over_the_budget_keeps_its_first_and_last_parts() -> None:
    out = summary([msg("user", text(TASK)), msg("assistant", text("On it."))], max_words=200)
    assert len(out.split()) <= 200
    assert "Step 0: do thing 0" in out
    assert "echo SUBMIT_NOW" in out  # the closing instruction survives
    assert re.search(r"\[… [\d,]+ words of the task statement omitted …\]", out)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("sed -i 's/old/new/g' src/app.py", ("src/app.py", "edited")),
        ("cat > notes/plan.md <<'EOF'\n# Plan\nEOF", ("notes/plan.md", "written")),
        ("echo x >> CHANGELOG.md", ("CHANGELOG.md", "written")),
        ("python gen.py | tee out/result.json", ("out/result.json", "written")),
        ("sed -n '1,40p' lib/core.py", ("lib/core.py", "read")),
        ("*** Begin Patch\n*** Update File: src/m.rs\n@@\n*** End Patch", ("src/m.rs", "edited")),
        ("rm build/old.o.txt", ("build/old.o.txt", "deleted")),
    ],
)
def test_shell_edits_are_file_operations(command: str, expected: tuple[str, str]) -> None:
    assert expected in list(shell_file_ops(command))


@pytest.mark.parametrize(
    "command", ["cat a/b.txt 2>/dev/null", "head -5 a/b.txt 2>&1", "cat a/b.txt 1>>log/x 2> err/e"]
)
def test_stream_redirects_are_not_files_read(command: str) -> None:
    # A real session listed `2>/dev/null` among the files its agent read.
    assert list(shell_file_ops(command)) == [("a/b.txt", "read")]


def test_code_names_are_not_files() -> None:
    assert path_mentions("added console.log and self.cfg calls to app.js") == ["app.js"]


def test_files_edited_through_the_shell_are_listed_as_edited() -> None:
    messages = [
        msg("user", text("Fix it.")),
        msg("assistant", use("t1", "bash", command="sed -i 's/a/b/' pkg/mod.py && console.log")),
        msg("user", result("t1", "")),
        msg("assistant", use("t2", "bash", command="cat > pkg/new.py <<'EOF'\nx = 1\nEOF")),
        msg("user", result("t2", "")),
    ]
    out = summary(messages)
    assert "- edited: `pkg/mod.py`" in out
    assert "- written: `pkg/new.py`" in out
    assert "console.log" not in out.split("## File Operations")[1].split("## Tool Calls")[0]


def test_boilerplate_is_dropped() -> None:
    template = "Please always follow the instructions below carefully and format your reply as required."
    messages = [
        msg(
            "user",
            text("<local-command-caveat>Caveat: The messages below were generated</local-command-caveat>"),
        ),
        msg("user", text("<command-name>/clear</command-name>\n<command-message>clear</command-message>")),
        msg("user", text(f"Port the parser to Rust.\n\n{template}")),
        msg("assistant", text("ok")),
        msg(
            "user",
            text(f"<system-reminder>You must obey the reminder.</system-reminder>Go on.\n\n{template}"),
        ),
        msg("assistant", text("ok")),
        msg("user", text(f"Continue.\n\n{template}")),
    ]
    out = summary(messages)
    assert "Caveat" not in out and "obey the reminder" not in out and "command-message" not in out
    # The template is part of the task where it first appears, and dropped after that.
    assert out.count("follow the instructions below") == 1  # in the task statement only
    assert "/clear" not in out  # a session command is not a request (issue 19)
    assert "Primary request and intent (the task statement):\nPort the parser to Rust." in out


def test_codex_injected_context_is_not_the_task() -> None:
    """Codex puts AGENTS.md and an <environment_context> block in user messages before the
    user speaks; the task statement is what the user asked."""
    messages = [
        msg("user", text("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>Use pnpm.</INSTRUCTIONS>")),
        msg("user", text("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>")),
        msg("user", text("Fix the flaky login test.")),
        msg("assistant", text("ok")),
    ]
    out = summary(messages)
    assert "Primary request and intent (the task statement):\nFix the flaky login test." in out
    assert "<cwd>" not in out and "AGENTS.md instructions" not in out


def test_each_error_has_its_own_outcome() -> None:
    messages = [msg("user", text("Make the tests pass."))]
    outcomes = ["succeeded", "failed again", "not retried", "succeeded"]
    for i in range(4):
        messages.append(msg("assistant", use(f"e{i}", "bash", command=f"tool{i} --run")))
        messages.append(msg("user", result(f"e{i}", f"Error{i}: broke number {i}", is_error=True)))
    for i, outcome in enumerate(outcomes):
        if outcome == "not retried":
            continue
        messages.append(msg("assistant", use(f"r{i}", "bash", command=f"tool{i} --again")))
        failed = outcome == "failed again"
        messages.append(msg("user", result(f"r{i}", "Error: still" if failed else "ok", is_error=failed)))
    errors = summary(messages).split("## Errors & Resolutions")[1]
    lines = [line for line in errors.splitlines() if line.startswith("- bash(tool")]
    assert len(lines) == 5  # four errors, and the retry that failed again
    for i, outcome in enumerate(outcomes):
        line = next(line for line in lines if f"tool{i} --run" in line)
        assert f"broke number {i}" in line and outcome in line


def test_chinese_constraints_are_instructions() -> None:
    messages = [msg("user", text("修复这个错误。")), msg("assistant", text("好"))]
    out = summary([*messages, msg("user", text("继续。必须保留现有的接口。不要修改测试文件。"))])
    rules = out.split("User instructions and constraints:")[1]
    assert "必须保留现有的接口。" in rules and "不要修改测试文件。" in rules


def test_an_earlier_summary_is_carried_whole_and_cut_only_between_sentences() -> None:
    body = " ".join(f"Sentence number {i} tells a fact about step {i}." for i in range(200))
    earlier = msg("user", text("This session is being continued from a previous conversation. " + body))
    out = summary([earlier, msg("assistant", text("ok")), msg("user", text("Carry on."))], max_words=400)
    assert "### Earlier compaction summary (carried forward)" in out
    part = out.split("### Earlier compaction summary (carried forward)\n")[1].split("## File")[0]
    kept = [line for line in part.splitlines() if line.startswith(("This session", "Sentence"))]
    assert kept and "more omitted)" in part
    for line in kept:
        assert line.endswith("."), line  # never cut mid-sentence
    whole = summary([earlier, msg("assistant", text("ok")), msg("user", text("Carry on."))], max_words=5000)
    assert "Sentence number 199 tells a fact about step 199." in whole


def test_pending_tasks_from_the_agents_todo_list() -> None:
    todos = [
        {"content": "Write the parser", "status": "completed"},
        {"content": "Add tests for the parser", "status": "in_progress"},
        {"content": "Update the docs", "status": "pending"},
    ]
    messages = [
        msg("user", text("Build a parser.")),
        msg("assistant", use("t", "TodoWrite", todos=todos)),
        msg("user", result("t", "ok")),
        msg("assistant", text("Working on the tests.")),
    ]
    status = summary(messages).split("## Task Status")[1]
    assert "- [in_progress] Add tests for the parser" in status
    assert "- [pending] Update the docs" in status
    assert "Write the parser" not in status


@requires_corpus
@pytest.mark.corpus
def test_mini_swe_agent_task_statement_survives_whole() -> None:
    messages = load_transcript(CORPUS / "openai" / "miniswe-deepseek-chat-django-11910.traj.json").messages
    out = summary(list(messages))
    assert len(out.split()) <= 1200
    # The PR description whole; the harness's instruction template shrunk to its constraints
    # (issue 19), the submission command and the last rule among them.
    for line in (
        "ForeignKey's to_field parameter gets the old field's name when renaming a PrimaryKey.",
        "new_name='field_fixed',",
        "</pr_description>",
    ):
        assert line in out
    assert "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt" in out
    assert (
        "You CANNOT continue working (reading, editing, testing) in any way on this task after submitting."
        in out
    )
    assert "Create a script to reproduce the issue" not in out


def test_identifiers_the_user_wrote_and_figures_are_listed() -> None:
    messages = [
        msg("user", text("Make `load_config` faster: it takes 30 s and uses 512 MB.")),
        msg("assistant", text("Profiling shows 2,000 tokens per call.")),
    ]
    goals = summary(messages).split("## File Operations")[0]
    assert "Key technical concepts:\n`load_config`" in goals
    assert "Figures mentioned:\n30 s, 512 MB, 2,000 tokens" in goals


@given(
    task_words=st.integers(min_value=1, max_value=3000),
    earlier_words=st.integers(min_value=0, max_value=1500),
    max_words=st.integers(min_value=40, max_value=1500),
)
@settings(max_examples=25, deadline=None)
def test_the_word_budget_holds_with_a_task_and_an_earlier_summary(
    task_words: int, earlier_words: int, max_words: int
) -> None:
    messages = []
    if earlier_words:
        body = " ".join(f"fact{i}." for i in range(earlier_words))
        messages += [msg("user", text(f"[Conversation compressed]\n\n{body}")), msg("assistant", text("ok"))]
    messages += [
        msg("user", text(" ".join(f"w{i}" for i in range(task_words)))),
        msg("assistant", text("ok")),
    ]
    out = summary(messages, max_words=max_words)
    assert len(out.split()) <= max_words
    assert "## Task Status" in out


_ERROR_PARTS = [
    "\n", "\r", "\r\n", "\x0b", "\x85", "\u2028", " ", "\t", "E  ", "ValueError:", "error[E0]:",
    "FAILED ", "ERROR ", "x::", "FAILED (", "3 failed", "exit code 2", "EXIT STATUS: 1", "<tool_use_error>",
    "</tool_use_error>", "Traceback (most recent call last)", "=", "a", "é", "\u0130", "\u0131", "\u212a",
    "exıt code 1", "Tracebac\u212a (most recent call last)", "fatal:", "panic:", "1",
    "except KeyError as e", "Exception:", "exit:", "failed", "e ", "fatal[", "Error>",
]  # fmt: skip


def _error_lines_line_by_line(text: str) -> list[str]:
    """error_lines as first written: the error regex searched on every line."""
    found: list[str] = []
    for line in text.splitlines():
        if outcomes._ERROR_LINE.search(line):
            line = re.sub(r"^\s*E\s{2,}", "", line).strip(" =")
            line = line.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
            if line and line not in found:
                found.append(line)
    informative = [line for line in found if not line.startswith("Traceback")]
    return informative or found


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_ERROR_PARTS), max_size=16))
def test_error_lines_searches_only_lines_with_an_error_word_and_misses_none(parts: list[str]) -> None:
    """The word prefilter (one scan per text, not a regex per line) finds every line the
    regex finds, line breaks and case-folding oddities (ı, İ, the Kelvin sign) included."""
    text = "".join(parts)
    assert outcomes.error_lines(text) == _error_lines_line_by_line(text)


def test_a_failed_result_with_no_line_break_is_reported_once_clipped() -> None:
    """Issue 24's hostile case: a minified log of 384K characters, "error" every 64 and no line
    break, is one error line, quoted once in each place and clipped to a few words: the summary
    stays small. (That it stays linear in time is ``bench/bench_scaling.py``'s check.)"""
    body = ("x" * 40 + " an error occurred here ") * 6000
    messages = [
        msg("user", text("Fix the build.")),
        msg("assistant", use("t1", "bash", command="make")),
        msg("user", result("t1", body, is_error=True)),
    ]
    out = summary(messages)
    errors = out.split("## Errors & Resolutions")[1]
    assert errors.count("bash(make)") == 1
    assert "an error occurred here" in errors
    assert len(out) < 2_000


def test_a_retry_is_judged_by_its_last_result() -> None:
    """Tool ids can repeat: a retry's outcome is its last result, not its first."""
    messages = [
        msg("user", text("Build it.")),
        msg("assistant", use("b1", "bash", command="make")),
        msg("user", result("b1", "Error: missing header", is_error=True)),
        msg("assistant", use("b2", "bash", command="make")),
        msg("user", result("b2", "Error: still missing", is_error=True)),
        msg("assistant", use("b2", "bash", command="make")),
        msg("user", result("b2", "built")),
    ]
    errors = summary(messages).split("## Errors & Resolutions")[1]
    first = next(line for line in errors.splitlines() if "missing header" in line)
    assert "retried: succeeded" in first


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab -/.#;$*=~\t\r\n\x0b\xa0é'\"\\")), max_size=24))
def test_shell_words_split_as_shlex_does(text: str) -> None:
    """The shortcut for commands without quotes or backslashes splits as shlex would."""
    try:
        expected = shlex.split(text, comments=False)
    except ValueError:
        expected = text.split()
    assert shell_files._shell_words(text) == expected
