"""The LLM judge of ``eval --judge``, after Factory's "Evaluating Context
Compression" (2025).

Three stages, each a set of independent text requests:

1. *Questions* (:func:`~ctxcompact.evaluation.judge.prompts.question_prompt`): per conversation, probe
   questions of four kinds — recall, artifact, continuation, decision — about the part the
   strategies compacted away (the union of what each strategy replaced). One set per
   conversation, shared by all its strategies: every strategy answers the same questions, which
   makes the comparison fair and costs one request instead of one per strategy.
2. *Answers*: per strategy run, all the questions answered in one request from the compacted
   context alone.
3. *Scores*: per run, the judge model scores each answer 0–5 against the full conversation.

Requests go through an :class:`~ctxcompact.evaluation.judge.ask.Asker` (the Messages API one by one, or
one Message Batch per stage), behind a content-hash cache (:mod:`ctxcompact.evaluation.judge.cache`), so
a rerun sends nothing. :mod:`ctxcompact.evaluation.judge.run` drives the stages and plans the cost;
:mod:`ctxcompact.output.judge` turns the scores into table columns, JSON and HTML.
"""

from __future__ import annotations

#: The four kinds of probe question, in report order.
QUESTION_KINDS = ("recall", "artifact", "continuation", "decision")
#: The judge's default model (``--judge-model``) and questions per kind (``--questions``).
DEFAULT_JUDGE_MODEL = "claude-sonnet-5-5"
DEFAULT_QUESTIONS_PER_KIND = 2
