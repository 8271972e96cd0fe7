"""Instruction templates an agent harness writes into user messages, shrunk to what binds the agent.

* *Repeated templates*: a paragraph of at least :data:`TEMPLATE_MIN_WORDS` words found in
  :data:`TEMPLATE_MIN_REPEATS` or more user messages is kept where it first appears (it is
  part of the task there) and dropped from every later message.
* *Harness instructions* inside a task statement — mini-swe-agent's ``<instructions>…
  </instructions>`` block, SWE-agent's ``INSTRUCTIONS:`` section to the end — of at least
  :data:`HARNESS_MIN_WORDS` words shrink to their constraints: the lines that bind (must,
  never, do not, only, cannot, always, should, required, exact, important, critical), the
  code (fenced blocks: the submission command), and the headings above them. A note says how
  many lines went. The task itself (the issue, the PR description) is never touched.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

TEMPLATE_MIN_WORDS = 8
TEMPLATE_MIN_REPEATS = 3
HARNESS_MIN_WORDS = 120
HARNESS_NOTE = "[harness instructions shrunk to their constraints: {kept} of {total} lines kept]"

_PARAGRAPH = re.compile(r"\n\s*\n")
_HARNESS_TAG = re.compile(r"(<(\w*instructions?\w*)>)(.*?)(</\2>)", re.DOTALL | re.IGNORECASE)
_HARNESS_HEADING = re.compile(r"^INSTRUCTIONS:[ \t]*$", re.MULTILINE)
_BINDING = re.compile(
    r"\b(must|never|do not|don't|cannot|can't|only|always|should|required|not allowed|exact|exactly|"
    r"important|critical)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+\S.*|[A-Z][A-Z ]{2,40}:)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TAG_LINE = re.compile(r"^\s*</?[\w-]+>\s*$")


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH.split(text) if p.strip()]


def _key(paragraph: str) -> str:
    return " ".join(paragraph.split()).lower()


def repeated_paragraphs(texts: Iterable[str]) -> frozenset[str]:
    """Normalised paragraphs that appear in at least :data:`TEMPLATE_MIN_REPEATS` of
    ``texts`` and have at least :data:`TEMPLATE_MIN_WORDS` words."""
    seen: Counter[str] = Counter()
    for text in texts:
        seen.update({_key(p) for p in paragraphs(text) if len(p.split()) >= TEMPLATE_MIN_WORDS})
    return frozenset(k for k, n in seen.items() if n >= TEMPLATE_MIN_REPEATS)


def drop_templates(texts: Sequence[str]) -> list[str]:
    """Each text without the repeated template paragraphs, except where one first appears."""
    repeated = repeated_paragraphs(texts)
    if not repeated:
        return list(texts)
    met: set[str] = set()
    out: list[str] = []
    for text in texts:
        kept: list[str] = []
        parts = paragraphs(text)
        for paragraph in parts:
            key = _key(paragraph)
            if key in repeated and key in met:
                continue
            met.add(key)
            kept.append(paragraph)
        out.append(text if len(kept) == len(parts) else "\n\n".join(kept))
    return out


def shrink_harness_instructions(task: str) -> str:
    """``task`` with its harness instruction blocks shrunk to their constraints (see the
    module docstring); unchanged when it has none."""
    if "<" in task:
        task = _HARNESS_TAG.sub(lambda m: m.group(1) + _shrink(m.group(3)) + m.group(4), task)
    heading = _HARNESS_HEADING.search(task)
    if heading:
        task = task[: heading.end()] + _shrink(task[heading.end() :])
    return task


def _shrink(body: str) -> str:
    if len(body.split()) < HARNESS_MIN_WORDS:
        return body
    lines = body.splitlines()
    keep = [False] * len(lines)
    heading = -1
    in_fence = False
    for i, line in enumerate(lines):
        fence = bool(_FENCE.match(line))
        if fence or in_fence:
            keep[i] = True
        elif _HEADING.match(line):
            heading = i
            continue
        elif _BINDING.search(line) and not _TAG_LINE.match(line):
            keep[i] = True
        if keep[i] and heading >= 0:
            keep[heading] = True
            heading = -1
        if fence:
            in_fence = not in_fence
    total = sum(1 for line in lines if line.strip())
    kept = [line for line, k in zip(lines, keep, strict=True) if k]
    note = HARNESS_NOTE.format(kept=len(kept), total=total)
    return "\n" + note + "\n" + "\n".join(kept) + "\n"
