"""Retention check: did the facts that matter survive a compaction?

From the messages a compaction replaced we collect three kinds of facts and look for each in
the text that replaces them (summary and restored files):

* file paths named in tool inputs (``path``, ``file_path``, ``filename``, ``notebook_path``);
* errors: the exception name (``KeyError``) or, failing that, the first 40 characters of the
  first line of each ``is_error`` tool result or traceback;
* the last user request: "yes" when at least 60 % of its distinctive words (4+ letters,
  lower-cased, compared without their last two letters so that "change" matches "changing")
  appear — a paraphrasing LLM summary passes, a summary that lost the request does not;
* user instructions: each sentence of a real user message (not an earlier compaction summary,
  not a ``<tag>``-wrapped injection) that contains must, never, always, don't, do not, should,
  shouldn't, 必须, 不要 or 需要; kept by the same 60 % distinctive-word test (each CJK character
  counts as a word there), so a sentence copied or faithfully paraphrased counts and a dropped
  one does not.

It is a smoke alarm, not a grade: a low figure says "read the summary before trusting it".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ctxcompact.compaction.scan import Caseless, LinePattern, lines_of
from ctxcompact.ir import Message, has_user_text, text_of, tool_result_text
from ctxcompact.markers import EARLIER_SUMMARY_PREFIXES

PATH_KEYS = ("path", "file_path", "filename", "notebook_path")
_ERROR_NAME = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception))\b")
_TRACEBACK = LinePattern(r"^(Traceback \(most recent call last\)|\w*(Error|Exception)\b.*)$")
_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_INSTRUCTION = Caseless(
    r"\b(must|never|always|don't|don’t|do not|should|shouldn't)\b|必须|不要|需要", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。！？\n]+")
#: Share of a sentence's distinctive words that must appear for it to count as kept.
COVERAGE = 0.6


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """How many of the replaced part's paths, errors and instructions the compacted context still names, and which it lost."""

    paths_found: int
    paths_total: int
    errors_found: int
    errors_total: int
    last_request: bool | None  # None: the replaced part had no user request
    missing_paths: tuple[str, ...] = ()
    missing_errors: tuple[str, ...] = ()
    instructions_found: int = 0
    instructions_total: int = 0

    def summary_line(self) -> str:
        request = "n/a" if self.last_request is None else ("yes" if self.last_request else "no")
        return f"paths {self.paths_found}/{self.paths_total}, errors {self.errors_found}/{self.errors_total}, last request {request}"


def collect_paths(messages: Iterable[Message]) -> list[str]:
    seen: dict[str, None] = {}
    for message in messages:
        for block in message.content:
            if block.get("type") != "tool_use":
                continue
            data = block.get("input")
            if isinstance(data, dict):
                for key in PATH_KEYS:
                    value = data.get(key)
                    if isinstance(value, str) and value.strip():
                        seen.setdefault(value.strip(), None)
    return list(seen)


def collect_errors(messages: Iterable[Message]) -> list[str]:
    seen: dict[str, None] = {}
    for message in messages:
        for block in message.content:
            if block.get("type") != "tool_result":
                continue
            text = tool_result_text(block)
            if block.get("is_error") or _has_traceback(text):
                seen.setdefault(error_signature(text), None)
    return [e for e in seen if e]


def _has_traceback(text: str) -> bool:
    """A line that is a traceback's header or opens with an exception's name: tried where
    lines start (:class:`~ctxcompact.compaction.scan.LinePattern`), not at every position of
    a tool's output."""
    return _TRACEBACK.search(text)


def error_signature(text: str) -> str:
    name = _last_error_name(text)
    if name:
        return name  # the raised exception is the last one named in a traceback
    for line in lines_of(text):
        if line.strip():
            return line.strip()[:40]
    return ""


def _last_error_name(text: str) -> str | None:
    """The last :data:`_ERROR_NAME` in ``text``, looked for line by line from the end among
    the lines holding "Error" or "Exception" (a name never spans lines)."""
    at = max(text.rfind("Error"), text.rfind("Exception"))
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        names = _ERROR_NAME.findall(text, start, len(text) if end < 0 else end)
        if names:
            return str(names[-1])
        at = max(text.rfind("Error", 0, start), text.rfind("Exception", 0, start))
    return None


def collect_instructions(messages: Iterable[Message]) -> list[str]:
    """The user's instruction sentences (see the module docstring), first occurrence only."""
    seen: dict[str, None] = {}
    for message in messages:
        if not has_user_text(message):
            continue
        for block in message.content:
            text = str(block.get("text", "")).strip() if block.get("type") == "text" else ""
            if not text or text.startswith("<") or text.startswith(EARLIER_SUMMARY_PREFIXES):
                continue
            for sentence in _SENTENCE_END.split(text):
                sentence = " ".join(sentence.split())
                if _INSTRUCTION.search(sentence):
                    seen.setdefault(sentence, None)
    return list(seen)


def sentence_kept(sentence: str, haystack: str, *, cjk_chars: bool = True) -> bool:
    """At least :data:`COVERAGE` of ``sentence``'s distinctive words are in ``haystack``
    (lower-cased). A crude stem — the word less its last two letters, at least four — lets a
    paraphrase match: "change" and "changing", "test" and "tests". With ``cjk_chars`` each CJK
    character is a word of its own (the last-request check keeps its original rule: runs)."""
    words = _WORD.findall(_CJK.sub(" ", sentence) if cjk_chars else sentence)
    stems = {w.lower()[: max(4, len(w) - 2)] for w in words}
    if cjk_chars:
        stems.update(_CJK.findall(sentence))
    return not stems or sum(1 for w in stems if w in haystack) / len(stems) >= COVERAGE


def last_request(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if has_user_text(message):
            return text_of(message)
    return None


def check_retention(replaced: Sequence[Message], replacement_text: str) -> RetentionReport:
    haystack = replacement_text.lower()
    paths = collect_paths(replaced)
    missing_paths = tuple(
        p for p in paths if p.lower() not in haystack and p.rsplit("/", 1)[-1].lower() not in haystack
    )
    errors = collect_errors(replaced)
    missing_errors = tuple(e for e in errors if e.lower() not in haystack)
    request = last_request(replaced)
    kept = None if request is None else sentence_kept(request, haystack, cjk_chars=False)
    instructions = collect_instructions(replaced)
    return RetentionReport(
        paths_found=len(paths) - len(missing_paths),
        paths_total=len(paths),
        errors_found=len(errors) - len(missing_errors),
        errors_total=len(errors),
        last_request=kept,
        missing_paths=missing_paths,
        missing_errors=missing_errors,
        instructions_found=sum(1 for i in instructions if sentence_kept(i, haystack)),
        instructions_total=len(instructions),
    )


#: A text holds a task statement (or an earlier summary) when it has this share of its lines.
TASK_HELD_SHARE = 0.9


def line_share(text: str, kept: str) -> float:
    """The share of ``text``'s non-blank lines found whole (stripped) in ``kept``: how much of
    a task statement or an earlier summary a compaction holds (1.0 for an empty text)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return 1.0
    return sum(1 for line in lines if line in kept) / len(lines)
