"""Plain data classes describing an invoice."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal


@dataclass(frozen=True)
class LineItem:
    """One row on an invoice."""

    sku: str
    description: str
    quantity: int
    unit_price: Decimal
    taxable: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.unit_price, Decimal):
            raise TypeError(
                f"unit_price for {self.sku!r} must be a Decimal, "
                f"got {type(self.unit_price).__name__}"
            )
        if self.quantity < 0:
            raise ValueError(f"quantity for {self.sku!r} must be >= 0, got {self.quantity}")
        if self.unit_price < 0:
            raise ValueError(f"unit_price for {self.sku!r} must be >= 0")


@dataclass
class Invoice:
    """An invoice for a single customer in a single tax region."""

    number: str
    customer: str
    region: str
    items: list[LineItem] = field(default_factory=list)
    discount_pct: Decimal = Decimal("0")

    def __post_init__(self) -> None:
        if not Decimal("0") <= self.discount_pct <= Decimal("100"):
            raise ValueError(f"discount_pct must be between 0 and 100, got {self.discount_pct}")
        self.region = self.region.upper()

    @property
    def taxable_items(self) -> list[LineItem]:
        return [item for item in self.items if item.taxable]

    @property
    def is_empty(self) -> bool:
        return not any(item.quantity for item in self.items)
