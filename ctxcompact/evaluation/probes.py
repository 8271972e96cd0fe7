"""Fidelity probes: facts from the compacted-away part, looked for in the compacted context.

Deterministic (no model): the same transcripts give the same probes and the same scores, so
the figures can sit in CI reports. The probes are read off the replaced messages the way the
offline summarizer reads them (:class:`~ctxcompact.compaction.summarize.facts.Facts`:
wrappers stripped per block and line, harness templates shrunk, failures being failures of
the command that ran), but each probe is the transcript's own text, never the summary's.
They are grouped in the five categories a judge asks about:

``task``          ``task``: the task statement's first sentences; ``instruction``: every
                  user sentence stating an instruction or constraint (must, never, don't,
                  should…; 必须, 不要…), words typed while rejecting a tool call included;
                  ``last_request``: the latest thing the user asked.
``artifacts``     ``path``: each file created, edited or deleted (as the call wrote it), and path-like
                  words the user wrote; ``change``: for each changed file, the first line of
                  its latest new text — a bare list of paths does not keep it.
``continuation``  ``next_step``: the agent's last stated intent and its open to-do items;
                  ``test``: the last run of each test command, its status read from the
                  output (the runner's summary line, the failing tests it names).
``decisions``     ``decision``: the agent's conclusion sentences ("the issue is…", "the fix…",
                  "You're right…"), in its own words.
``recall``        ``statement``: each sentence of the agent's own prose (six words or more)
                  that names something — a name in backticks, a path, a number — the facts it
                  found and reported, which a list of names does not keep; ``error``: the
                  meaningful line of each failure (the exception and its
                  message, a CLI's complaint; not the ``Traceback`` header, not the harness's
                  exit-code frame); ``identifier``: names in backticks the user wrote, or the
                  agent wrote twice; ``number``: numbers with units; ``url``.

A probe is *kept* when its normalised text — lower case, quotes and backticks removed, ``\\``
read as ``/``, runs of white space as one space — is in the normalised compacted context, or
when it names a file whose content was restored. Sentence-like probes (:data:`SENTENCE_KINDS`)
are also kept when at least :data:`SENTENCE_COVERAGE` of their distinctive words (4+ letters,
or each CJK character) are in the context, so a faithful restatement passes — in a summary or
in the agent's own later words — and a lost sentence does not.

A kind's score is kept / total; a category's is kept / total over its kinds; the overall
:attr:`ProbeReport.score` is the mean of the categories that have probes, so a hundred paths
do not outweigh the one task statement, as they would not for a judge.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.compaction.summarize.calls import new_texts
from ctxcompact.compaction.summarize.facts import NUMBER_WITH_UNIT, Facts
from ctxcompact.compaction.summarize.outcomes import TestRun
from ctxcompact.compaction.summarize.shell_files import path_mentions, tool_file_ops
from ctxcompact.compaction.summarize.statements import conclusions_among, prose, sentences, texts
from ctxcompact.compaction.summarize.templates import shrink_harness_instructions
from ctxcompact.ir import Message, tool_result_text
from ctxcompact.markers import restored_file_paths

CATEGORIES: Mapping[str, tuple[str, ...]] = {
    "task": ("task", "instruction", "last_request"),
    "artifacts": ("path", "change"),
    "continuation": ("next_step", "test"),
    "decisions": ("decision",),
    "recall": ("statement", "error", "identifier", "number", "url"),
}
PROBE_KINDS = tuple(kind for kinds in CATEGORIES.values() for kind in kinds)
SENTENCE_COVERAGE = 0.8
SENTENCE_KINDS = frozenset(
    {"task", "instruction", "last_request", "decision", "next_step", "statement", "error"}
)
STATEMENT_WORDS = 6
TASK_SENTENCES = 3
CHANGE_CHARS = 60

_QUOTES = re.compile(r"[\"'`‘’“”«»]")
#: :func:`normalise` of ASCII text byte by byte (its quotes deleted apart): upper case to lower,
#: ``\\`` to ``/``, and to a space the separators ``str.split`` takes as white space but
#: ``bytes.split`` does not (``\x1c``–``\x1f``).
_ASCII_NORMAL = bytes(
    c + 32 if 65 <= c <= 90 else 0x2F if c == 0x5C else 0x20 if 0x1C <= c <= 0x1F else c for c in range(256)
)
_IDENT = re.compile(r"`([A-Za-z_][\w.:/-]{2,60}(?:\(\))?|[a-z][\w-]* [\w.-]+(?: [\w.-]+)?)`")
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")
_WORD = re.compile(r"[^\W\d_]{4,}|[\u3040-\u30ff\u3400-\u9fff]")
#: :data:`_WORD` in ASCII text, where it can only be this (2.5x faster in CPython's engine).
_ASCII_WORD = re.compile(r"[A-Za-z]{4,}")
#: Bytes of ASCII text with every byte but a letter made a space: split, the text's runs of
#: letters, every :data:`_ASCII_WORD` match among them (:meth:`ProbeSet._present`).
_ASCII_LETTERS = bytes(c if chr(c).isascii() and chr(c).isalpha() else 0x20 for c in range(256))
_TIMING = re.compile(r"\s*\bin [\d.]+s\b.*$")
_CODE_TOKEN = re.compile(r"\w+")
_NAMES = re.compile(r"`[^`\n]{2,80}`|\b\d+(?:[.,]\d+)*\b")


@dataclass(frozen=True, slots=True)
class Probe:
    """A fact of the original conversation that a compacted one should still hold, and its kind."""

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class KindScore:
    """How many probes of one kind a compacted conversation kept, of how many."""

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
        """Probes kept / probes, all kinds pooled."""
        return self.kept / self.total if self.total else None

    def score(self, kind: str) -> float | None:
        return next((k.score for k in self.kinds if k.kind == kind), None)

    def category(self, name: str) -> KindScore:
        """The pooled kept / total of one category's kinds (:data:`CATEGORIES`)."""
        members = [k for k in self.kinds if k.kind in CATEGORIES[name]]
        return KindScore(name, sum(k.kept for k in members), sum(k.total for k in members))

    @property
    def mean(self) -> float | None:
        """The mean of the category scores that have probes: what a judge's categories weigh."""
        scores = [s for s in (self.category(c).score for c in CATEGORIES) if s is not None]
        return sum(scores) / len(scores) if scores else None


