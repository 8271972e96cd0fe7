"""The judge's pipeline over an ``eval`` result: questions, answers, scores (see
:mod:`ctxcompact.evaluation.judge`), and the plan of what it will cost before anything is sent.

Pure core: requests go through the :class:`~ctxcompact.evaluation.judge.ask.Asker` the caller gives;
nothing is printed. A request that fails, or whose reply cannot be parsed even after one retry
(a request of its own, :data:`~ctxcompact.evaluation.judge.prompts.RETRY_NOTE` appended), leaves the
scores that depend on it missing (None) with a note; the run never stops for it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from ctxcompact.accounting.tokens import TokenCounter
from ctxcompact.batch.message_batches import custom_id
from ctxcompact.compaction.summarize.serialize import clip_middle, serialize_for_prompt
from ctxcompact.evaluation.judge import DEFAULT_JUDGE_MODEL, DEFAULT_QUESTIONS_PER_KIND
from ctxcompact.evaluation.judge.ask import Asker
from ctxcompact.evaluation.judge.cache import JudgeCache
from ctxcompact.evaluation.judge.prompts import (
    ANSWERS_MAX_TOKENS,
    QUESTIONS_MAX_TOKENS,
    RETRY_NOTE,
    SCORES_MAX_TOKENS,
    Question,
    answer_prompt,
    parse_answers,
    parse_questions,
    parse_scores,
    question_prompt,
    score_prompt,
)
from ctxcompact.evaluation.judge.result import JudgeResult, QuestionScore, RunJudgement
from ctxcompact.ir import Message
from ctxcompact.llm.transport import BatchRequest, TextReply

if TYPE_CHECKING:
    from ctxcompact.evaluation.run import EvalResult, StrategyRun

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

#: The most tokens of one context (history, compacted context, full session) put in a prompt;
#: a longer one is clipped in the middle. Leaves room in a 200K window for the rest.
MAX_CONTEXT_TOKENS = 150_000
#: Tool results and thinking longer than this are clipped head + tail in a prompt.
MAX_RESULT_CHARS = 8000


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """The judge's model, questions per kind, and the most context it is sent."""

    model: str = DEFAULT_JUDGE_MODEL
    per_kind: int = DEFAULT_QUESTIONS_PER_KIND
    max_context_tokens: int = MAX_CONTEXT_TOKENS


@dataclass(frozen=True, slots=True)
class JudgePlan:
    """What a judge run will ask: ``requests`` in all, ``cached`` of them answered already;
    for the others, their input tokens (estimated where they depend on replies not yet had)
    and at most ``output_tokens`` of replies. Retries of malformed replies are not counted."""

    requests: int
    cached: int
    input_tokens: int
    output_tokens: int

    @property
    def uncached(self) -> int:
        return self.requests - self.cached


@dataclass(frozen=True, slots=True)
class _Source:
    """One conversation: its full text, the history to ask about, and its runs."""

    name: str
    full: str
    history: str
    runs: tuple[tuple[StrategyRun, str], ...]  # (run, its compacted context as text)


def judge_eval(
    result: EvalResult, *, asker: Asker, counter: TokenCounter, settings: JudgeSettings = JudgeSettings()
) -> JudgeResult:
    """Questions, answers and scores for every run of ``result`` that compacted something."""
    sources = _sources(result, counter, settings)
    questions, why_q = _stage(
        asker,
        {s.name: _question_request(s, settings) for s in sources},
        lambda _key, text: parse_questions(text, per_kind=settings.per_kind),
    )
    answer_requests = {
        (s.name, run.strategy): _answer_request(context, questions[s.name], settings)
        for s in sources
        if s.name in questions
        for run, context in s.runs
    }
    answers, why_a = _stage(
        asker, answer_requests, lambda key, text: parse_answers(text, count=len(questions[key[0]]))
    )
    score_requests = {
        key: _score_request(s, questions[s.name], answers[key], settings)
        for s in sources
        for run, _ in s.runs
        if (key := (s.name, run.strategy)) in answers
    }
    scores, why_s = _stage(
        asker, score_requests, lambda key, text: parse_scores(text, count=len(questions[key[0]]))
    )
    runs = tuple(
        _judgement(
            key := (s.name, run.strategy),
            questions.get(s.name),
            answers.get(key),
            scores.get(key),
            why_q.get(s.name) or why_a.get(key) or why_s.get(key) or "",
        )
        for s in sources
        for run, _ in s.runs
    )
    return JudgeResult(settings.model, runs)


