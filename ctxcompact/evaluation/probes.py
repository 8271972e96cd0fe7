"""Fidelity probes: facts from the compacted-away part, looked for in the compacted context.

Deterministic (no model): the same transcripts give the same probes and the same scores, so
the figures can sit in CI reports. What counts as a probe, by kind:

``path``          a file a tool call read, wrote, edited or deleted (tool inputs and shell
                  commands, :mod:`ctxcompact.compaction.summarize.shell_files`), and path-like words the
                  user wrote;
``identifier``    a name in backticks (``parse_args``, ``SyncState``, ``git rebase``) that the
                  user wrote, or that the agent wrote at least twice;
``number``        a number with a unit (``30 s``, ``512 MB``, ``20,000 tokens``, ``95 %``) in the
                  user's or the agent's words;
``error``         each failed tool result: the exception name it raises, else the first 40
                  characters of its first line (:func:`ctxcompact.compaction.retention.error_signature`),
                  wrapper tags such as ``<tool_use_error>`` removed;
``url``           an ``http(s)://`` address in the user's or the agent's words;
``instruction``   a user sentence that states an instruction or constraint (must, never,
                  always, don't, should…; 必须, 不要, 需要, 应该, 总是, 永远…), boilerplate
                  dropped (:mod:`ctxcompact.compaction.summarize.boilerplate`); an earlier compaction
                  summary is not the user's words and gives no probes;
``last_request``  the last user request of the compacted-away part;
``next_step``     the agent's last stated plan in that part (its last sentence of four or
                  more words with "next", "I'll", "let me"…), when it stated one.

A probe is *kept* when its normalised text — lower case, quotes and backticks removed, ``\\``
read as ``/``, runs of white space as one space — is in the normalised compacted context, or
when it names a file whose content was restored. Sentence probes (``instruction``,
``last_request``, ``next_step``) are also kept when at least :data:`SENTENCE_COVERAGE` of
their distinctive words (4+ letters, or each CJK character) are in the context, so a faithful
paraphrase passes and a lost sentence does not. The score of a kind is kept / total; the
overall score is over all probes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxcompact.compaction.retention import collect_errors
from ctxcompact.compaction.summarize.boilerplate import user_words
from ctxcompact.compaction.summarize.facts import NUMBER_WITH_UNIT, USER_RULE, sentences, texts
from ctxcompact.compaction.summarize.shell_files import path_mentions, tool_file_ops
from ctxcompact.compaction.summarize.templates import drop_templates
from ctxcompact.ir import Message, has_user_text, tool_result_text
from ctxcompact.markers import EARLIER_SUMMARY_PREFIXES, restored_file_path, restored_file_paths

PROBE_KINDS = ("path", "identifier", "number", "error", "url", "instruction", "last_request", "next_step")
SENTENCE_COVERAGE = 0.8
SENTENCE_KINDS = frozenset({"instruction", "last_request", "next_step"})

_QUOTES = re.compile(r"[\"'`‘’“”«»]")
_SPACE = re.compile(r"\s+")
_IDENT = re.compile(r"`([A-Za-z_][\w.:/-]{2,60}(?:\(\))?|[a-z][\w-]* [\w.-]+(?: [\w.-]+)?)`")
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")
_WORD = re.compile(r"[^\W\d_]{4,}|[\u3040-\u30ff\u3400-\u9fff]")
_TAG = re.compile(r"</?[\w-]+>|</?[\w-]*$")  # <tool_use_error>…: the wrapper is not the error
_NEXT_CUE = re.compile(r"\b(next|then|i'll|i will|let me|let's|remaining|still need|todo)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Probe:
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class KindScore:
    kind: str
    kept: int
    total: int

    @property
    def score(self) -> float | None:
        return self.kept / self.total if self.total else None


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """How many probes of each kind survived, and which were lost (in extraction order)."""

    kinds: tuple[KindScore, ...]
    lost: tuple[Probe, ...]

    @property
    def kept(self) -> int:
        return sum(k.kept for k in self.kinds)

    @property
    def total(self) -> int:
        return sum(k.total for k in self.kinds)

    @property
    def overall(self) -> float | None:
        return self.kept / self.total if self.total else None

    def score(self, kind: str) -> float | None:
        return next((k.score for k in self.kinds if k.kind == kind), None)


def normalise(text: str) -> str:
    """Lower case, no quotes or backticks, ``\\`` as ``/``, white space runs as one space."""
    return _SPACE.sub(" ", _QUOTES.sub("", text.replace("\\", "/")).lower()).strip()


def extract_probes(messages: Sequence[Message]) -> tuple[Probe, ...]:
    """The probes of ``messages`` (the compacted-away part), deduplicated, in a fixed order."""
    user = _user_texts(messages)
    agent = [texts(m.content) for m in messages if m.role == "assistant"]
    found: dict[tuple[str, str], None] = {}

    def add(kind: str, values: Iterable[str]) -> None:
        for value in values:
            value = value.strip()
            if value:
                found.setdefault((kind, value), None)

    add("path", _tool_paths(messages))
    add("path", (p for t in user for p in path_mentions(t)))
    add("identifier", _identifiers(user, agent))
    add("number", (m.group(0) for t in [*user, *agent] for m in NUMBER_WITH_UNIT.finditer(t)))
    add("error", (_TAG.sub("", e).strip() for e in collect_errors(messages)))
    add("url", (m.group(0).rstrip(".,;:") for t in [*user, *agent] for m in _URL.finditer(t)))
    add("instruction", (s for t in user for s in sentences(t) if USER_RULE.search(s) and len(s) >= 4))
    add("last_request", user[-1:])
    add("next_step", _next_step(agent))
    return tuple(Probe(kind, text) for kind, text in found)


def context_text(messages: Iterable[Message]) -> str:
    """Everything a model would read in ``messages``: text, thinking, tool inputs, results."""
    parts: list[str] = []
    for message in messages:
        for block in message.content:
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text") or ""))
            elif kind == "thinking":
                parts.append(str(block.get("thinking") or ""))
            elif kind == "tool_use":
                parts.append(json.dumps(block.get("input"), ensure_ascii=False, default=str))
            elif kind == "tool_result":
                parts.append(tool_result_text(block))
    return "\n".join(parts)


def restored_paths(messages: Iterable[Message]) -> tuple[str, ...]:
    return tuple(p for m in messages for p in restored_file_paths(m))


def score_probes(probes: Sequence[Probe], context: str, *, restored: Iterable[str] = ()) -> ProbeReport:
    """Which ``probes`` are kept in ``context`` (see the module docstring)."""
    haystack = normalise(context)
    words = set(_WORD.findall(haystack))
    files = [normalise(p) for p in restored]
    kept: Counter[str] = Counter()
    total: Counter[str] = Counter()
    lost: list[Probe] = []
    for probe in probes:
        total[probe.kind] += 1
        if _kept(probe, haystack, words, files):
            kept[probe.kind] += 1
        else:
            lost.append(probe)
    kinds = tuple(KindScore(k, kept[k], total[k]) for k in PROBE_KINDS)
    return ProbeReport(kinds, tuple(lost))


def _kept(probe: Probe, haystack: str, words: set[str], files: Sequence[str]) -> bool:
    needle = normalise(probe.text)
    if needle in haystack:
        return True
    if any(f == needle or f.endswith("/" + needle.lstrip("./")) or needle in f for f in files if needle):
        return True
    if probe.kind in SENTENCE_KINDS:
        wanted = set(_WORD.findall(needle))
        return bool(wanted) and len(wanted & words) >= SENTENCE_COVERAGE * len(wanted)
    return False


def _user_texts(messages: Sequence[Message]) -> list[str]:
    raw = [
        user_words(m.content)
        for m in messages
        if m.role == "user" and has_user_text(m) and restored_file_path(m) is None
    ]
    # An earlier compaction summary is not the user speaking: its facts were probed when it was made.
    return [t for t in drop_templates(raw) if t and not t.startswith(EARLIER_SUMMARY_PREFIXES)]


def _tool_paths(messages: Sequence[Message]) -> list[str]:
    return [
        path
        for m in messages
        if m.role == "assistant"
        for b in m.content
        if b.get("type") == "tool_use"
        for path, op in tool_file_ops(str(b.get("name") or ""), b.get("input"))
        if op != "mentioned"
    ]


def _identifiers(user: Sequence[str], agent: Sequence[str]) -> list[str]:
    from_agent: Counter[str] = Counter(m.group(1) for t in agent for m in _IDENT.finditer(t))
    from_user = [m.group(1) for t in user for m in _IDENT.finditer(t)]
    return [*from_user, *(name for name, n in from_agent.items() if n >= 2)]


def _next_step(agent: Sequence[str]) -> list[str]:
    for text in reversed(agent):
        if text.strip():
            plans = [s for s in sentences(text) if _NEXT_CUE.search(s) and len(s.split()) >= 4]
            return plans[-1:]
    return []


def probe_counts(report: ProbeReport) -> Mapping[str, tuple[int, int]]:
    """``{kind: (kept, total)}`` for the kinds that had probes."""
    return {k.kind: (k.kept, k.total) for k in report.kinds if k.total}
