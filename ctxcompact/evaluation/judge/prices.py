"""Per-million-token prices (USD) of current Claude models, for ``eval --judge``'s cost line.

Standard Messages API prices as Anthropic's models overview published them when this table was
written (November 2026; Haiku 5.5's tiered price is left out); the
Message Batches API charges half. A model id matches its longest listed prefix
(``claude-sonnet-4-5-20250929`` → ``claude-sonnet-4-5``); an unknown model has no price and
the cost line says so instead of guessing.
"""

from __future__ import annotations

#: model id prefix → (input, output) USD per million tokens.
PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "claude-fable-5-1": (10.0, 50.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-opus-5": (5.0, 25.0),
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-sonnet-5": (2.0, 10.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-3-7-sonnet": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "claude-3-haiku": (0.25, 1.25),
}
#: What the Message Batches API charges, as a share of the standard price.
BATCH_DISCOUNT = 0.5


def model_prices(model: str, *, batch: bool = False) -> tuple[float, float] | None:
    """(input, output) USD per million tokens for ``model``; None when it is not listed."""
    name = model.strip().lower()
    matches = [p for p in PRICES_PER_MILLION if name == p or name.startswith(p + "-")]
    if not matches:
        return None
    price_in, price_out = PRICES_PER_MILLION[max(matches, key=len)]
    share = BATCH_DISCOUNT if batch else 1.0
    return price_in * share, price_out * share