def plan_judge(
    result: EvalResult, *, cache: JudgeCache, counter: TokenCounter, settings: JudgeSettings = JudgeSettings()
) -> JudgePlan:
    """The requests :func:`judge_eval` will make with ``cache``, and what the uncached ones
    cost. A request downstream of an uncached one is estimated from its prompt without the
    replies it waits for, plus those replies' ``max_tokens``. Identical requests (two
    strategies that kept the same context) are one request, as the cache makes them."""
    planned: dict[object, tuple[BatchRequest, int, bool]] = {}
    for s in _sources(result, counter, settings):
        for index, (request, waits, cached) in enumerate(_plan_source(s, cache, settings)):
            # An estimate stands for a request not known yet: never merged with another.
            key = request.custom_id if not waits else (s.name, index)
            planned.setdefault(key, (request, waits, cached))
    todo = [(request, waits) for request, waits, cached in planned.values() if not cached]
    texts = [part for request, _ in todo for part in (request.system, request.user)]
    counts = counter.count_batch(texts) if texts else []
    return JudgePlan(
        len(planned),
        len(planned) - len(todo),
        sum(counts) + sum(waits for _, waits in todo),
        sum(request.max_tokens for request, _ in todo),
    )


def _plan_source(
    source: _Source, cache: JudgeCache, settings: JudgeSettings
) -> list[tuple[BatchRequest, int, bool]]:
    """Every request of one conversation: (request, the reply tokens it waits for, cached)."""
    out: list[tuple[BatchRequest, int, bool]] = []
    q_request = _question_request(source, settings)
    qs = _cached(cache, q_request, partial(_questions, per_kind=settings.per_kind))
    out.append((q_request, 0, qs is not None))
    for _run, context in source.runs:
        if qs is None:
            out.append((_answer_request(context, (), settings), QUESTIONS_MAX_TOKENS, False))
            waits = QUESTIONS_MAX_TOKENS + ANSWERS_MAX_TOKENS
            out.append((_score_request(source, (), (), settings), waits, False))
            continue
        a_request = _answer_request(context, qs, settings)
        found = _cached(cache, a_request, partial(_answers, count=len(qs)))
        out.append((a_request, 0, found is not None))
        if found is None:
            out.append((_score_request(source, qs, (), settings), ANSWERS_MAX_TOKENS, False))
            continue
        s_request = _score_request(source, qs, found, settings)
        scored = _cached(cache, s_request, partial(_scores, count=len(qs)))
        out.append((s_request, 0, scored is not None))
    return out


def _questions(text: str, *, per_kind: int) -> tuple[Question, ...] | None:
    return parse_questions(text, per_kind=per_kind)


def _answers(text: str, *, count: int) -> tuple[str | None, ...] | None:
    return parse_answers(text, count=count)


def _scores(text: str, *, count: int) -> tuple[int | None, ...] | None:
    return parse_scores(text, count=count)


def _cached(cache: JudgeCache, request: BatchRequest, parse: Callable[[str], T | None]) -> T | None:
    """The parsed cached reply of ``request`` (or of its retry); None when not cached/parsable."""
    for candidate in (request, _retry(request)):
        text = cache.get(candidate.custom_id)
        parsed = parse(text) if text is not None else None
        if parsed is not None:
            return parsed
    return None


