from decimal import Decimal

import pytest

from invoice import Invoice, LineItem, Totals, discount_amount, invoice_totals, line_total, subtotal


def test_line_total_rounds_to_cents():
    item = LineItem("GUM-3", "Gum", 3, Decimal("0.335"))
    assert line_total(item) == Decimal("1.01")


def test_line_total_zero_quantity():
    assert line_total(LineItem("WID-1", "Widget", 0, Decimal("12.50"))) == Decimal("0.00")


def test_subtotal(widgets):
    assert subtotal(widgets) == Decimal("89.98")


def test_subtotal_empty():
    assert subtotal([]) == Decimal("0.00")


@pytest.mark.parametrize(
    ("amount", "pct", "expected"),
    [
        ("100.00", "0", "0.00"),
        ("100.00", "10", "10.00"),
        ("89.98", "15", "13.50"),
        ("0.10", "5", "0.01"),
    ],
)
def test_discount_amount(amount, pct, expected):
    assert discount_amount(Decimal(amount), Decimal(pct)) == Decimal(expected)


def test_float_unit_price_rejected():
    with pytest.raises(TypeError, match="must be a Decimal"):
        LineItem("WID-1", "Widget", 1, 12.5)


def test_invalid_discount_rejected():
    with pytest.raises(ValueError, match="discount_pct"):
        Invoice("INV-1", "Acme", "CA", [], Decimal("120"))


def test_totals_ny(make_invoice, widgets):
    totals = invoice_totals(make_invoice(widgets, region="NY"))
    assert totals == Totals(
        subtotal=Decimal("89.98"),
        discount=Decimal("0.00"),
        tax=Decimal("3.60"),
        total=Decimal("93.58"),
    )


def test_totals_with_discount(make_invoice, widgets):
    totals = invoice_totals(make_invoice(widgets, region="TX", discount_pct="15"))
    assert totals.discount == Decimal("13.50")
    assert totals.tax == Decimal("4.78")
    assert totals.total == Decimal("81.26")


def test_non_taxable_lines_are_not_taxed(make_invoice, mixed_items):
    totals = invoice_totals(make_invoice(mixed_items, region="NY"))
    assert totals.subtotal == Decimal("90.00")
    assert totals.tax == Decimal("2.00")


def test_readme_example(make_invoice, mixed_items):
    totals = invoice_totals(make_invoice(mixed_items, region="CA", discount_pct="10"))
    assert totals.as_dict() == {
        "subtotal": "90.00",
        "discount": "9.00",
        "tax": "3.26",
        "total": "84.26",
    }


def test_ca_half_cent_rounds_up(make_invoice):
    # 50.00 * 7.25% = 3.625 -> finance expects 3.63 (half-up), not 3.62
    items = [LineItem("WID-1", "Widget", 4, Decimal("12.50"))]
    totals = invoice_totals(make_invoice(items, region="CA"))
    assert totals.tax == Decimal("3.63")
    assert totals.total == Decimal("53.63")


def test_empty_invoice(make_invoice):
    totals = invoice_totals(make_invoice([], region="CA", discount_pct="10"))
    assert totals == Totals(*(Decimal("0.00"),) * 4)


def test_exempt_region_with_discount(make_invoice, widgets):
    totals = invoice_totals(make_invoice(widgets, region="OR", discount_pct="10"))
    assert totals.discount == Decimal("9.00")
    assert totals.tax == Decimal("0.00")
    assert totals.total == Decimal("80.98")


def test_wa_half_cent_rounds_up(make_invoice):
    # 21.00 * 6.5% = 1.365 -> 1.37 with half-up
    items = [LineItem("BOLT-7", "Bolt pack", 3, Decimal("7.00"))]
    totals = invoice_totals(make_invoice(items, region="WA"))
    assert totals.tax == Decimal("1.37")
    assert totals.total == Decimal("22.37")