def normalise(text: str) -> str:
    """Lower case, no quotes or backticks, ``\\`` as ``/``, white space runs as one space."""
    if text.isascii():  # the same, in bytes: 1.7x faster
        return b" ".join(text.encode().translate(_ASCII_NORMAL, b"\"'`").split()).decode()
    return " ".join(_QUOTES.sub("", text.replace("\\", "/")).lower().split())  # split: at \s+, 3x faster


def words(text: str) -> list[str]:
    """The distinctive words of ``text`` (4+ letters, or each CJK character), in order."""
    return (_ASCII_WORD if text.isascii() else _WORD).findall(text)


def extract_probes(messages: Sequence[Message]) -> tuple[Probe, ...]:
    """The probes of ``messages`` (the compacted-away part), deduplicated, in a fixed order."""
    facts = Facts.gather(messages)
    user = [r.text for r in facts.requests]
    agent = [t for t in (texts(m.content) for m in messages if m.role == "assistant") if t]
    found: dict[tuple[str, str], None] = {}

    def add(kind: str, values: Iterable[str]) -> None:
        for value in values:
            value = value.strip()
            if value:
                found.setdefault((kind, value), None)

    task = shrink_harness_instructions(facts.task)
    add("task", [s for s in sentences(task) if _long_enough(s)][:TASK_SENTENCES] or [task])
    add("instruction", (r.removeprefix("- ") for r in facts.rules))
    add(
        "last_request", (shrink_harness_instructions(u) for u in user[-1:])
    )  # a template's boilerplate is no request
    add("path", _changed_paths(messages))
    add("path", (p for t in user for p in path_mentions(t)))
    add("change", _change_lines(messages))
    add("next_step", [facts.last_intent(), *(t.split("] ", 1)[-1] for t in facts.todos)])
    add("test", (line for run in _latest_runs(facts.tests) for line in _test_lines(run)))
    said = [sentences(prose(t)) for t in agent]  # each text's sentences, split once
    decisions = [c for ss in said for c in conclusions_among(ss)]
    add("decision", decisions)
    decided = set(decisions)
    add("statement", (s for ss in said for s in _statements(ss) if s not in decided))
    add("error", (e.lines[0] for e in facts.errors if e.lines and e.lines[0] != "(no output)"))
    add("identifier", _identifiers(user, agent))
    add("number", (m.group(0) for t in [*user, *agent] for m in NUMBER_WITH_UNIT.finditer(t)))
    add("url", (m.group(0).rstrip(".,;:") for t in [*user, *agent] for m in _URL.finditer(t)))
    return tuple(Probe(kind, text) for kind, text in found)


