"""The agent's and the user's own statements: sentences, conclusions, instructions, intent.

Read off the words as written, never rephrased (a summary invents nothing):

* a *conclusion* is a sentence of the agent that states a finding, a cause, a fix, a decision
  or an agreement ("the issue is…", "the root cause…", "the fix…", "I found…", "this means…",
  "You're right…", "decided…", "instead of…", "all tests pass"; 问题是 / 原因 / 修复 / 结论…),
  not a guess, a question or a plan ("maybe the issue is…", "let me check whether…");
* an *instruction* is a user sentence with must / never / always / don't / should / only…
  (必须 / 不要 / 需要 / 应该 / 总是 / 永远 / 不能 / 别);
* an *intent* is a sentence of the agent about what it does next ("Let me…", "I'll…", "Next…",
  "Now I…"; 接下来 / 让我 / 我来 / 下一步…); a question to the user is one too (the agent waits).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ctxcompact.compaction.scan import Caseless
from ctxcompact.ir import Block

#: A user sentence with one of these words is an instruction or constraint (English, Chinese).
USER_RULE = Caseless(
    r"\b(must|mustn't|should|shouldn't|don't|do not|never|always|need to|needs to|have to|has to|"
    r"make sure|ensure|avoid|prefer|required|only|not acceptable|important|critical)\b"
    r"|必须|不要|需要|应该|总是|永远|不能|别",
    re.IGNORECASE,
)
CONCLUSION = Caseless(
    r"\b(?:(?:the|this|that|its|main|real|actual|core|key) (?:issue|problem|bug|cause|root cause|reason|fix|"
    r"solution|culprit|difference|answer|finding) (?:is|was|are|were|lies|seems|appears|here)"
    r"|root cause|caused by|because|this means|which means|that means|turns out|it seems|"
    r"(?:i|we) (?:found|discovered|confirmed|identified|realized|noticed|verified|see) |"
    r"you're (?:absolutely )?right|you are (?:absolutely )?right|good (?:point|catch)|my mistake|i was wrong|"
    r"decided|i chose|we chose|going with|instead of|rather than|the (?:approach|plan|design) is|"
    r"(?:is|are|was|were) (?:now )?(?:fixed|resolved|complete|done|working|broken|redundant|unnecessary)|"
    r"(?:issue|problem|bug|flaw|cause) (?:found|identified)|(?:has|have|had) an? (?:\w+ )?(?:flaw|bug|problem)|"
    r"bottom line|in short|in summary|conclusion|verdict|result:|"
    r"works? (?:correctly|perfectly|fine|as expected)|(?:is|are|was|were) (?:not )?(?:broken|correct|wrong|missing|"
    r"needed|required|the same|identical|safe|valid|invalid)|"
    r"all (?:\d+ )?tests pass|tests? (?:now )?pass|works now|now works)\b"
    r"|问题(?:是|在于|出在)|原因|根本|修复|解决|结论|发现|因为|所以|决定|方案|已完成|完成了",
    re.IGNORECASE,
)
INTENT = Caseless(
    r"\b(?:let me|let's|i'll|i will|i'm going to|i am going to|i need to|we need to|now i|then i|"
    r"i should|the next step|still need|todo|to do)\b"
    # "Next, …", "Next I…", "Remaining: …" open a plan; "next reset date", "remaining budget" in a
    # document the agent wrote are noun phrases, not what it does next.
    r"|^\W*next\b(?:\s*[,:]|\s+(?:i|we|step|steps|up|let)\b)|\bremaining\s*(?::|(?:work|steps?|tasks?|items?|issues?)\b)"
    r"|接下来|下一步|让我|我来|我将|我会|现在",
    re.IGNORECASE,
)
QUESTION = re.compile(r"\?\s*$|？\s*$")
#: A guess or a plan is not a conclusion: "maybe the issue is…", "let me check whether…".
HEDGE = Caseless(
    r"\b(?:maybe|might|perhaps|possibly|probably|could be|i wonder|not sure|i think|i suspect|let me|let's|"
    r"i'll|i will|i need to|should i|whether)\b|可能|也许|让我",
    re.IGNORECASE,
)
SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")
#: The same cuts in ASCII text (no Chinese stop before any position there): one alternative
#: fewer to try at each position.
_ASCII_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP_TAG = re.compile(r"</?[A-Za-z_][\w-]*>")  # <IMPORTANT>, </CRITICAL>: emphasis, not words
_MENU_ITEM = re.compile(r"^\[\w\]\s")  # "[d] Done - exit": an option offered, not a finding
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_TABLE_OR_RULE = re.compile(r"^\s*(?:\|.*\||[-=*_]{3,}|#{1,6}\s.*)\s*$")  # tables, rules, headings


def texts(blocks: Iterable[Block]) -> str:
    return "\n".join([str(b.get("text") or "") for b in blocks if b.get("type") == "text"]).strip()


def sentences(text: str) -> list[str]:
    out = []
    for sentence in (_ASCII_SENTENCE_SPLIT if text.isascii() else SENTENCE_SPLIT).split(text):
        sentence = sentence.replace("**", "").strip(" -*•\t#>")
        if sentence:
            out.append(sentence)
    return out


def prose(text: str) -> str:
    """``text`` without code blocks, tables, rules and headings: what can hold a statement."""
    if "```" in text:
        text = _CODE_FENCE.sub("\n", text)
    return "\n".join(line for line in text.splitlines() if not _TABLE_OR_RULE.match(line))


def instructions(text: str) -> list[str]:
    """The user's instruction sentences in ``text``, whole."""
    return [
        s
        for s in sentences(_MARKUP_TAG.sub(" ", text))
        if USER_RULE.search(s) and (len(s.split()) >= 3 or len(s) >= 6)
    ]


def conclusions(text: str, *, min_words: int = 5) -> list[str]:
    """The agent's conclusion sentences in ``text``, whole (see the module docstring)."""
    return conclusions_among(sentences(prose(text)), min_words=min_words)


def conclusions_among(said: list[str], *, min_words: int = 5) -> list[str]:
    """:func:`conclusions` of ``said``, the sentences of a text's prose (read once per
    message, for every reader of its sentences)."""
    return [
        s
        for s in said
        if CONCLUSION.search(s)
        and not HEDGE.search(s)
        and not QUESTION.search(s)
        and not s.endswith((":", "："))  # an introduction to what follows
        and not _MENU_ITEM.match(s)
        and _long_enough(s, min_words)
    ]


def intents(text: str) -> list[str]:
    """The agent's sentences about what it does next (questions to the user included)."""
    return intents_among(sentences(prose(text)))


def intents_among(said: list[str]) -> list[str]:
    """:func:`intents` of ``said``, the sentences of a text's prose."""
    return [s for s in said if (INTENT.search(s) or QUESTION.search(s)) and _long_enough(s, 3)]


def _long_enough(sentence: str, min_words: int) -> bool:
    # CJK sentences have no spaces: count characters there.
    return len(sentence.split()) >= min_words or (len(sentence) >= 2 * min_words and not sentence.isascii())
