"""Context windows and the compaction threshold.

``threshold = (context_window − output_reserve) × ratio``; ratio 0.4–0.9, default 0.6.
Labels: ratio ≤ 0.6 *cost-first*, ≤ 0.75 *balanced*, above that *retention*.

A model id is looked up exactly, then by the longest registry key it starts with, then falls
back to :data:`DEFAULT_CONTEXT_WINDOW` with ``known=False`` (callers warn). Ids are normalized
first: lower-cased, provider paths dropped (``openrouter/meta-llama/llama-4-maverick`` →
``llama-4-maverick``) and vendor prefixes removed (``us.anthropic.claude-…`` → ``claude-…``,
``Meta-Llama-3.1-8B-Instruct`` → ``llama-3.1-8b-instruct``); Ollama tags such as
``llama3.1:8b`` match their family by prefix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ctxcompact.errors import InputError, OptionError

DEFAULT_CONTEXT_WINDOW = 96_000
#: The largest context window a models file or --context-window may give (ten times today's
#: largest, 10M tokens): a larger number is a typo, and would overflow the threshold's float.
MAX_CONTEXT_WINDOW = 100_000_000
DEFAULT_OUTPUT_RESERVE = 32_000
DEFAULT_RATIO = 0.6
RATIO_RANGE = (0.4, 0.9)
REGISTRY_ENV = "CTXCOMPACT_MODELS_FILE"

#: Built-in context windows (input + output tokens), by model id or id prefix.
BUILTIN_CONTEXT_WINDOWS: dict[str, int] = {
    # Anthropic (200K standard; 1M is an opt-in beta for some Sonnet models)
    "claude": 200_000,
    "claude-opus-4-6": 200_000,
    "claude-sonnet-4-6": 200_000,
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-haiku": 200_000,
    "claude-2": 100_000,
    # OpenAI
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-5-codex": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "gpt-oss": 131_072,
    # Google
    "gemini-3": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    # DeepSeek
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "deepseek-v3": 128_000,
    "deepseek-r1": 128_000,
    "deepseek-coder": 128_000,
    # Qwen
    "qwen-max": 32_768,
    "qwen-plus": 131_072,
    "qwen-turbo": 1_000_000,
    "qwen2.5": 131_072,
    "qwen3": 131_072,
    "qwen3-coder": 262_144,
    # Meta Llama
    "llama-4-maverick": 1_048_576,
    "llama-4-scout": 10_000_000,
    "llama-3.3": 131_072,
    "llama-3.2": 131_072,
    "llama-3.1": 131_072,
    "llama-3": 8_192,
    # Ollama tags (``llama3.1:8b``) and Hugging Face names (``Meta-Llama-3.1-8B-Instruct``)
    "llama3.3": 131_072,
    "llama3.2": 131_072,
    "llama3.1": 131_072,
    "llama3": 8_192,
    "llama4": 1_048_576,
    # Mistral
    "mistral-large": 131_072,
    "mistral-small": 131_072,
    "codestral": 256_000,
}

_VENDOR_PREFIXES = (
    "us.", "eu.", "apac.", "global.", "anthropic.", "meta.", "meta-", "mistral.", "deepseek.", "qwen.",
)  # fmt: skip

Match = Literal["exact", "prefix", "default", "override"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A resolved model: its context window and how it was found."""

    model: str | None
    context_window: int
    match: Match
    key: str | None = None
    #: For an unknown model: the known ids nearest to it, nearest first.
    nearest: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.match != "default"


def normalize_model_id(model: str) -> str:
    name = model.strip().lower().rsplit("/", 1)[-1]
    changed = True
    while changed:
        changed = False
        for prefix in _VENDOR_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                changed = True
    return name


def resolve_model(
    model: str | None,
    *,
    context_window: int | None = None,
    registry: Mapping[str, int] | None = None,
) -> ModelInfo:
    """The context window for ``model``: override, exact id, longest prefix, else default.

    ``registry`` entries (from a user file) take precedence over the built-in ones.
    """
    if context_window is not None:
        validate_context_window(context_window)
        return ModelInfo(model, context_window, "override")
    if not model:
        return ModelInfo(None, DEFAULT_CONTEXT_WINDOW, "default")
    table = {**BUILTIN_CONTEXT_WINDOWS, **{normalize_model_id(k): v for k, v in (registry or {}).items()}}
    name = normalize_model_id(model)
    if name in table:
        return ModelInfo(model, table[name], "exact", name)
    prefixes = sorted((k for k in table if name.startswith(k)), key=len, reverse=True)
    for key in prefixes:
        if is_variant(name[len(key) :], family=not any(c.isdigit() for c in key)):
            return ModelInfo(model, table[key], "prefix", key)
    import difflib

    near = [*prefixes[:1], *difflib.get_close_matches(name, list(table), n=4, cutoff=0.6)]
    return ModelInfo(model, DEFAULT_CONTEXT_WINDOW, "default", nearest=tuple(dict.fromkeys(near))[:3])


#: What may follow a known id in a name for the same model: a date or version
#: (``-20250929``, ``-2024-08-06``, ``.1``, ``-v1:0``), a size or quantization tag (``:8b``,
#: ``-30b-a3b``, ``-q4_k_m``, ``-fp8``), or a release word (``-latest``, ``-preview``,
#: ``-instruct``). Anything else (``gpt-5`` + ``-turbo-xl``) is another model, not this one.
#: (Compiled on first use, through re's cache: a run that names no model never needs it.)
_VARIANT_PART = (
    r"\d[\w.]*|v\d[\w:.]*|\d+[bkm]|a\d+b|q\d\w*|fp\d+|bf16|int\d|awq|gptq|gguf|hf|it"
    r"|latest|preview|exp|experimental|instruct|chat|online"
)