def _stage(
    asker: Asker, requests: Mapping[K, BatchRequest], parse: Callable[[K, str], T | None]
) -> tuple[dict[K, T], dict[K, str]]:
    """Each request's parsed reply, and why there is none for the others. An unparsable reply
    is asked again once (all such retries of the stage together)."""
    answers = asker.ask(list(requests.values()))
    out: dict[K, T] = {}
    why: dict[K, str] = {}
    retries: dict[K, BatchRequest] = {}
    for key, request in requests.items():
        answer = answers.get(request.custom_id, "no answer")
        if isinstance(answer, str):
            why[key] = answer
        elif (parsed := parse(key, answer.text)) is not None:
            out[key] = parsed
        else:
            retries[key] = _retry(request)
    again = asker.ask(list(retries.values())) if retries else {}
    for key, request in retries.items():
        answer = again.get(request.custom_id, "no answer")
        parsed = parse(key, answer.text) if isinstance(answer, TextReply) else None
        if parsed is not None:
            out[key] = parsed
        else:
            why[key] = answer if isinstance(answer, str) else "the reply could not be parsed, twice"
    return out, why


def _retry(request: BatchRequest) -> BatchRequest:
    return _request(request.model, request.system, request.user + RETRY_NOTE, request.max_tokens)


def _request(model: str, system: str, user: str, max_tokens: int) -> BatchRequest:
    key = custom_id(model=model, system=system, user=user, max_tokens=max_tokens)
    return BatchRequest(key, model, system, user, max_tokens)


def _question_request(source: _Source, settings: JudgeSettings) -> BatchRequest:
    system, user = question_prompt(source.history, per_kind=settings.per_kind)
    return _request(settings.model, system, user, QUESTIONS_MAX_TOKENS)


def _answer_request(context: str, questions: Sequence[Question], settings: JudgeSettings) -> BatchRequest:
    system, user = answer_prompt(context, questions)
    return _request(settings.model, system, user, ANSWERS_MAX_TOKENS)


def _score_request(
    source: _Source, questions: Sequence[Question], answers: Sequence[str | None], settings: JudgeSettings
) -> BatchRequest:
    padded = [*answers, *([None] * (len(questions) - len(answers)))]
    system, user = score_prompt(source.full, questions, padded)
    return _request(settings.model, system, user, SCORES_MAX_TOKENS)


def _judgement(
    key: tuple[str, str],
    questions: Sequence[Question] | None,
    answers: Sequence[str | None] | None,
    scores: Sequence[int | None] | None,
    why: str,
) -> RunJudgement:
    source, strategy = key
    if questions is None:
        return RunJudgement(source, strategy, (), f"no questions could be generated: {why}")
    note = (
        ""
        if answers is not None and scores is not None
        else (f"no answers could be read: {why}" if answers is None else f"no scores could be read: {why}")
    )
    return RunJudgement(
        source,
        strategy,
        tuple(
            QuestionScore(
                q.kind,
                q.text,
                answers[i] if answers is not None else None,
                scores[i] if scores is not None else None,
            )
            for i, q in enumerate(questions)
        ),
        note,
    )


def _sources(result: EvalResult, counter: TokenCounter, settings: JudgeSettings) -> list[_Source]:
    """The conversations with at least one run that replaced something, in result order."""
    runs_by_source: dict[str, list[StrategyRun]] = {}
    for run in result.runs:
        if not run.skipped and run.replaced:
            runs_by_source.setdefault(run.source, []).append(run)
    out: list[_Source] = []
    for name, runs in runs_by_source.items():
        original = runs[0].original
        replaced = {id(m) for run in runs for m in run.replaced}
        history = [m for m in original if id(m) in replaced]
        out.append(
            _Source(
                name,
                _text(original, counter, settings),
                _text(history, counter, settings),
                tuple((run, _text(run.messages, counter, settings)) for run in runs),
            )
        )
    return out


def _text(messages: Sequence[Message], counter: TokenCounter, settings: JudgeSettings) -> str:
    """``messages`` as prompt text, clipped in the middle to the context budget."""
    text = serialize_for_prompt(messages, max_result_chars=MAX_RESULT_CHARS)
    budget = settings.max_context_tokens
    size = counter.count_batch([text])[0]
    while size > budget and text:
        text = clip_middle(text, min(len(text) - 1, int(len(text) * budget / size * 0.95)))
        size = counter.count_batch([text])[0]
    return text