def _changed_paths(messages: Sequence[Message]) -> list[str]:
    """Files created, edited or deleted, each as its call wrote it (no ``cd`` followed: the
    words the transcript holds)."""
    return [
        path
        for m in messages
        if m.role == "assistant"
        for b in m.content
        if b.get("type") == "tool_use"
        for path, op in tool_file_ops(str(b.get("name") or ""), b.get("input"), follow_cd=False)
        if op in ("edited", "written", "deleted")
    ]


def _statements(said: list[str]) -> list[str]:
    """The agent's sentences (of a text's prose) that name something (see the module docstring)."""
    return [s for s in said if len(s.split()) >= STATEMENT_WORDS and (_NAMES.search(s) or path_mentions(s))]


def _long_enough(sentence: str) -> bool:
    return len(sentence.split()) >= 5 or (len(sentence) >= 10 and not sentence.isascii())


def _change_lines(messages: Sequence[Message]) -> list[str]:
    """The first line of each changed file's latest new text (one probe per file)."""
    latest: dict[str, str] = {}
    for message in messages:
        if message.role != "assistant":
            continue
        for block in message.content:
            if block.get("type") == "tool_use":
                for path, text in new_texts(block):
                    line = _first_code_line(text)
                    if line:
                        latest.pop(path, None)
                        latest[path] = line
    return list(latest.values())