def is_variant(rest: str, *, family: bool = False) -> bool:
    """Whether ``rest`` (what follows a known id) keeps the name the same model's: empty, a
    run of :data:`_VARIANT_PART` pieces after separators, or anything after a family key
    without a version (``claude``, ``codestral``)."""
    if not rest:
        return True
    if rest[0] not in "-_:@.":
        return False
    if family:
        return True
    return all(re.fullmatch(_VARIANT_PART, part) for part in re.split(r"[-:@]", rest[1:]) if part) and bool(
        rest[1:].strip("-_:@.")
    )


def load_registry(path: str | os.PathLike[str] | None = None) -> dict[str, int]:
    """User models from ``path`` or ``$CTXCOMPACT_MODELS_FILE`` (JSON or TOML).

    Accepted shapes: ``{"my-model": 64000}``, ``{"models": {"my-model": 64000}}``, or values
    as tables ``{"my-model": {"context_window": 64000}}``. Missing file → clear error.
    """
    chosen = path if path is not None else os.environ.get(REGISTRY_ENV)
    if not chosen:
        return {}
    p = Path(chosen)
    from ctxcompact.transcripts.optionfile import parse_json, parse_toml, read_option_text

    text = read_option_text(p, option="models_file")
    parse = parse_toml if p.suffix == ".toml" else parse_json
    data = parse(text, option="models_file", name=str(p))
    if isinstance(data, Mapping) and isinstance(data.get("models"), Mapping):
        data = data["models"]
    if not isinstance(data, Mapping):
        raise InputError(f"{p}: expected a mapping of model id to context window.")
    out: dict[str, int] = {}
    for key, value in data.items():
        window = value.get("context_window") if isinstance(value, Mapping) else value
        if not isinstance(window, int) or isinstance(window, bool) or not 0 < window <= MAX_CONTEXT_WINDOW:
            raise InputError(
                f"{p}: model {key!r}: context window must be a whole number from 1 to "
                f"{MAX_CONTEXT_WINDOW:,}, got {f'{window!r}'[:40]}."
            )
        out[str(key)] = window
    return out


def strategy_label(ratio: float) -> str:
    if ratio <= 0.6:
        return "cost-first"
    if ratio <= 0.75:
        return "balanced"
    return "retention"


@dataclass(frozen=True, slots=True)
class Budget:
    """A model's window, the output reserve, and the threshold (``ratio`` of what is usable) at which to compact."""

    model: ModelInfo
    output_reserve: int
    ratio: float
    threshold: int

    @property
    def label(self) -> str:
        return strategy_label(self.ratio)

    @property
    def usable(self) -> int:
        return self.model.context_window - self.output_reserve


def validate_context_window(context_window: int) -> None:
    if not 0 < context_window <= MAX_CONTEXT_WINDOW:
        raise OptionError(
            "{context_window} must be from 1 to {most} tokens, got {value}.",
            "context_window",
            most=f"{MAX_CONTEXT_WINDOW:,}",
            value=context_window,
        )


def validate_ratio(ratio: float) -> None:
    low, high = RATIO_RANGE
    if not low <= ratio <= high:
        raise OptionError(
            "{threshold} must be between {low} and {high}, got {value}.",
            "threshold",
            low=low,
            high=high,
            value=ratio,
        )


def make_budget(
    model: ModelInfo, *, output_reserve: int | None = None, ratio: float = DEFAULT_RATIO
) -> Budget:
    """The threshold for ``model``.

    ``output_reserve`` defaults to 32,000, or to a quarter of the window when 32,000
    would take more than half of it (windows under 64K, such as gpt-4's 8K), so small models
    still get a usable budget; an explicit value is taken as given and must leave room for
    input.
    """
    validate_ratio(ratio)
    if output_reserve is None:
        window = model.context_window
        reserve = DEFAULT_OUTPUT_RESERVE if window // 2 >= DEFAULT_OUTPUT_RESERVE else window // 4
    else:
        reserve = output_reserve
        if reserve < 0:
            raise OptionError(
                "{output_reserve} must not be negative, got {value}.", "output_reserve", value=reserve
            )
        if reserve >= model.context_window:
            raise OptionError(
                "{output_reserve} {reserve:,} leaves no room for input in a {window:,}-token window.",
                "output_reserve",
                reserve=reserve,
                window=model.context_window,
            )
    return Budget(model, reserve, ratio, decimal_share(model.context_window - reserve, ratio))


def decimal_share(amount: int, ratio: float) -> int:
    """⌊``amount`` × ``ratio``⌋, ``ratio`` read as the decimal it prints as (0.7 is 7/10, not
    the binary 0.6999…): 168,000 × 0.7 is 117,600, not int(117599.99999999999). Integer
    arithmetic (``fractions`` would cost a command ~2 ms to import)."""
    mantissa, _, exponent = repr(ratio).partition("e")
    whole, _, decimals = mantissa.partition(".")
    numerator = int(whole + decimals)
    power = int(exponent or 0) - len(decimals)
    return amount * numerator * 10**power if power >= 0 else amount * numerator // 10**-power


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """Where a token count stands against a budget."""

    tokens: int
    budget: Budget

    @property
    def needs_compaction(self) -> bool:
        return self.tokens >= self.budget.threshold

    @property
    def remaining(self) -> int:
        """Tokens left before the threshold (negative when over it)."""
        return self.budget.threshold - self.tokens

    @property
    def usage(self) -> float:
        """Share of the threshold used (1.0 = at the threshold)."""
        return self.tokens / self.budget.threshold if self.budget.threshold else float("inf")

    @property
    def window_share(self) -> float:
        return self.tokens / self.budget.model.context_window
