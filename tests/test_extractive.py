"""The offline summarizer: deterministic, five sections, the facts a successor agent needs."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from conftest import SAMPLES, corpus_files, requires_corpus
from ir_builders import msg, result, text, use

from ctxcompact.compaction.summarize import make_summarizer
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.compaction.summarize.prompt import DIMENSIONS
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_messages, load_transcript

HANDMADE = [
    msg("system", text("You are a coding agent.")),
    msg("user", text("Add a --verbose flag to the CLI. You must not break the existing options.")),
    msg("assistant", text("Let me look at the CLI."), use("t1", "read_file", path="app/cli.py")),
    msg("user", result("t1", "import argparse\n")),
    msg("assistant", use("t2", "edit_file", path="app/cli.py", old="a", new="b")),
    msg("user", result("t2", "ok")),
    msg("assistant", use("t3", "run_command", command="python -m pytest tests/test_cli.py -q")),
    msg(
        "user",
        result(
            "t3",
            'Traceback (most recent call last):\n  File "x", line 1\n'
            "NameError: name 'verbose' is not defined\n[exit code: 1]",
        ),
    ),
    msg(
        "assistant", text("I forgot to define verbose; fixing it."), use("t4", "edit_file", path="app/cli.py")
    ),
    msg("user", result("t4", "ok")),
    msg("assistant", use("t5", "Write", file_path="docs/verbose.md", content="# Verbose")),
    msg("user", result("t5", "written")),
    msg("assistant", use("t6", "read_file", path="missing.py")),
    msg("user", result("t6", "Error: no such file", is_error=True)),
    msg("assistant", text("That file does not exist; never mind.")),
    msg("user", text("Great. Now document the flag in README.md and never touch the changelog.")),
    msg("assistant", text("I'll update the README next."), use("t7", "read_file", path="README.md")),
    msg("user", result("t7", "# App\n")),
]


def sections(summary: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", summary, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def test_five_sections_in_order() -> None:
    summary = ExtractiveSummarizer().summarize(HANDMADE)
    assert summary.summarizer == "extractive" and summary.model is None
    assert list(sections(summary.text)) == list(DIMENSIONS)


def test_requests_and_constraints() -> None:
    goals = sections(ExtractiveSummarizer().summarize(HANDMADE).text)["Goals & Decisions"]
    # The first request is the task statement, whole; later ones are listed in order.
    assert (
        "Primary request and intent (the task statement):\nAdd a --verbose flag to the CLI. You must not"
        in goals
    )
    assert "1. (the primary request above)" in goals
    assert "2. Great. Now document the flag in README.md" in goals
    # A rule of the task statement is read there while it is shown whole, not listed twice.
    assert goals.count("You must not break the existing options.") == 1
    assert "User instructions and constraints:\n- Now document the flag" in goals
    assert "never touch the changelog" in goals
    assert "You are a coding agent" not in goals  # system prompts stay in the head


def test_files_by_operation_and_commands() -> None:
    files = sections(ExtractiveSummarizer().summarize(HANDMADE).text)["File Operations"]
    # One line per set of operations, a path costs one word (issue 13: many files fit).
    assert "- edited, read: `app/cli.py`" in files
    assert "- written: `docs/verbose.md`" in files
    assert "- read: `README.md`" in files
    assert "`missing.py`" not in files  # its read failed: it was not read
    assert "`tests/test_cli.py`" in files  # mentioned in a command


def test_tool_tallies() -> None:
    tools = sections(ExtractiveSummarizer().summarize(HANDMADE).text)["Tool Calls"]
    assert "- 7 tool calls, 2 with errors" in tools
    assert "- read_file × 3 (1 failed)" in tools
    assert "- edit_file × 2" in tools
    assert tools.index("read_file × 3") < tools.index("edit_file × 2") < tools.index("Write × 1")


def test_errors_with_what_followed() -> None:
    errors = sections(ExtractiveSummarizer().summarize(HANDMADE).text)["Errors & Resolutions"]
    # Each error with its own call and its own outcome (issue 13).
    assert "- run_command(python -m pytest tests/test_cli.py -q): `NameError: name 'verbose'" in errors
    assert "→ the agent said: I forgot to define verbose; fixing it.; not retried" in errors
    assert (
        "- read_file(missing.py): `Error: no such file` → the agent said: That file does not exist" in errors
    )


def test_task_status_and_next_step() -> None:
    status = sections(ExtractiveSummarizer().summarize(HANDMADE).text)["Task Status"]
    assert "Latest user request:\nGreat. Now document the flag" in status
    assert "- read_file(README.md) → ok" in status
    # The agent's own words say what comes next, and the result it had not seen yet.
    assert "Next step:\nThe agent's last stated intent: “I'll update the README next.”." in status
    assert "Results the agent had not seen yet: read_file(README.md)." in status


def test_next_step_variants() -> None:
    s = ExtractiveSummarizer()
    unanswered = [*HANDMADE[:4], msg("user", text("Also add -q please."))]
    assert "Answer the latest user request" in sections(s.summarize(unanswered).text)["Task Status"]
    planned = [
        *HANDMADE[:4],
        msg("assistant", text("The CLI parses args. Next I will add the flag to the parser.")),
    ]
    assert (
        "The agent's last stated intent: “Next I will add the flag"
        in sections(s.summarize(planned).text)["Task Status"]
    )


def test_deterministic_and_input_untouched() -> None:
    snapshot = copy.deepcopy([m.content for m in HANDMADE])
    first = ExtractiveSummarizer().summarize(HANDMADE)
    assert ExtractiveSummarizer().summarize(HANDMADE) == first
    assert [m.content for m in HANDMADE] == snapshot


@pytest.mark.parametrize("max_words", [40, 80, 150, 300, 1200])
def test_word_limit_is_respected(max_words: int) -> None:
    messages = load_transcript(SAMPLES / "anthropic-session.json").messages
    text_out = ExtractiveSummarizer().summarize(messages, max_words=max_words).text
    assert len(text_out.split()) <= max_words
    assert list(sections(text_out)) == list(DIMENSIONS)


def test_trimming_keeps_the_latest_request_and_says_what_was_omitted() -> None:
    many = [msg("user", text(f"Request number {i} " + "blah " * 30)) for i in range(20)]
    interleaved: list[Message] = []
    for m in many:
        interleaved.extend([m, msg("assistant", text("ok"))])
    out = ExtractiveSummarizer().summarize(interleaved, max_words=200).text
    assert len(out.split()) <= 200
    assert "omitted)" in out
    assert "Request number 19" in out


@pytest.mark.parametrize("max_words", [40, 80])
def test_a_section_the_budget_emptied_does_not_claim_nothing_happened(max_words: int) -> None:
    """Under a tight word budget a section may lose every item: it says so ("(all omitted)"),
    never "None recorded.", which would tell the agent no file was read and no tool ran."""
    messages = load_transcript(SAMPLES / "anthropic-session.json").messages
    full = sections(ExtractiveSummarizer().summarize(messages).text)
    tight = sections(ExtractiveSummarizer().summarize(messages, max_words=max_words).text)
    for title, body in tight.items():
        if "None recorded." in body:
            assert "None recorded." in full[title], title
    assert "(all omitted)" in "".join(tight.values())


def test_sample_session() -> None:
    messages = load_transcript(SAMPLES / "anthropic-session.json").messages
    out = ExtractiveSummarizer().summarize(messages[1:]).text
    found = sections(out)
    assert "California invoices come out a cent short" in found["Goals & Decisions"]
    assert "don't change the public API" in found["Goals & Decisions"]
    assert "- edited, read: `src/invoice/tax.py`, `tests/test_totals.py`" in found["File Operations"]
    assert "- read_file × 8 (1 failed)" in found["Tool Calls"]
    assert "- run_command × 8" in found["Tool Calls"]
    errors = found["Errors & Resolutions"]
    assert "No such file or directory: 'src/invoice/legacy.py'" in errors
    assert "FAILED tests/test_totals.py::test_ca_half_cent_rounds_up" in errors
    assert "run the whole suite with coverage" in found["Task Status"]
    assert "--cov=invoice" in found["Task Status"]


def test_repeated_compaction_inputs() -> None:
    messages = [
        msg("user", text("[Conversation compressed]\n\n## Goals & Decisions\nShip the parser rewrite.")),
        msg(
            "assistant",
            text("Understood. I have the context from the compressed conversation. Continuing work."),
        ),
        msg("user", text("[Restored after compact] src/parser.py:\ndef parse(): ...")),
        msg("assistant", text("Noted, file content restored.")),
        msg("user", text("Now add tests.")),
    ]
    out = sections(ExtractiveSummarizer().summarize(messages).text)
    # The earlier summary is carried forward whole under its own heading (UC-005, issue 13).
    assert (
        "### Earlier compaction summary (carried forward)\n**Goals & Decisions**\nShip the parser rewrite."
        in out["Goals & Decisions"]
    )
    assert "Primary request and intent (the task statement):\nNow add tests." in out["Goals & Decisions"]
    assert "[Restored after compact]" not in out["Goals & Decisions"]
    assert "restored by an earlier compaction: `src/parser.py`" in out["File Operations"]


def test_an_earlier_summary_without_the_five_headings_is_kept_as_context() -> None:
    messages = [
        msg(
            "user",
            text("This session is being continued from a previous conversation. We were porting the CLI."),
        ),
        msg(
            "assistant",
            text("Understood. I have the context from the compressed conversation. Continuing work."),
        ),
        msg("user", text("Carry on.")),
    ]
    out = sections(ExtractiveSummarizer().summarize(messages).text)
    assert "### Earlier compaction summary (carried forward)" in out["Goals & Decisions"]
    assert "porting the CLI" in out["Goals & Decisions"]
    # The compaction's own acknowledgement is not reported as the agent's work.
    assert "Understood. I have the context" not in out["Task Status"]


def test_openai_dialect_and_claude_code_noise() -> None:
    conv = load_messages(
        [
            {"role": "user", "content": "<system-reminder>ignore me</system-reminder>Rename foo to bar."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"foo.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "def foo(): ..."},
        ]
    )
    out = sections(ExtractiveSummarizer().summarize(conv.messages).text)
    assert "Primary request and intent (the task statement):\nRename foo to bar." in out["Goals & Decisions"]
    assert "ignore me" not in out["Goals & Decisions"]
    assert "- read: `foo.py`" in out["File Operations"]


def test_empty_transcript_still_has_the_sections() -> None:
    out = make_summarizer("extractive").summarize([]).text
    assert list(sections(out)) == list(DIMENSIONS)
    assert out.count("None recorded.") == 5


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_files("claude-code", "openai", "anthropic")[:6], ids=lambda p: p.name)
def test_corpus_transcripts(path: Any) -> None:
    transcript = load_transcript(path)
    for conv in transcript.conversations[:3]:
        out = ExtractiveSummarizer().summarize(conv.messages, max_words=600).text
        assert len(out.split()) <= 600
        assert list(sections(out)) == list(DIMENSIONS)
