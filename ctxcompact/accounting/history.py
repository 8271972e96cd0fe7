"""Usage over time: every API call a session file records, and its compactions.

Claude Code writes the API's ``message.usage`` on each assistant entry; Codex writes an
``event_msg`` ``token_count`` line after each call (``info.last_token_usage``). Read in file
order they give the context size at every turn — the prompt the call sent plus the answer it
got — with no counting of ours, and the tokens to price (cache reads and writes apart). The
compactions are Claude Code's ``compact_boundary`` entries (``compactMetadata.preTokens``) and
Codex's ``compacted`` lines, placed between the calls around them.

Works on raw records (parsed JSON lines), the whole file — before its last compaction too, unlike
the live conversation ``count`` sizes — so ``sessions`` can feed it only the lines that
mention usage. Pure: returns a frozen :class:`UsageHistory`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ctxcompact.accounting.prices import Cost, TokenUse, total_cost
from ctxcompact.transcripts.recorded_usage import token_field

#: Byte strings that a line must contain to matter here: callers reading raw bytes parse only
#: those lines (``sessions`` on hundreds of files).
HISTORY_MARKERS = (b'"usage"', b'"token_count"', b"compact_boundary", b'"compacted"', b'"turn_context"')

HistoryAgent = Literal["claude-code", "codex", "none"]


@dataclass(frozen=True, slots=True)
class Call:
    """One API call as the file recorded it. ``line`` is 1-based; ``sidechain``: a Claude
    Code subagent's call written inline (it costs, but is not the main thread's context)."""

    line: int
    timestamp: str | None
    model: str | None
    tokens: TokenUse
    sidechain: bool = False

    @property
    def context(self) -> int:
        """The context after this call: what it sent plus what it answered."""
        return self.tokens.prompt + self.tokens.output


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction point: after ``calls_before`` main-thread calls. ``pre_tokens`` is the
    size the agent recorded before compacting (Claude Code's ``preTokens``), else the context
    of the last call before it."""

    line: int
    timestamp: str | None
    trigger: str | None
    pre_tokens: int | None
    calls_before: int


@dataclass(frozen=True, slots=True)
class UsageHistory:
    """The calls and compactions of one session file, in file order."""

    agent: HistoryAgent
    calls: tuple[Call, ...]
    compactions: tuple[Compaction, ...]
    #: The window the agent recorded (Codex's ``model_context_window``), if any.
    context_window: int | None = None

    @property
    def main(self) -> tuple[Call, ...]:
        """The main thread's calls: the context the agent kept sending."""
        return tuple(c for c in self.calls if not c.sidechain)

    @property
    def model(self) -> str | None:
        """The model of the last main-thread call that names one."""
        return next((c.model for c in reversed(self.main) if c.model), None)

    @property
    def tokens(self) -> TokenUse:
        """Every call's tokens added up (subagents' too): what the session was billed for."""
        total = TokenUse()
        for call in self.calls:
            total = total + call.tokens
        return total

    def cost(self) -> Cost:
        """The estimated cost of every call, each priced at its own date (loads the prices)."""
        return total_cost((c.tokens, c.model, c.timestamp) for c in self.calls)

    def drops(self) -> list[tuple[Compaction, int | None]]:
        """Each compaction with the context of the first main-thread call after it (None when
        no call followed)."""
        main = self.main
        return [
            (p, main[p.calls_before].context if p.calls_before < len(main) else None)
            for p in self.compactions
        ]


def usage_history(records: Iterable[Any]) -> UsageHistory:
    """The history of a Claude Code session or a Codex rollout from its records (any other
    transcript gives an empty one, ``agent`` ``none``)."""
    records = list(records)
    if any(_is_codex_line(r) for r in records[:20]):
        return _codex(records)
    return _claude_code(records)


def _is_codex_line(record: Any) -> bool:
    return isinstance(record, Mapping) and isinstance(record.get("payload"), Mapping) and "type" in record


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- Claude Code -----------------------------------------------------------------------------


