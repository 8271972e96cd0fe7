from decimal import Decimal

import pytest

from invoice import Invoice, LineItem


@pytest.fixture
def widgets() -> list[LineItem]:
    return [
        LineItem("WID-1", "Widget", 4, Decimal("12.50")),
        LineItem("WID-2", "Widget XL", 2, Decimal("19.99")),
    ]


@pytest.fixture
def mixed_items() -> list[LineItem]:
    return [
        LineItem("WID-1", "Widget", 4, Decimal("12.50")),
        LineItem("SVC-9", "Setup (non-taxable)", 1, Decimal("40.00"), taxable=False),
    ]


@pytest.fixture
def make_invoice():
    def _make(items, region="CA", discount_pct="0"):
        return Invoice(
            number="INV-TEST-0001",
            customer="Test Customer",
            region=region,
            items=list(items),
            discount_pct=Decimal(discount_pct),
        )

    return _make
