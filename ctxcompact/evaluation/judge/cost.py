"""What a judge run will cost, in one line printed before anything is sent.

Input tokens are counted offline with ctxcompact's own counter (tiktoken by default), not
Claude's tokenizer, so the figure is an estimate; outputs are assumed to use their whole
``max_tokens``, so the cost is an upper bound on them. Prices: the judge model's list prices
from :mod:`ctxcompact.accounting.prices` (``genai-prices``; the Message Batches API's own,
half the standard ones); an unlisted model's cost is "unknown".
"""

from __future__ import annotations

from ctxcompact.accounting.prices import model_price, price_source
from ctxcompact.evaluation.judge.run import JudgePlan


def estimated_cost(plan: JudgePlan, *, model: str, batch: bool = False) -> float | None:
    """USD for the plan's uncached requests; None when the model's price is not known."""
    price = model_price(model, batch=batch)
    if price is None:
        return None
    return (plan.input_tokens * price.input + plan.output_tokens * price.output) / 1_000_000


def cost_line(plan: JudgePlan, *, model: str, batch: bool = False) -> str:
    """``eval --judge: N requests (M cached), ~X input tokens, ≤Y output tokens, estimated cost $Z``."""
    cost = estimated_cost(plan, model=model, batch=batch)
    if cost is None:
        price = f"cost unknown (no price for {model} in {price_source()})"
    else:
        price = f"estimated cost ${cost:,.2f} (list prices of {price_source()})"
    api = " (Message Batches, half price)" if batch and cost is not None else ""
    return (
        f"eval --judge: {plan.requests:,} requests ({plan.cached:,} cached), "
        f"~{plan.input_tokens:,} input tokens, ≤{plan.output_tokens:,} output tokens, {price}{api}"
    )
