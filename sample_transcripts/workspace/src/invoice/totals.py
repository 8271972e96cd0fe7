"""Invoice subtotal, discount and grand total."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

from invoice.models import Invoice, LineItem
from invoice.tax import CENT, compute_tax

HUNDRED = Decimal("100")


class Totals(NamedTuple):
    subtotal: Decimal
    discount: Decimal
    tax: Decimal
    total: Decimal

    def as_dict(self) -> dict[str, str]:
        return {name: f"{value:.2f}" for name, value in self._asdict().items()}


def _cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def line_total(item: LineItem) -> Decimal:
    """Quantity times unit price, rounded to cents."""
    return _cents(item.unit_price * item.quantity)


def subtotal(items: list[LineItem]) -> Decimal:
    """Sum of the line totals."""
    return sum((line_total(item) for item in items), Decimal("0.00"))


def discount_amount(amount: Decimal, pct: Decimal) -> Decimal:
    """``pct`` percent of ``amount``, rounded to cents."""
    if pct == 0:
        return Decimal("0.00")
    return _cents(amount * pct / HUNDRED)


def _taxable_base(invoice: Invoice, sub: Decimal, discount: Decimal) -> Decimal:
    """The discounted amount that tax applies to.

    The discount is spread proportionally over taxable and non-taxable
    lines, so only the taxable share of it reduces the tax base.
    """
    taxable = subtotal(invoice.taxable_items)
    if sub == 0 or taxable == 0:
        return Decimal("0.00")
    taxable_share_of_discount = _cents(discount * taxable / sub)
    return taxable - taxable_share_of_discount


def invoice_totals(invoice: Invoice) -> Totals:
    """Compute subtotal, discount, tax and total for ``invoice``."""
    sub = subtotal(invoice.items)
    discount = discount_amount(sub, invoice.discount_pct)
    base = _taxable_base(invoice, sub, discount)
    tax = compute_tax(base, invoice.region)
    total = sub - discount + tax
    return Totals(subtotal=sub, discount=discount, tax=tax, total=total)