def _first_code_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 12 and len(_CODE_TOKEN.findall(line)) >= 3:
            if len(line) <= CHANGE_CHARS:
                return line
            cut = line.rfind(" ", 0, CHANGE_CHARS)
            return line[: cut if cut > CHANGE_CHARS // 2 else CHANGE_CHARS]
    return ""


def _latest_runs(runs: Sequence[TestRun]) -> list[TestRun]:
    latest: dict[str, TestRun] = {}
    for run in runs:
        latest.pop(run.command, None)
        latest[run.command] = run
    return [r for r in latest.values() if r.status != "unknown"]


def _test_lines(run: TestRun) -> list[str]:
    """A run's summary (its first summary line, timing left out) and its failing tests."""
    summary = _TIMING.sub("", run.summary.split("; ")[0]).strip(" =")
    return [summary or run.status, *run.failures]


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
                parts.append(_input_text(block.get("input")))
            elif kind == "tool_result":
                parts.append(tool_result_text(block))
    return "\n".join(parts)


def _input_text(value: object) -> str:
    """A tool input as the model reads its strings: the text itself, not JSON-escaped."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(_input_text(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_input_text(v) for v in value)
    return json.dumps(value, ensure_ascii=False, default=str)


def restored_paths(messages: Iterable[Message]) -> tuple[str, ...]:
    return tuple(p for m in messages for p in restored_file_paths(m))


def score_probes(probes: Sequence[Probe], context: str, *, restored: Iterable[str] = ()) -> ProbeReport:
    """Which ``probes`` are kept in ``context`` (see the module docstring)."""
    return ProbeSet(probes).score_text(context, restored=restored)


class ProbeSet:
    """Probes ready to be looked for in one or many contexts, every probe in one pass.

    The probes' normalised texts go into one Aho–Corasick automaton: a context is read once
    whatever the number of probes (one ``in`` per probe over the whole context made scoring
    quadratic: 2.8 s per strategy for the 3,000 probes of a 3.2M-token transcript).

    :meth:`score` reads a context message by message and keeps what each message holds by
    identity, so the messages several contexts share (``eval``: every strategy keeps most of
    the conversation) are read once; the text around each place where two messages meet is
    read too (a probe may run across them), kept by its text. The answer is
    :func:`score_probes`' on the joined context.

    :meth:`score_text` reads a long text the same way, in pieces of about :data:`PIECE_CHARS`
    cut after a space or a line break: normalised whole, a text became one string per word
    (ten times its size in memory, freshly mapped, and read again for the words), so its cost
    grew faster than the text (2.23× then 2.43× for 3,000 → 6,000 → 12,000 probes).
    """

    def __init__(self, probes: Sequence[Probe]) -> None:
        self.probes = tuple(probes)
        self.needles = [normalise(p.text) for p in self.probes]
        distinct = list(dict.fromkeys(n for n in self.needles if n))
        self._number = {n: i for i, n in enumerate(distinct)}
        self._matcher = _matcher(distinct)
        self._longest = max(map(len, distinct), default=0)
        # Where two texts meet (joined by a space) only a probe holding a space can run across
        # them: the text around each meeting is searched for those alone (the rest are found
        # in each text, and a window holds many of the short ones).
        spaced = [n for n in distinct if " " in n]
        self._across = _matcher(spaced)
        self._across_numbers = [self._number[n] for n in spaced]
        self._reach = max(map(len, spaced), default=0) - 1
        # What a text holds is kept as sets (the probes' numbers, the wanted words): bit masks
        # of every probe cost a pass over all of them per text and per probe (quadratic: 2.57x
        # for 6,000 -> 12,000 probes in bench_scaling).
        #: The words a sentence probe may be kept by (its coverage of them, module docstring).
        self._wanted = [
            frozenset(words(n)) if p.kind in SENTENCE_KINDS else frozenset()
            for p, n in zip(self.probes, self.needles, strict=True)
        ]
        self._all_wanted: frozenset[str] = frozenset().union(*self._wanted)
        self._ascii_wanted = {w.encode(): w for w in self._all_wanted if w.isascii()}
        self._messages: dict[int, tuple[Message, str, frozenset[int], frozenset[str], tuple[str, ...]]] = {}
        self._joins: dict[str, frozenset[int]] = {}

    def score_text(self, context: str, *, restored: Iterable[str] = ()) -> ProbeReport:
        """The probes kept in ``context``, a text."""
        pieces = (normalise(piece) for piece in _pieces(context, max(PIECE_CHARS, 4 * self._longest)))
        return self._scan((self._find_all(text) for text in pieces), restored)

    def score(self, messages: Sequence[Message], *, restored: Iterable[str] | None = None) -> ProbeReport:
        """The probes kept in ``messages`` (``score_text(context_text(messages))``); ``restored``:
        the paths of the files restored in them (default: their restored-file blocks',
        :func:`restored_paths`, read with each message)."""
        read = [self._read(message) for message in messages]
        if restored is None:
            restored = [path for known in read for path in known[4]]
        return self._scan(((text, found, present) for _, text, found, present, _ in read), restored)

    def _scan(
        self, pieces: Iterable[tuple[str, frozenset[int], frozenset[str]]], restored: Iterable[str]
    ) -> ProbeReport:
        """The report on the normalised ``pieces`` joined by spaces, from each one's own
        matches and words (:meth:`_find_all`) and the text around each place where two meet."""
        texts: list[str] = []
        found: set[int] = set()
        words: set[str] = set()
        for text, needles, present in pieces:
            if text:
                texts.append(text)
                found |= needles
                words |= present
        if len(texts) > 1 and self._reach > 0:
            joined = " ".join(texts)
            reach = self._reach
            at = -1
            for text in texts[:-1]:
                at += len(text) + 1  # the space between this text and the next
                window = joined[max(0, at - reach) : at + reach + 1]
                if window not in self._joins:
                    self._joins[window] = frozenset(self._find(window, across=True))
                found |= self._joins[window]
        return self._report(found, words, restored)

    def _read(self, message: Message) -> tuple[Message, str, frozenset[int], frozenset[str], tuple[str, ...]]:
        known = self._messages.get(id(message))
        if known is None or known[0] is not message:
            text = normalise(context_text([message]))
            known = (message, *self._find_all(text), restored_file_paths(message))
            self._messages[id(message)] = known
        return known

    def _find_all(self, text: str) -> tuple[str, frozenset[int], frozenset[str]]:
        """``text`` (normalised), the probes in it and the words of it a sentence probe wants."""
        present = self._present(text) if text and self._all_wanted else frozenset()
        return text, frozenset(self._find(text)), present

    def _present(self, text: str) -> frozenset[str]:
        """The wanted words in ``text`` (among its :func:`words`). In ASCII text, the
        wanted ones among its runs of letters, found in bytes (the words are the runs of 4+
        letters, and every wanted word is one): 1.8x faster than the pattern, a third of a
        message's first reading."""
        if text.isascii():
            wanted = self._ascii_wanted
            runs = text.encode().translate(_ASCII_LETTERS).split()
            return frozenset(map(wanted.__getitem__, wanted.keys() & runs))
        return self._all_wanted.intersection(words(text))

    def _find(self, text: str, *, across: bool = False) -> set[int]:
        """The numbers of the probes in ``text``; ``across``: of those holding a space only."""
        matcher = self._across if across else self._matcher
        if matcher is None or not text:
            return set()
        try:
            found = {i for i, _, _ in matcher.find_matches_as_indexes(text, overlapping=True)}
        except UnicodeEncodeError:  # a lone surrogate: the automaton reads UTF-8
            found = {i for i, _, _ in matcher.find_matches_as_indexes(_encodable(text), overlapping=True)}
        return {self._across_numbers[i] for i in found} if across else found

    def _report(self, found: set[int], words: set[str], restored: Iterable[str]) -> ProbeReport:
        """The report from the numbers of the probes ``found`` and the wanted ``words`` found."""
        files = [normalise(p) for p in restored]
        kept: Counter[str] = Counter()
        total: Counter[str] = Counter()
        lost: list[Probe] = []
        for probe, needle, wanted in zip(self.probes, self.needles, self._wanted, strict=True):
            total[probe.kind] += 1
            if needle and (
                self._number[needle] in found
                or any(f == needle or f.endswith("/" + needle.lstrip("./")) or needle in f for f in files)
                or (wanted and len(wanted & words) >= SENTENCE_COVERAGE * len(wanted))
            ):
                kept[probe.kind] += 1
            else:
                lost.append(probe)
        kinds = tuple(KindScore(k, kept[k], total[k]) for k in PROBE_KINDS)
        return ProbeReport(kinds, tuple(lost))


#: The size of the pieces :meth:`ProbeSet.score_text` reads a text in (at least: four times the
#: longest probe, so the text around each cut stays small beside the piece).
PIECE_CHARS = 1 << 16
_CUT = re.compile(r"[ \n]")


def _pieces(text: str, size: int) -> Iterator[str]:
    """``text`` in consecutive pieces of about ``size`` characters, each but the last ending
    just after a space or a line break (longer where none comes soon): :func:`normalise` of the
    whole is the normalised pieces that are not empty, joined by spaces — nothing it does
    looks across white space (lower case's final sigma neither)."""
    start = 0
    while len(text) - start > size:
        cut = _CUT.search(text, start + size)
        if cut is None:
            break
        yield text[start : cut.end()]
        start = cut.end()
    yield text[start:]


def _matcher(needles: Sequence[str]) -> Any:
    """One automaton for ``needles`` (indexes as given), or None for none.

    A contiguous NFA, never the DFA the library picks for a few needles: building the DFA for
    one long needle of a repeated character (a task message that is a runaway word) took 18 s
    at 100K characters and grows faster than the needle; the NFA builds in linear time, and
    its search stays linear in the text.
    """
    if not needles:
        return None
    from ahocorasick_rs import AhoCorasick, Implementation

    return AhoCorasick([_encodable(n) for n in needles], implementation=Implementation.ContiguousNFA)


def _encodable(text: str) -> str:
    """``text`` with lone surrogates replaced, as the automaton (UTF-8 inside) needs it; the
    same replacement on both sides keeps matches."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _identifiers(user: Sequence[str], agent: Sequence[str]) -> list[str]:
    from_agent: Counter[str] = Counter(m.group(1) for t in agent for m in _IDENT.finditer(t))
    from_user = [m.group(1) for t in user for m in _IDENT.finditer(t)]
    return [*from_user, *(name for name, n in from_agent.items() if n >= 2)]


def probe_counts(report: ProbeReport) -> Mapping[str, tuple[int, int]]:
    """``{kind: (kept, total)}`` for the kinds that had probes."""
    return {k.kind: (k.kept, k.total) for k in report.kinds if k.total}
