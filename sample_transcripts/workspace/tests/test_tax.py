from decimal import Decimal

import pytest

from invoice import UnknownRegionError, compute_tax, rate_for
from invoice.tax import EXEMPT_REGIONS, TAX_RATES


@pytest.mark.parametrize(
    ("region", "expected"),
    [
        ("CA", Decimal("0.0725")),
        ("ca", Decimal("0.0725")),
        ("NY", Decimal("0.04")),
        ("TX", Decimal("0.0625")),
        ("OR", Decimal("0")),
    ],
)
def test_rate_for_known_regions(region, expected):
    assert rate_for(region) == expected


def test_rate_for_unknown_region():
    with pytest.raises(UnknownRegionError) as excinfo:
        rate_for("ZZ")
    assert "ZZ" in str(excinfo.value)
    assert "CA" in str(excinfo.value)


def test_unknown_region_is_a_key_error():
    with pytest.raises(KeyError):
        rate_for("XX")


def test_exempt_regions_have_zero_rate():
    assert EXEMPT_REGIONS == {"OR"}
    assert all(TAX_RATES[r] == 0 for r in EXEMPT_REGIONS)


@pytest.mark.parametrize(
    ("amount", "region", "expected"),
    [
        ("100.00", "CA", "7.25"),
        ("10.00", "NY", "0.40"),
        ("19.99", "TX", "1.25"),
        ("0.00", "CA", "0.00"),
        ("250.00", "OR", "0.00"),
        ("33.33", "WA", "2.17"),
        ("1.00", "WA", "0.07"),
        ("50.00", "CA", "3.63"),
    ],
)
def test_compute_tax(amount, region, expected):
    assert compute_tax(Decimal(amount), region) == Decimal(expected)


def test_compute_tax_result_has_two_places():
    assert compute_tax(Decimal("12.00"), "NY").as_tuple().exponent == -2


def test_compute_tax_rejects_negative_amount():
    with pytest.raises(ValueError, match="amount must be >= 0"):
        compute_tax(Decimal("-1.00"), "CA")


def test_compute_tax_unknown_region():
    with pytest.raises(UnknownRegionError):
        compute_tax(Decimal("10.00"), "ZZ")
