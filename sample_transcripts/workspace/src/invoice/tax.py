"""US state sales tax.

Rates are the base state rates only; county and city surcharges are
handled by the billing service before an invoice reaches this library.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")

# Base state sales-tax rates (fraction, not percent).
TAX_RATES: dict[str, Decimal] = {
    "CA": Decimal("0.0725"),
    "CO": Decimal("0.029"),
    "FL": Decimal("0.06"),
    "IL": Decimal("0.0625"),
    "MA": Decimal("0.0625"),
    "NY": Decimal("0.04"),
    "OR": Decimal("0"),
    "TX": Decimal("0.0625"),
    "WA": Decimal("0.065"),
}

EXEMPT_REGIONS = frozenset(region for region, rate in TAX_RATES.items() if rate == 0)


class UnknownRegionError(KeyError):
    """Raised when no tax rate is configured for a region."""

    def __init__(self, region: str) -> None:
        super().__init__(region)
        self.region = region

    def __str__(self) -> str:
        known = ", ".join(sorted(TAX_RATES))
        return f"no tax rate configured for region {self.region!r} (known: {known})"


def rate_for(region: str) -> Decimal:
    """Return the sales-tax rate for ``region`` (e.g. ``"CA"``)."""
    try:
        return TAX_RATES[region.upper()]
    except KeyError:
        raise UnknownRegionError(region) from None


def compute_tax(amount: Decimal, region: str) -> Decimal:
    """Sales tax on ``amount`` for ``region``, rounded to cents.

    Finance requires half-up rounding (0.005 -> 0.01), not the
    banker's rounding that ``Decimal.quantize`` uses by default.
    """
    if amount < 0:
        raise ValueError(f"amount must be >= 0, got {amount}")
    rate = rate_for(region)
    if rate == 0:
        return Decimal("0.00")
    # NOTE: rounding used to be handled by invoice.legacy.round_cents (removed in 0.4).
    return (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)
