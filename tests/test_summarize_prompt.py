"""The summary prompt carries every rule seed 000 F-004 and seed 003 FR-1.4 ask for."""

from __future__ import annotations

import pytest

from ctxcompact.compaction.summarize import prompt
from ctxcompact.compaction.summarize.prompt import (
    DIMENSIONS,
    MOST_RECENT_RULE,
    SUMMARY_MAX_WORDS,
    build_merge_prompt,
    build_prompt,
)

SEED_RULE = (
    "Pay special attention to the MOST RECENT messages — summarize the current task state, what was "
    "just done, and what the next logical step should be. This information is critical because the "
    "original recent messages will NOT be preserved."
)


def test_most_recent_rule_is_the_seed_sentence_verbatim() -> None:
    assert MOST_RECENT_RULE == SEED_RULE
    _, user = build_prompt("[user]\nhi")
    assert SEED_RULE in user


def test_five_dimensions_in_order_as_headings() -> None:
    assert DIMENSIONS == (
        "Goals & Decisions",
        "File Operations",
        "Tool Calls",
        "Task Status",
        "Errors & Resolutions",
    )
    _, user = build_prompt("x")
    positions = [user.index(f"## {d}") for d in DIMENSIONS]
    assert positions == sorted(positions)


def test_task_status_asks_for_the_operation_in_progress_and_next_step() -> None:
    _, user = build_prompt("x")
    status = user[user.index("## Task Status") : user.index("## Errors & Resolutions")]
    assert "operation in progress in the most recent round" in status
    assert "next step" in status


def test_seed_003_content_requirements() -> None:
    _, user = build_prompt("x")
    for phrase in ("completed tasks", "current state", "file paths", "code snippets", "next steps"):
        assert phrase in user


def test_word_limit_default_and_parameter() -> None:
    assert SUMMARY_MAX_WORDS == 1500
    _, user = build_prompt("x")
    assert "at most 1500 words" in user
    _, user = build_prompt("x", max_words=300)
    assert "at most 300 words" in user and "1500" not in user


def test_summary_tags_requested() -> None:
    _, user = build_prompt("x")
    assert "<summary></summary>" in user


def test_transcript_is_embedded_whole_even_with_braces() -> None:
    text = "[user]\nformat {this} and {{that}} and {max_words}"
    _, user = build_prompt(text)
    assert f"<transcript>\n{text}\n</transcript>" in user


def test_instructions_are_appended_last() -> None:
    _, plain = build_prompt("x")
    _, user = build_prompt("x", instructions="  Focus on the database migration.  ")
    assert user.startswith(plain)
    assert user.rstrip().endswith("Focus on the database migration.")
    assert build_prompt("x", instructions="   ")[1] == plain


def test_system_prompt_says_the_summary_replaces_the_conversation() -> None:
    system, _ = build_prompt("x")
    assert system == prompt.SUMMARY_SYSTEM_PROMPT
    assert "replaced by a summary" in system


@pytest.mark.parametrize(("index", "total", "expected"), [(1, 3, "Later parts follow"), (3, 3, "last part")])
def test_chunk_note(index: int, total: int, expected: str) -> None:
    _, user = build_prompt("x", part=(index, total))
    assert f"This is part {index} of {total}." in user
    assert expected in user
    assert SEED_RULE in user


def test_merge_prompt_has_parts_in_order_and_the_same_rules() -> None:
    system, user = build_merge_prompt(["first part", "second part"], max_words=500, instructions="Keep SQL.")
    assert system
    assert user.index('<part index="1" of="2">\nfirst part\n</part>') < user.index('<part index="2" of="2">')
    assert SEED_RULE in user
    assert all(f"## {d}" in user for d in DIMENSIONS)
    assert "at most 500 words" in user
    assert user.rstrip().endswith("Keep SQL.")


def test_the_five_sections_ask_for_what_nine_section_prompts_carry() -> None:
    # Issue 13: the five headings stay, their content matches the best nine-section prompts.
    _, user = build_prompt("x")
    for phrase in (
        "Primary request and intent",
        "Key technical concepts",
        "Files and code",
        "Errors and fixes",
        "problem solving",
        "All user messages",
        "Pending tasks",
        "Current work",
        "Next step",
        "earlier compaction summary",
        "sed -i",
    ):
        assert phrase in user, phrase