def _claude_code(records: list[Any]) -> UsageHistory:
    """Assistant entries with usage, one call per response (the entries of one response share
    ``message.id``: prompt fields from its last entry, the largest output, since earlier entries
    hold streaming snapshots); synthetic all-zero usages are no calls."""
    calls: dict[Any, tuple[int, dict[str, Any]]] = {}
    order: list[Any] = []
    points: list[tuple[int, int, Mapping[str, Any]]] = []
    for position, record in enumerate(records):
        if not isinstance(record, Mapping):
            continue
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            points.append((len(order), position, record))
            continue
        inner = record.get("message")
        if record.get("type") != "assistant" or not isinstance(inner, Mapping) or "ctxcompact" in record:
            continue
        usage = inner.get("usage")
        if not isinstance(usage, Mapping):
            continue
        key = inner.get("id") or record.get("requestId") or ("line", position)
        seen = calls.get(key)
        output = max(token_field(usage.get("output_tokens")), seen[1]["output"] if seen else 0)
        cache = usage.get("cache_creation")
        entry: dict[str, Any] = {
            "line": seen[0] if seen else position + 1,
            "timestamp": _str(record.get("timestamp")),
            "model": _str(inner.get("model")),
            "sidechain": bool(record.get("isSidechain")),
            "tokens": TokenUse(
                input=token_field(usage.get("input_tokens")),
                cache_write=token_field(usage.get("cache_creation_input_tokens")),
                cache_read=token_field(usage.get("cache_read_input_tokens")),
                output=output,
                cache_write_1h=token_field(cache.get("ephemeral_1h_input_tokens"))
                if isinstance(cache, Mapping)
                else 0,
            ),
            "output": output,
        }
        if seen is None:
            order.append(key)
        calls[key] = (entry["line"], entry)
    built = [_call(calls[k][1]) for k in order]
    kept = [c for c in built if c.tokens.prompt]
    # A boundary's place counted in kept main-thread calls, not in responses seen.
    index_of = {id(c): i for i, c in enumerate(c for c in kept if not c.sidechain)}
    compactions = []
    for seen_before, position, record in points:
        before = [c for c in built[:seen_before] if c.tokens.prompt and not c.sidechain]
        meta = record.get("compactMetadata")
        pre = token_field(meta.get("preTokens")) if isinstance(meta, Mapping) else 0
        compactions.append(
            Compaction(
                line=position + 1,
                timestamp=_str(record.get("timestamp")),
                trigger=_str(meta.get("trigger")) if isinstance(meta, Mapping) else None,
                pre_tokens=pre or (before[-1].context if before else None),
                calls_before=index_of[id(before[-1])] + 1 if before else 0,
            )
        )
    agent: HistoryAgent = "claude-code" if kept or compactions else "none"
    return UsageHistory(agent, tuple(kept), tuple(compactions))


def _call(entry: Mapping[str, Any]) -> Call:
    return Call(entry["line"], entry["timestamp"], entry["model"], entry["tokens"], entry["sidechain"])


# --- Codex -----------------------------------------------------------------------------------


def _codex(records: list[Any]) -> UsageHistory:
    """``token_count`` events in order (a repeat — the same session total again — is no new
    call), the model of the ``turn_context`` before each, ``compacted`` lines between them.
    Responses API ``input_tokens`` include the cached ones (priced as cache reads here)."""
    calls: list[Call] = []
    compactions: list[Compaction] = []
    model: str | None = None
    window: int | None = None
    previous_total: Any = None
    for position, record in enumerate(records):
        if not isinstance(record, Mapping):
            continue
        kind = record.get("type")
        payload = record.get("payload")
        payload = payload if isinstance(payload, Mapping) else {}
        if kind == "turn_context":
            model = _str(payload.get("model")) or model
        elif kind == "session_meta":
            model = model or _str(payload.get("model"))
        elif kind == "compacted":
            compactions.append(
                Compaction(
                    line=position + 1,
                    timestamp=_str(record.get("timestamp")),
                    trigger=None,
                    pre_tokens=calls[-1].context if calls else None,
                    calls_before=len(calls),
                )
            )
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if not isinstance(info, Mapping) or not isinstance(info.get("last_token_usage"), Mapping):
                continue
            total = info.get("total_token_usage")
            if total is not None and total == previous_total:
                continue
            previous_total = total
            last = info["last_token_usage"]
            prompt = token_field(last.get("input_tokens"))
            cached = min(token_field(last.get("cached_input_tokens")), prompt)
            recorded_window = info.get("model_context_window")
            window = token_field(recorded_window) or window
            calls.append(
                Call(
                    line=position + 1,
                    timestamp=_str(record.get("timestamp")),
                    model=model,
                    tokens=TokenUse(
                        input=prompt - cached,
                        cache_read=cached,
                        output=token_field(last.get("output_tokens")),
                    ),
                )
            )
    agent: HistoryAgent = "codex"
    return UsageHistory(agent, tuple(calls), tuple(compactions), window)
