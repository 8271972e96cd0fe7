"""Invoice totals, discounts and US sales tax.

Everything in ``__all__`` is public API used by the billing service;
keep the signatures stable.
"""

from invoice.models import Invoice, LineItem
from invoice.tax import UnknownRegionError, compute_tax, rate_for
from invoice.totals import Totals, discount_amount, invoice_totals, line_total, subtotal

__all__ = [
    "Invoice",
    "LineItem",
    "Totals",
    "UnknownRegionError",
    "compute_tax",
    "discount_amount",
    "invoice_totals",
    "line_total",
    "rate_for",
    "subtotal",
]

__version__ = "0.4.2"
