"""``ctxcompact models``: every model whose context window ctxcompact knows, with its price.

The windows are :data:`ctxcompact.accounting.windows.BUILTIN_CONTEXT_WINDOWS` and the user's
models file (which wins); the prices are :mod:`ctxcompact.accounting.prices`' (``genai-prices``).
A family key such as ``claude`` has a window but no single price.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ctxcompact.accounting.prices import ModelPrice, model_price
from ctxcompact.accounting.windows import BUILTIN_CONTEXT_WINDOWS, normalize_model_id


@dataclass(frozen=True, slots=True)
class KnownModel:
    """A model id (or id prefix), its window and where that came from, and its price."""

    model: str
    context_window: int
    window_source: str
    price: ModelPrice | None


def known_models(
    registry: Mapping[str, int] | None = None, *, models_file: str | os.PathLike[str] | None = None
) -> list[KnownModel]:
    """The built-in windows and the user's, sorted by id; ``models_file`` names the user's
    source (else ``--models-file``)."""
    user = {normalize_model_id(k): v for k, v in (registry or {}).items()}
    rows = [
        KnownModel(key, window, "built-in", model_price(key))
        for key, window in BUILTIN_CONTEXT_WINDOWS.items()
        if key not in user
    ]
    source = str(models_file) if models_file is not None else "--models-file"
    rows += [KnownModel(key, window, source, model_price(key)) for key, window in user.items()]
    return sorted(rows, key=lambda r: r.model)
