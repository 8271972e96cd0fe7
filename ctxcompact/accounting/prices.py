"""What tokens cost: the one home of prices, read from the ``genai-prices`` package.

``genai-prices`` (Pydantic's maintained table of LLM API list prices, with its data bundled in
the wheel: nothing is fetched) knows each model's input, output, cache-read and cache-write
prices, long-context tiers, batch discounts and the date each price took effect. A figure here
is an *estimate*: list prices for the tokens an API reported (or we counted), never a bill —
discounts, plans and subscriptions are not known. Every figure names its source
(:func:`price_source`) and the date its prices are taken at.

The package takes ~0.2 s to load, so it is imported on the first price asked for, never by a
command that shows none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from typing import Any

#: The package prices come from (its version is part of :func:`price_source`).
PRICE_PACKAGE = "genai-prices"


@dataclass(frozen=True, slots=True)
class TokenUse:
    """Tokens of one API call (or a sum of calls), split the way they are priced: ``input``
    is the prompt not read from or written to the cache; ``cache_write_1h`` is the part of
    ``cache_write`` written with a one-hour lifetime (priced higher)."""

    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    cache_write_1h: int = 0

    @property
    def prompt(self) -> int:
        return self.input + self.cache_write + self.cache_read

    def __add__(self, other: TokenUse) -> TokenUse:
        return TokenUse(
            self.input + other.input,
            self.cache_write + other.cache_write,
            self.cache_read + other.cache_read,
            self.output + other.output,
            self.cache_write_1h + other.cache_write_1h,
        )


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A model's list prices in USD per million tokens (None: not charged separately), as
    ``genai-prices`` gives them for ``at``; ``priced_as`` is the id it matched, ``tiered``
    says a long prompt costs more per token than shown (the first tier is shown)."""

    model: str
    priced_as: str
    provider: str
    input: float
    output: float
    cache_read: float | None
    cache_write: float | None
    context_window: int | None
    tiered: bool
    at: date


@dataclass(frozen=True, slots=True)
class Cost:
    """An estimated cost in USD and what it rests on."""

    dollars: float
    #: Calls priced, and calls left out (no model recorded, or a model with no known price).
    priced_calls: int
    unpriced_calls: int
    #: The ``genai-prices`` ids the calls were priced as.
    priced_as: tuple[str, ...]


def price_source() -> str:
    """``genai-prices 0.2.3``: the package and version the prices come from (its metadata
    only: the price data is not loaded; importlib.metadata, ~10 ms, is loaded here)."""
    from importlib import metadata

    try:
        return f"{PRICE_PACKAGE} {metadata.version(PRICE_PACKAGE)}"
    except metadata.PackageNotFoundError:  # pragma: no cover - a dependency
        return PRICE_PACKAGE


def _to_datetime(at: date | datetime | str | None) -> datetime:
    if isinstance(at, str):
        try:
            at = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            at = None
    if isinstance(at, datetime):
        return at if at.tzinfo else at.replace(tzinfo=UTC)
    if isinstance(at, date):
        return datetime(at.year, at.month, at.day, tzinfo=UTC)
    return datetime.now(tz=UTC)


@cache
def _lookup(model: str) -> tuple[Any, Any] | None:
    """(provider, model info) from the bundled snapshot, or None for an unknown model."""
    from genai_prices.data_snapshot import get_snapshot

    try:
        return get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return None


def _context(batch: bool) -> dict[str, str] | None:
    return {"processing": "batch"} if batch else None


def _mtok(value: Any) -> float | None:
    """A price per million tokens as a float: a tiered price's base tier."""
    if value is None:
        return None
    base = getattr(value, "base", value)
    return float(base)


def model_price(
    model: str, *, at: date | datetime | str | None = None, batch: bool = False
) -> ModelPrice | None:
    """``model``'s list prices in force at ``at`` (default now), for the Message Batches API
    with ``batch``; None when ``genai-prices`` does not know the model."""
    found = _lookup(model)
    if found is None:
        return None
    provider, info = found
    when = _to_datetime(at)
    prices = info.get_prices(when, _context(batch))
    fields = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")
    tiered = any(hasattr(getattr(prices, f, None), "tiers") for f in fields)
    return ModelPrice(
        model=model,
        priced_as=info.id,
        provider=provider.id,
        input=_mtok(getattr(prices, "input_mtok", None)) or 0.0,
        output=_mtok(getattr(prices, "output_mtok", None)) or 0.0,
        cache_read=_mtok(getattr(prices, "cache_read_mtok", None)),
        cache_write=_mtok(getattr(prices, "cache_write_mtok", None)),
        context_window=info.context_window,
        tiered=tiered,
        at=when.date(),
    )


def call_cost(
    use: TokenUse, model: str, *, at: date | datetime | str | None = None, batch: bool = False
) -> float | None:
    """USD for one API call of ``model`` at ``at`` (its long-context tier chosen by its own
    prompt); None when the model's price is unknown."""
    found = _lookup(model)
    if found is None:
        return None
    from genai_prices import Usage

    provider, info = found
    usage = Usage(
        input_tokens=use.prompt,
        cache_write_tokens=use.cache_write,
        cache_write_1h_tokens=min(use.cache_write_1h, use.cache_write),
        cache_read_tokens=use.cache_read,
        output_tokens=use.output,
    )
    try:
        calc = info.calc_price(
            usage, provider, genai_request_timestamp=_to_datetime(at), price_context=_context(batch)
        )
    except (ValueError, LookupError):
        return None
    return float(calc.total_price)


def total_cost(calls: Iterable[tuple[TokenUse, str | None, str | None]]) -> Cost:
    """The cost of many calls, each ``(tokens, model, timestamp)`` priced at its own date;
    a call without a model or with an unknown one is counted in ``unpriced_calls``."""
    dollars = 0.0
    priced = unpriced = 0
    ids: dict[str, None] = {}
    for use, model, at in calls:
        value = call_cost(use, model, at=at) if model else None
        if value is None:
            unpriced += 1
            continue
        dollars += value
        priced += 1
        found = _lookup(model) if model else None
        if found is not None:
            ids[found[1].id] = None
    return Cost(dollars, priced, unpriced, tuple(ids))


def known_price(model: str) -> bool:
    """Whether ``genai-prices`` has a price for ``model``."""
    return _lookup(model) is not None
