"""The judge's three prompts and the parsers of their replies.

Every prompt asks for strict JSON; the parsers accept it wrapped in prose or a code fence (the
first ``{`` to the last ``}``) and return None for anything else, so a malformed reply is
retried once by the caller and then reported as a missing score — never a crash.
Contexts are serialized with :func:`ctxcompact.compaction.summarize.serialize.serialize_for_prompt`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.evaluation.judge import QUESTION_KINDS

#: max_tokens of each stage's reply (also what the cost estimate assumes is spent).
QUESTIONS_MAX_TOKENS = 2048
ANSWERS_MAX_TOKENS = 4096
SCORES_MAX_TOKENS = 2048
#: Appended to a request whose reply could not be parsed: the retry is a request of its own
#: (its own cache entry, its own batch line).
RETRY_NOTE = "\n\nYour previous reply could not be parsed. Reply with the JSON object only."


@dataclass(frozen=True, slots=True)
class Question:
    """A probe question the judge wrote, and its kind."""

    kind: str
    text: str


QUESTIONS_SYSTEM = """You write probe questions that test whether an AI coding agent still knows \
what happened in the earlier part of its session after that part was compacted (summarized or \
cut). Kinds:
- recall: a specific fact from the history (an error message, a value, a name, a number).
- artifact: files and other artifacts — which were read, created or modified, and how.
- continuation: the task state — what is done, what is pending, what the next step is.
- decision: a choice that was made and why (an approach taken or rejected, a constraint).
Each question must be answerable from the history alone, specific (names, paths, values), and \
matter for continuing the work. Reply with JSON only: \
{"questions": [{"kind": "recall", "question": "..."}, ...]}"""

ANSWERS_SYSTEM = """You are an AI coding agent resuming a session. Your context is given below; \
parts of the session may have been compacted into a summary or replaced by placeholders. Answer \
each question from that context only. Be specific (paths, names, values). If the context does \
not tell, say "I don't know" rather than guess. Reply with JSON only: \
{"answers": [{"id": 1, "answer": "..."}, ...]}"""

SCORES_SYSTEM = """You are a strict judge of an AI agent's memory after context compaction. You \
get the full, uncompacted session, then questions about it with the agent's answers (written \
from its compacted context). Score each answer from 0 to 5 against the full session, weighing: \
accuracy (exact paths, names, errors, values), context awareness (the session's current state), \
artifact trail (files and changes), completeness (every part of the question), continuity \
(could the work go on from this answer alone) and instruction following.
5: fully correct and complete. 4: correct, a minor detail missing. 3: mostly correct or \
partial. 2: vague or missing key details. 1: mostly wrong or "I don't know" with a hint. \
0: wrong, invented, or no answer.
Reply with JSON only: {"scores": [{"id": 1, "score": 4, "reason": "..."}, ...]}"""


def question_prompt(history: str, *, per_kind: int) -> tuple[str, str]:
    """(system, user) asking for ``per_kind`` questions of each kind about ``history``."""
    kinds = ", ".join(QUESTION_KINDS)
    user = (
        f"<history>\n{history}\n</history>\n\n"
        f"Write exactly {per_kind} question(s) of each kind ({kinds}) about this history."
    )
    return QUESTIONS_SYSTEM, user


def answer_prompt(context: str, questions: Sequence[Question]) -> tuple[str, str]:
    """(system, user) asking to answer ``questions`` from the compacted ``context``."""
    user = f"<context>\n{context}\n</context>\n\n<questions>\n{_numbered(questions)}\n</questions>"
    return ANSWERS_SYSTEM, user


def score_prompt(full: str, questions: Sequence[Question], answers: Sequence[str | None]) -> tuple[str, str]:
    """(system, user) asking the judge to score each answer against the ``full`` session."""
    items = "\n\n".join(
        f"[{i}] ({q.kind}) Question: {q.text}\nAnswer: {a if a is not None else '(no answer)'}"
        for i, (q, a) in enumerate(zip(questions, answers, strict=True), 1)
    )
    user = f"<session>\n{full}\n</session>\n\n<answers>\n{items}\n</answers>"
    return SCORES_SYSTEM, user


def _numbered(questions: Sequence[Question]) -> str:
    return "\n".join(f"[{i}] {q.text}" for i, q in enumerate(questions, 1))


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text`` (whole, or from its first ``{`` to its last ``}``)."""
    for candidate in (text.strip(), text[text.find("{") : text.rfind("}") + 1]):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_questions(text: str, *, per_kind: int) -> tuple[Question, ...] | None:
    """At most ``per_kind`` questions of each known kind, in kind order; None when the reply
    holds none."""
    data = json_object(text)
    items = data.get("questions") if data else None
    if not isinstance(items, list):
        return None
    by_kind: dict[str, list[Question]] = {k: [] for k in QUESTION_KINDS}
    for item in items:
        if not isinstance(item, dict):
            continue
        kind, question = str(item.get("kind", "")).strip().lower(), item.get("question")
        if (
            kind in by_kind
            and isinstance(question, str)
            and question.strip()
            and len(by_kind[kind]) < per_kind
        ):
            by_kind[kind].append(Question(kind, question.strip()))
    found = tuple(q for k in QUESTION_KINDS for q in by_kind[k])
    return found or None


def parse_answers(text: str, *, count: int) -> tuple[str | None, ...] | None:
    """The answer to each of ``count`` questions by id (None where missing); None when the
    reply is not the expected JSON or answers nothing."""
    data = json_object(text)
    items = data.get("answers") if data else None
    if not isinstance(items, list):
        return None
    answers: list[str | None] = [None] * count
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("answer"), str):
            index = _index(item.get("id"), count)
            if index is not None:
                answers[index] = item["answer"]
    return tuple(answers) if any(a is not None for a in answers) else None


def parse_scores(text: str, *, count: int) -> tuple[int | None, ...] | None:
    """The score (0–5) of each of ``count`` answers by id (None where missing or out of
    range); None when the reply is not the expected JSON or scores nothing."""
    data = json_object(text)
    items = data.get("scores") if data else None
    if not isinstance(items, list):
        return None
    scores: list[int | None] = [None] * count
    for item in items:
        if not isinstance(item, dict):
            continue
        index, score = _index(item.get("id"), count), item.get("score")
        if index is None or isinstance(score, bool) or not isinstance(score, int | float):
            continue
        if 0 <= score <= 5 and score == int(score):
            scores[index] = int(score)
    return tuple(scores) if any(s is not None for s in scores) else None


def _index(value: Any, count: int) -> int | None:
    """A 1-based id as a list index, or None."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= count:
        return value - 1
    return None
