"""retention.py: does the replacement still mention the paths, errors and request it replaced?"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcompact.compaction import retention
from ctxcompact.compaction.retention import (
    check_retention,
    collect_errors,
    collect_instructions,
    collect_paths,
    error_signature,
    last_request,
    sentence_kept,
)
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_messages

TRACEBACK = "Traceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'user'"


def convo() -> tuple[Message, ...]:
    records: list[dict[str, Any]] = [
        {"role": "user", "content": "Please repair the parser tests"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/parser.py"}},
                {"type": "tool_use", "id": "t2", "name": "edit", "input": {"file_path": " docs/notes.md "}},
                {"type": "tool_use", "id": "t3", "name": "read_file", "input": {"path": "src/parser.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "def parse(): ..."},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "permission denied",
                    "is_error": True,
                },
                {"type": "tool_result", "tool_use_id": "t3", "content": TRACEBACK},
            ],
        },
    ]
    return load_messages(records, dialect="anthropic").messages


def test_paths_are_collected_once_each_in_order_stripped() -> None:
    assert collect_paths(convo()) == ["src/parser.py", "docs/notes.md"]


def test_errors_are_flagged_results_and_tracebacks_by_signature() -> None:
    assert collect_errors(convo()) == ["permission denied", "KeyError"]


def test_error_signature_is_the_last_exception_named_else_the_first_line() -> None:
    assert error_signature("ValueError: x\nduring handling\nRuntimeError: y") == "RuntimeError"
    assert error_signature("\n  exit status 2  \nmore") == "exit status 2"
    assert error_signature("") == ""


def test_last_request_is_the_latest_user_text() -> None:
    assert last_request(convo()) == "Please repair the parser tests"
    assert last_request(convo()[1:]) is None  # tool results are not a request


def test_a_replacement_that_keeps_everything_passes() -> None:
    text = "Repairing the parser tests: src/parser.py raised KeyError; notes.md gave permission denied."
    report = check_retention(convo(), text)
    assert (report.paths_found, report.paths_total, report.errors_found, report.errors_total) == (2, 2, 2, 2)
    assert report.last_request is True  # 3 of the request's 4 stems (repa, pars, test; not plea)
    assert report.summary_line() == "paths 2/2, errors 2/2, last request yes"


def test_what_is_missing_is_named() -> None:
    report = check_retention(convo(), "We talked about the weather.")
    assert report.missing_paths == ("src/parser.py", "docs/notes.md")
    assert report.missing_errors == ("permission denied", "KeyError")
    assert report.last_request is False
    assert report.summary_line() == "paths 0/2, errors 0/2, last request no"


def test_no_request_in_the_replaced_part_is_not_applicable() -> None:
    report = check_retention(convo()[1:], "")
    assert report.last_request is None and report.summary_line().endswith("last request n/a")


def instruction_convo() -> tuple[Message, ...]:
    return load_messages(
        [
            {
                "role": "user",
                "content": "Fix the flaky login test. You must not touch the public API! "
                "Never push to main.\n不要修改数据库结构。",
            },
            {"role": "assistant", "content": "Understood, I should start with the test."},
            {"role": "user", "content": "<system-reminder>You should always be concise.</system-reminder>"},
            {"role": "user", "content": "[Conversation compressed]\n\nThe user said: always use tabs."},
            {"role": "user", "content": "Thanks. Always run the linter before committing."},
        ]
    ).messages


def test_instructions_are_the_user_sentences_with_a_cue_word() -> None:
    # The agent's "should", a <tag> injection and an earlier summary are not the user's words;
    # the sentence without a cue ("Fix the flaky login test.") is not an instruction.
    assert collect_instructions(instruction_convo()) == [
        "You must not touch the public API!",
        "Never push to main.",
        "不要修改数据库结构",
        "Always run the linter before committing.",
    ]


def test_instruction_retention_counts_copied_or_paraphrased_sentences() -> None:
    summary = (
        "Constraints: the public API must stay untouched; always running the linter before any commit. "
        "不要修改数据库"
    )
    report = check_retention(instruction_convo(), summary)
    # "never push to main" is lost; the CJK sentence keeps 7 of its 9 characters (>= 60 %).
    assert (report.instructions_found, report.instructions_total) == (3, 4)
    assert check_retention(instruction_convo(), "nothing relevant").instructions_found == 0


def test_sentence_kept_needs_most_distinctive_words() -> None:
    assert sentence_kept("Never push to main", "we will never push anything to main")
    assert not sentence_kept("Never push the release branch to production", "never push")


_ERROR_TEXT_PARTS = [
    "\n", "\r\n", "\x0b", "\u2028", " ", "\t", ":", "x", "é", "_", "9", "Error", "Errors", "Exception",
    "KeyError", "éError", "Error_", "ZZException", "Traceback (most recent call last)", "Traceback",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_ERROR_TEXT_PARTS), max_size=12))
def test_error_detection_looks_only_where_an_error_word_is_and_answers_as_the_regexes(
    parts: list[str],
) -> None:
    """Tracebacks are looked for where lines start and error names at the lines holding
    "Error" or "Exception" (substring scans), with the regexes' own answers."""
    text = "".join(parts)
    assert retention._has_traceback(text) == bool(retention._TRACEBACK.pattern.search(text))
    names = retention._ERROR_NAME.findall(text)
    first_line = next((line.strip()[:40] for line in text.splitlines() if line.strip()), "")
    assert error_signature(text) == (names[-1] if names else first_line)
